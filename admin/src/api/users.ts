import { unwrap } from './answers'
import { type Api, changed, dataProviderOf, paging, text, totalOf } from './resource'
import type { components, operations } from './schema'

export type User = components['schemas']['User']
export type Role = User['role']
type UserChange = operations['updateUser']['requestBody']['content']['application/json']

export const ROLES = ['customer', 'admin'] as const satisfies readonly Role[]

const isRole = (value: unknown): value is Role => ROLES.some((role) => role === value)

const fields = ['name', 'email', 'password', 'role'] as const

/** Users: every account by id, 25 a page (the API counts them: X-Total-Count); an admin unless said otherwise. */
export function usersProvider(api: Api) {
  return dataProviderOf<User>('users', {
    async list(params) {
      const result = await api.GET('/auth/users', { params: { query: paging(params) } })
      return { data: unwrap(result), total: totalOf(result.response) }
    },
    one: async (id) => unwrap(await api.GET('/auth/users/{id}', { params: { path: { id } } })),
    async create(data) {
      const body = { name: text(data.name), email: text(data.email), password: text(data.password), role: isRole(data.role) ? data.role : 'admin' }
      return unwrap(await api.POST('/auth/users', { body }), fields)
    },
    async update(id, data, previous) {
      // Only what changed: an admin may not send their own role, even unchanged.
      const body: UserChange = {}
      for (const field of changed(['name', 'email', 'role'], data, previous)) {
        if (field === 'role') {
          if (isRole(data.role)) body.role = data.role
        } else body[field] = text(data[field])
      }
      if (Object.keys(body).length === 0) return unwrap(await api.GET('/auth/users/{id}', { params: { path: { id } } }))
      return unwrap(await api.PATCH('/auth/users/{id}', { params: { path: { id } }, body }), fields)
    },
    async remove(id) {
      unwrap(await api.DELETE('/auth/users/{id}', { params: { path: { id } } }))
    },
  })
}
