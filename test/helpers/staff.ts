import type { FastifyInstance } from 'fastify'
import type { Permission, StaffRole } from '../../src/modules/staff/permissions.js'
import { startSession } from '../../src/modules/sessions/sessions.service.js'
import { makeUser, type TestUser } from './factories.js'

/** An admin of `staffRole`, made as makeUser makes one, its staff role set before it ever calls. */
export async function makeStaff(app: FastifyInstance, staffRole: StaffRole, name = `Staff ${staffRole}`): Promise<TestUser> {
  const user = await makeUser(app, 'admin', name)
  await app.db.updateTable('users').set({ staff_role: staffRole }).where('id', '=', user.id).execute()
  return user
}

/** A fresh session's access token for the user, as a log-in would give (ending it ends no other token). */
export async function sessionToken(app: FastifyInstance, user: { id: number }): Promise<string> {
  const row = await app.db.selectFrom('users').select(['role', 'credentials_changed_at']).where('id', '=', user.id).executeTakeFirstOrThrow()
  const { sessionId } = await startSession(app.db, user.id, row.credentials_changed_at, 60_000)
  return app.signToken({ id: user.id, role: row.role }, sessionId)
}

/**
 * What each staff role may do, in the table's order, as docs/staff.md writes it: written out here, apart from
 * src/modules/staff/permissions.ts on purpose, so a change to the source's table fails the tests that read this one.
 */
export const DOCUMENTED_GRANTS: Record<StaffRole, Permission[]> = {
  owner: [
    'catalog:read',
    'catalog:write',
    'orders:read',
    'orders:write',
    'fulfillments:write',
    'refunds:write',
    'returns:write',
    'customers:read',
    'customers:write',
    'discounts:write',
    'settings:write',
    'audit:read',
    'staff:manage',
  ],
  manager: [
    'catalog:read',
    'catalog:write',
    'orders:read',
    'orders:write',
    'fulfillments:write',
    'refunds:write',
    'returns:write',
    'customers:read',
    'customers:write',
    'discounts:write',
    'settings:write',
    'audit:read',
  ],
  catalog: ['catalog:read', 'catalog:write'],
  fulfillment: ['catalog:read', 'orders:read', 'fulfillments:write', 'returns:write'],
  support: ['catalog:read', 'orders:read', 'orders:write', 'returns:write', 'customers:read', 'customers:write'],
}
