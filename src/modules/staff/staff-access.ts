import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { AppError } from '../../shared/errors.js'
import { firstMissing, type Permission, type StaffRole } from './permissions.js'

/**
 * 403 naming the first of `needed` (table order) the staff role lacks. For the permissions a route cannot declare in
 * its config because they depend on the request: an order's state (cancelling a paid one), a body's choice (a
 * receipt that refunds), or the caller being staff on a route customers use too.
 */
export function assertPermissions(staffRole: StaffRole | null, needed: readonly Permission[]): void {
  const missing = firstMissing(staffRole, needed)
  if (missing !== undefined) throw new AppError(403, 'requiresPermission', missing)
}

/**
 * onRequest hooks, after the route's authentication, for routes open to customers and staff alike (an order, its
 * returns): an admin acting on them as staff also needs `needed`; a customer, or a guest's order link, needs nothing more.
 */
export function whenStaff(...needed: Permission[]): onRequestHookHandler[] {
  const check = async (request: FastifyRequest): Promise<void> => {
    if (request.orderToken === undefined && request.user?.role === 'admin') assertPermissions(request.user.staffRole, needed)
  }
  return [check]
}
