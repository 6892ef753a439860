import { unwrap } from './answers'
import { type Api, dataProviderOf, filtersOf, idValue, paging, text, totalOf } from './resource'
import type { components } from './schema'

export type AuditEntry = components['schemas']['AuditLogEntry']
type ActorType = AuditEntry['actor']['type']

/** Who can make a change, in the API's words (checked against its type). */
export const ACTOR_TYPES = ['user', 'api_key', 'system'] as const satisfies readonly ActorType[]

function isActorType(value: unknown): value is ActorType {
  return ACTOR_TYPES.some((type) => type === value)
}

/** A date input's value (`YYYY-MM-DD`) as the start of that day, UTC; undefined when empty. */
function dayStart(value: unknown): string | undefined {
  const day = text(value)
  return /^\d{4}-\d{2}-\d{2}$/.test(day) ? `${day}T00:00:00.000Z` : undefined
}

/** The day after a date input's value: `to` is exclusive, so "until the 3rd" takes the whole 3rd. */
function dayAfter(value: unknown): string | undefined {
  const start = dayStart(value)
  return start === undefined ? undefined : new Date(Date.parse(start) + 86_400_000).toISOString()
}

/** The audit log: read only, newest first, by resource, action, actor and dates. Its ids are UUIDs, never opened alone. */
export function auditLogProvider(api: Api) {
  return dataProviderOf<AuditEntry>('audit-log', {
    async list(params) {
      const { limit, offset } = paging(params)
      const filter = filtersOf(params)
      const entityType = text(filter.entityType).trim()
      const entityId = text(filter.entityId).trim()
      const action = text(filter.action).trim()
      const actorId = idValue(filter.actorId)
      const from = dayStart(filter.from)
      const to = dayAfter(filter.to)
      const query = {
        limit,
        offset,
        ...(entityType ? { entityType } : {}),
        ...(entityId ? { entityId } : {}),
        ...(action ? { action } : {}),
        ...(isActorType(filter.actorType) ? { actorType: filter.actorType } : {}),
        ...(actorId !== undefined ? { actorId } : {}),
        ...(from ? { from } : {}),
        ...(to ? { to } : {}),
      }
      const result = await api.GET('/audit-log', { params: { query } })
      return { data: unwrap(result), total: totalOf(result.response) }
    },
    one: () => Promise.reject(new Error('An audit entry is shown in its list')),
  })
}
