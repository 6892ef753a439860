import type { StaffRole } from '../../db/database.js'

export type { StaffRole }

/** The staff roles, most powerful first. */
export const STAFF_ROLES = ['owner', 'manager', 'catalog', 'fulfillment', 'support'] as const satisfies readonly StaffRole[]

/** The roles an API key may have: every one but owner. */
export const API_KEY_ROLES = ['manager', 'catalog', 'fulfillment', 'support'] as const satisfies readonly StaffRole[]

/**
 * The permissions, in the table's order: when a route needs several, the first missing one in this order is the one
 * a 403 names.
 */
export const PERMISSIONS = [
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
] as const

export type Permission = (typeof PERMISSIONS)[number]

/** What each staff role may do. An owner may do everything. */
const GRANTS: Record<StaffRole, readonly Permission[]> = {
  owner: PERMISSIONS,
  manager: PERMISSIONS.filter((permission) => permission !== 'staff:manage'),
  catalog: ['catalog:read', 'catalog:write'],
  fulfillment: ['catalog:read', 'orders:read', 'fulfillments:write', 'returns:write'],
  support: ['catalog:read', 'orders:read', 'orders:write', 'returns:write', 'customers:read', 'customers:write'],
}

const GRANT_SETS = new Map<StaffRole, ReadonlySet<Permission>>(STAFF_ROLES.map((role) => [role, new Set(GRANTS[role])]))

/** The permissions of a staff role, in the table's order; none without one (a customer). */
export function permissionsOf(staffRole: StaffRole | null | undefined): Permission[] {
  if (!staffRole) return []
  const granted = GRANT_SETS.get(staffRole)
  return PERMISSIONS.filter((permission) => granted?.has(permission))
}

/** Whether the staff role has the permission. */
export function hasPermission(staffRole: StaffRole | null | undefined, permission: Permission): boolean {
  return staffRole ? (GRANT_SETS.get(staffRole)?.has(permission) ?? false) : false
}

/** The first of `needed`, in the table's order, that the staff role lacks; undefined when it has them all. */
export function firstMissing(staffRole: StaffRole | null | undefined, needed: readonly Permission[]): Permission | undefined {
  return PERMISSIONS.find((permission) => needed.includes(permission) && !hasPermission(staffRole, permission))
}
