import { AppError } from '../../shared/errors.js'
import { firstMissing, type Permission, type StaffRole } from './permissions.js'

/**
 * 403 naming the first of `needed` (table order) the staff role lacks. For the permissions a route cannot declare in
 * its config because they depend on the request: an order's state (cancelling a paid one) or a body's choice (a
 * receipt that refunds). Routes customers use too take `app.ownOrStaff` and `app.orderOwnOrStaff` (the auth plugin).
 */
export function assertPermissions(staffRole: StaffRole | null, needed: readonly Permission[]): void {
  const missing = firstMissing(staffRole, needed)
  if (missing !== undefined) throw new AppError(403, 'requiresPermission', missing)
}
