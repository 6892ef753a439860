import { unwrap } from './answers'
import { instantOf } from './discountCodes'
import { type Api, dataProviderOf, paging, text, totalOf } from './resource'
import type { components } from './schema'

/** An API key as lists show it: never its secret. */
export type ApiKey = components['schemas']['ApiKey']
/** The answer of a creation or a rotation: the key and its secret, shown only then. */
export type ApiKeyWithSecret = components['schemas']['ApiKeyWithSecret']
export type ApiKeyRole = ApiKey['staffRole']

/** The roles a key may have (never owner), in the order the form offers them. */
export const API_KEY_ROLES = ['manager', 'catalog', 'fulfillment', 'support'] as const satisfies readonly ApiKeyRole[]

const isRole = (value: unknown): value is ApiKeyRole => API_KEY_ROLES.some((role) => role === value)

const fields = ['name', 'staffRole', 'expiresAt'] as const
/** The most keys the API lists at once: enough to find one by id (a shop has few). */
const ALL = 1000

/** API keys: newest first, 25 a page (X-Total-Count); made, rotated and revoked, never changed otherwise. */
export function apiKeysProvider(api: Api) {
  return dataProviderOf<ApiKey | ApiKeyWithSecret>('api-keys', {
    async list(params) {
      const result = await api.GET('/api-keys', { params: { query: paging(params) } })
      return { data: unwrap(result), total: totalOf(result.response) }
    },
    // The API has no route for one key: it is found in the list.
    async one(id) {
      const key = unwrap(await api.GET('/api-keys', { params: { query: { limit: ALL, offset: 0 } } })).find((candidate) => candidate.id === id)
      if (!key) throw new Error(`No API key ${id}`)
      return key
    },
    async create(data) {
      const expiresAt = instantOf(data.expiresAt)
      const body = { name: text(data.name), staffRole: isRole(data.staffRole) ? data.staffRole : 'support', ...(expiresAt ? { expiresAt } : {}) }
      return unwrap(await api.POST('/api-keys', { body }), fields)
    },
    async remove(id) {
      unwrap(await api.DELETE('/api-keys/{id}', { params: { path: { id } } }))
    },
  })
}

/** A new secret for the key; the old one stops at once. */
export async function rotateApiKey(api: Api, id: number): Promise<ApiKeyWithSecret> {
  return unwrap(await api.POST('/api-keys/{id}/rotate', { params: { path: { id } } }))
}
