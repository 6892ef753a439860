import { unwrap } from './answers'
import { type Api, dataProviderOf, paging, text, totalOf } from './resource'
import type { components } from './schema'

export type StaffMember = components['schemas']['User']
export type StaffRole = NonNullable<StaffMember['staffRole']>

export const STAFF_ROLES = ['owner', 'manager', 'catalog', 'fulfillment', 'support'] as const satisfies readonly StaffRole[]

const isStaffRole = (value: unknown): value is StaffRole => STAFF_ROLES.some((role) => role === value)

const fields = ['name', 'email', 'password', 'staffRole'] as const

/** The staff page (owners: `staff:manage`): the admins and their staff roles, through the users' routes. */
export function staffProvider(api: Api) {
  return dataProviderOf<StaffMember>('staff', {
    async list(params) {
      const result = await api.GET('/auth/users', { params: { query: { ...paging(params), role: 'admin' } } })
      return { data: unwrap(result), total: totalOf(result.response) }
    },
    one: async (id) => unwrap(await api.GET('/auth/users/{id}', { params: { path: { id } } })),
    async create(data) {
      const body = {
        name: text(data.name),
        email: text(data.email),
        password: text(data.password),
        role: 'admin' as const,
        ...(isStaffRole(data.staffRole) ? { staffRole: data.staffRole } : {}),
      }
      return unwrap(await api.POST('/auth/users', { body }), fields)
    },
    async update(id, data, previous) {
      // Only the staff role is changed here; unchanged, nothing is sent (one's own, even unchanged, is not offered).
      if (!isStaffRole(data.staffRole) || data.staffRole === previous.staffRole) {
        return unwrap(await api.GET('/auth/users/{id}', { params: { path: { id } } }))
      }
      return unwrap(await api.PATCH('/auth/users/{id}', { params: { path: { id } }, body: { staffRole: data.staffRole } }), fields)
    },
    async remove(id) {
      unwrap(await api.DELETE('/auth/users/{id}', { params: { path: { id } } }))
    },
  })
}
