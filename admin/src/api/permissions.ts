import { usePermissions } from 'react-admin'
import type { components } from './schema'

/** A staff permission, as GET /auth/me lists them (docs/staff.md). */
export type Permission = components['schemas']['Me']['permissions'][number]

/**
 * Whether the signed-in admin's staff role has a permission (authProvider.getPermissions: GET /auth/me). While
 * they load, nothing is permitted: a button appears once known rather than vanishing after a click.
 */
export function useCan(): (permission: Permission) => boolean {
  const { permissions } = usePermissions<Permission[]>()
  return (permission) => Array.isArray(permissions) && permissions.includes(permission)
}
