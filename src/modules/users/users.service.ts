import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Database, StaffRole, UserRow, UserUpdate } from '../../db/database.js'
import { isUniqueViolation } from '../../shared/db-errors.js'
import { AppError } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import { hashPassword, verifyPassword } from './passwords.js'
import { carrySession, credentialsChangeAfter, endResetLinks, endUserSessions } from '../sessions/sessions.service.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'
import * as repo from './users.repository.js'
import { hasPermission, type Permission, permissionsOf } from '../staff/permissions.js'
import { assertPermissions } from '../staff/staff-access.js'
import type { CreateUserInput, RegisterInput, UpdateAccountInput, UpdateUserInput, User } from './users.schemas.js'

type Db = Kysely<Database>

export function userRowToUser(row: UserRow): User {
  return { id: row.id, name: row.name, email: row.email, role: row.role, staffRole: row.role === 'admin' ? row.staff_role : null, createdAt: row.created_at }
}

/** The staff member acting on users (an admin of the user routes). */
export interface UserActor {
  id: number
  staffRole: StaffRole | null
  /** Set when the caller is an API key: its id is then the key's, never a user's. */
  apiKey?: { id: number; name: string }
}

/** Acting on an admin (one that is, or one that becomes) is `staff:manage`; on a customer, `customers:write`. */
export function userPermission(admin: boolean): Permission {
  return admin ? 'staff:manage' : 'customers:write'
}

/**
 * Before the user is read (a 403 comes before a 404): an actor who may act on neither customers nor admins is
 * refused at once, naming the first of the two in the table's order.
 */
export function assertActsOnUsers(actor: UserActor): void {
  if (hasPermission(actor.staffRole, 'customers:write') || hasPermission(actor.staffRole, 'staff:manage')) return
  // Neither: the first of the two in the table's order.
  throw new AppError(403, 'requiresPermission', 'customers:write')
}

/** 409 when `id` is the only owner left (the owners' rows locked: see lockOwners). */
async function keepAnOwner(trx: Db, id: number): Promise<void> {
  const owners = await repo.lockOwners(trx)
  if (owners.length === 1 && owners[0] === id) throw new AppError(409, 'lastOwner')
}

/** E-mails are trimmed and compared case-insensitively: the stored form is lower case. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

/** The user with this e-mail, already normalized (normalizeEmail), for the sessions module's password reset. */
export function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return repo.findUserByEmail(db, email)
}

/** A user made by an admin (`audit`: recorded), by registration or by the operator's ADMIN_* (null: not recorded). An admin's staff role is `owner` unless given; a customer never has one. */
export async function createUser(db: Db, input: CreateUserInput, audit: AuditSource | null): Promise<User> {
  const email = normalizeEmail(input.email)
  if (await repo.findUserByEmail(db, email)) throw new AppError(409, 'emailTaken')
  const passwordHash = await hashPassword(input.password)
  const now = nowIso()
  try {
    return await db.transaction().execute(async (trx) => {
      const row = await repo.insertUser(trx, {
        name: input.name.trim(),
        email,
        password_hash: passwordHash,
        role: input.role,
        // An admin without one is an owner, a customer never has one (the repository's rule).
        staff_role: input.staffRole,
        created_at: now,
        updated_at: now,
        credentials_changed_at: now,
      })
      const user = userRowToUser(row)
      await recordAudit(trx, { by: audit, action: 'user.create', entityType: 'user', entityId: user.id, before: null, after: user })
      return user
    })
  } catch (error) {
    // Two registrations of one e-mail racing past the check above.
    if (isUniqueViolation(error)) throw new AppError(409, 'emailTaken')
    throw error
  }
}

/** Registration always makes a customer, whatever the body said. */
export function registerCustomer(db: Db, input: RegisterInput): Promise<User> {
  return createUser(db, { name: input.name, email: input.email, password: input.password, role: 'customer' }, null)
}

/** The user whose credentials these are, and their credentials' version (the session started with them lives under it). */
export async function authenticateCredentials(db: Db, email: string, password: string): Promise<{ user: User; credentialsChangedAt: string }> {
  const row = await repo.findUserByEmail(db, normalizeEmail(email))
  const valid = await verifyPassword(row?.password_hash, password)
  if (!row || !valid) throw new AppError(401, 'badCredentials')
  return { user: userRowToUser(row), credentialsChangedAt: row.credentials_changed_at }
}

/**
 * The caller changes their own account (PATCH /auth/me). A new e-mail or password needs the current
 * password (401 first, then a taken e-mail is 409). A new password ends every other session of the user;
 * the caller's own session carries on under the new credentials. A new password or e-mail also ends every
 * reset link still pending (one sent to the old address must not outlive the change).
 */
export async function updateOwnAccount(db: Db, caller: { id: number; sessionId: number | undefined }, input: UpdateAccountInput): Promise<User> {
  const current = await repo.findUserById(db, caller.id)
  // Deleted between the auth check and here.
  if (!current) throw new AppError(401, 'invalidToken')
  const email = input.email === undefined ? undefined : normalizeEmail(input.email)
  const newEmail = email !== undefined && email !== current.email
  if (input.password !== undefined || newEmail) {
    const given = input.currentPassword
    if (given === undefined || given === '' || !(await verifyPassword(current.password_hash, given))) throw new AppError(401, 'badCredentials')
  }
  if (newEmail) {
    const owner = await repo.findUserByEmail(db, email)
    if (owner && owner.id !== current.id) throw new AppError(409, 'emailTaken')
  }
  const passwordHash = input.password === undefined ? undefined : await hashPassword(input.password)
  const now = nowIso()
  const changes: UserUpdate = { updated_at: now }
  if (input.name !== undefined) changes.name = input.name.trim()
  if (newEmail) changes.email = email
  if (passwordHash !== undefined) changes.password_hash = passwordHash
  const credentialsAt = credentialsChangeAfter(now)
  if (passwordHash !== undefined) changes.credentials_changed_at = credentialsAt
  try {
    const row = await db.transaction().execute(async (trx) => {
      const updated = await repo.updateUserById(trx, current.id, changes)
      if (!updated) throw new AppError(401, 'invalidToken')
      if (passwordHash !== undefined) {
        await endUserSessions(trx, current.id, 'password', now, caller.sessionId)
        if (caller.sessionId !== undefined) await carrySession(trx, caller.sessionId, credentialsAt)
      }
      if (passwordHash !== undefined || newEmail) await endResetLinks(trx, current.id, now)
      return updated
    })
    return userRowToUser(row)
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'emailTaken')
    throw error
  }
}

export async function getUser(db: Db, id: number): Promise<User> {
  const row = await repo.findUserById(db, id)
  if (!row) throw new AppError(404, 'userNotFound')
  return userRowToUser(row)
}

/** The caller, with what their staff role permits (GET /auth/me). */
export async function getMe(db: Db, id: number): Promise<User & { permissions: Permission[] }> {
  const user = await getUser(db, id)
  return { ...user, permissions: permissionsOf(user.staffRole) }
}

/** A page of users by id (of one role when given), and how many there are in all. */
export async function listUsers(
  db: Db,
  page: { limit: number; offset: number; role?: 'customer' | 'admin' | undefined },
): Promise<{ users: User[]; total: number }> {
  const [rows, total] = await Promise.all([repo.listUsers(db, page), repo.countUsers(db, page.role)])
  return { users: rows.map(userRowToUser), total }
}

/**
 * An admin changes a user: an admin (one that is or becomes one, or a body naming a staff role) with
 * `staff:manage`, a customer with `customers:write`. Nobody changes their own role or staff role; the last owner stays one (409).
 */
export async function updateUser(db: Db, actor: UserActor, id: number, input: UpdateUserInput, audit: AuditSource): Promise<User> {
  assertActsOnUsers(actor)
  const current = await repo.findUserById(db, id)
  if (!current) throw new AppError(404, 'userNotFound')
  const role = input.role ?? current.role
  assertPermissions(actor.staffRole, [userPermission(current.role === 'admin' || role === 'admin' || input.staffRole !== undefined)])
  // An admin without a staff role given keeps theirs (one made an admin becomes an owner); a customer has none.
  const staffRole: StaffRole | null = role === 'admin' ? (input.staffRole ?? (current.role === 'admin' ? current.staff_role : null) ?? 'owner') : null
  const currentStaffRole = current.role === 'admin' ? current.staff_role : null
  const ownRoleChange = (input.role !== undefined && input.role !== current.role) || (input.staffRole !== undefined && staffRole !== currentStaffRole)
  // A key is never the user it changes (its id is the key's).
  if (id === actor.id && actor.apiKey === undefined && ownRoleChange) throw new AppError(403, 'ownRole')
  const now = nowIso()
  const changes: UserUpdate = { updated_at: now }
  if (input.name !== undefined) changes.name = input.name.trim()
  if (input.email !== undefined) {
    const email = normalizeEmail(input.email)
    const owner = await repo.findUserByEmail(db, email)
    if (owner && owner.id !== id) throw new AppError(409, 'emailTaken')
    changes.email = email
  }
  if (input.password !== undefined) changes.password_hash = await hashPassword(input.password)
  if (input.role !== undefined) changes.role = input.role
  if (staffRole !== currentStaffRole) changes.staff_role = staffRole
  // Tokens issued before a role, staff role or password change stop working. Tokens carry milliseconds: one
  // issued in the same millisecond as the change cannot be told from one issued just after it, so the change
  // counts from the next millisecond and both are ended (a new log-in a millisecond later is valid).
  if (input.password !== undefined || role !== current.role || staffRole !== currentStaffRole) {
    changes.credentials_changed_at = new Date(Date.parse(now) + 1).toISOString()
  }
  try {
    return await db.transaction().execute(async (trx) => {
      if (currentStaffRole === 'owner' && staffRole !== 'owner') await keepAnOwner(trx, id)
      const before = await repo.findUserById(trx, id)
      const updated = await repo.updateUserById(trx, id, changes)
      if (!before || !updated) throw new AppError(404, 'userNotFound')
      // A password set by an admin: a reset link still pending must not undo it.
      if (input.password !== undefined) await endResetLinks(trx, id, now)
      const user = userRowToUser(updated)
      // A role change is recorded as what it is: who may do what changed.
      const action =
        input.role !== undefined && input.role !== before.role
          ? 'user.role_change'
          : input.staffRole !== undefined && updated.staff_role !== before.staff_role
            ? 'user.role_change'
            : 'user.update'
      await recordAudit(trx, { by: audit, action, entityType: 'user', entityId: id, before: userRowToUser(before), after: user })
      return user
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'emailTaken')
    throw error
  }
}

/** An admin deletes a user: an admin with `staff:manage`, a customer with `customers:write`; never the last owner (409). */
export async function deleteUser(db: Db, actor: UserActor, id: number, audit: AuditSource): Promise<void> {
  assertActsOnUsers(actor)
  const current = await repo.findUserById(db, id)
  if (!current) throw new AppError(404, 'userNotFound')
  assertPermissions(actor.staffRole, [userPermission(current.role === 'admin')])
  if (id === actor.id && actor.apiKey === undefined) throw new AppError(409, 'ownAccount')
  await db.transaction().execute(async (trx) => {
    if (current.role === 'admin' && current.staff_role === 'owner') await keepAnOwner(trx, id)
    const before = await repo.findUserById(trx, id)
    if (!before || !(await repo.deleteUserById(trx, id))) throw new AppError(404, 'userNotFound')
    await recordAudit(trx, { by: audit, action: 'user.delete', entityType: 'user', entityId: id, before: userRowToUser(before), after: null })
  })
}

/**
 * Creates the admin named by the operator (environment or CLI) unless a user already has that
 * e-mail. Returns whether a user was created. With `log` (the service's start-up), says which
 * happened: an operator who changes ADMIN_PASSWORD later must learn that it changed nothing.
 * The password is never logged.
 */
export async function ensureAdmin(
  db: Db,
  admin: { email: string; password: string; name: string; staffRole?: StaffRole },
  log?: Pick<FastifyBaseLogger, 'info'>,
): Promise<boolean> {
  const email = normalizeEmail(admin.email)
  const created = await createAdmin(db, admin)
  if (created) log?.info({ email }, `Admin ${email} created from ADMIN_EMAIL`)
  else log?.info({ email }, `A user with e-mail ${email} already exists; ADMIN_* changed nothing (its password stays as it was)`)
  return created
}

/** An owner unless `staffRole` says otherwise. */
async function createAdmin(db: Db, admin: { email: string; password: string; name: string; staffRole?: StaffRole }): Promise<boolean> {
  if (await repo.findUserByEmail(db, normalizeEmail(admin.email))) return false
  try {
    await createUser(db, { ...admin, role: 'admin' }, null)
    return true
  } catch (error) {
    // Another instance created it at the same moment.
    if (error instanceof AppError && error.statusCode === 409) return false
    throw error
  }
}
