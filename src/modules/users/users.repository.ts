import { type Kysely } from 'kysely'
import type { Database, NewUserRow, UserRow, UserUpdate } from '../../db/database.js'
import { isPostgres } from '../../db/dialect.js'

type Db = Kysely<Database>

export async function findUserAuthState(db: Db, id: number) {
  return db.selectFrom('users').select(['id', 'credentials_changed_at', 'staff_role']).where('id', '=', id).executeTakeFirst()
}

export async function findUserById(db: Db, id: number): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst()
}

/** A new user; an admin without a staff role is an owner, a customer never has one. */
export async function insertUser(db: Db, user: NewUserRow): Promise<UserRow> {
  const staffRole = user.role === 'admin' ? (user.staff_role ?? 'owner') : null
  return db
    .insertInto('users')
    .values({ ...user, staff_role: staffRole })
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** Changes a user; the staff role as the service decided it (users.service.ts: updateUser). */
export async function updateUserById(db: Db, id: number, changes: UserUpdate): Promise<UserRow | undefined> {
  return db.updateTable('users').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
}

export async function deleteUserById(db: Db, id: number): Promise<boolean> {
  const result = await db.deleteFrom('users').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function listUsers(db: Db, page: { limit: number; offset: number; role?: 'customer' | 'admin' | undefined }): Promise<UserRow[]> {
  return db
    .selectFrom('users')
    .selectAll()
    .$if(page.role !== undefined, (qb) => qb.where('role', '=', page.role!))
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .execute()
}

/** How many users there are, of `role` when given (X-Total-Count of the list). */
export async function countUsers(db: Db, role?: 'customer' | 'admin'): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .$if(role !== undefined, (qb) => qb.where('role', '=', role!))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/**
 * The owners' ids, their rows locked (PostgreSQL; SQLite runs one transaction at a time) until the transaction
 * ends: two owners demoting or deleting each other at once are taken one after the other, and the second sees the
 * first's change (a locked row that stopped matching is skipped once its lock is released).
 */
export async function lockOwners(trx: Db): Promise<number[]> {
  const rows = await trx
    .selectFrom('users')
    .select('id')
    .where('role', '=', 'admin')
    .where('staff_role', '=', 'owner')
    .orderBy('id')
    .$if(isPostgres(trx), (qb) => qb.forUpdate())
    .execute()
  return rows.map((row) => row.id)
}
