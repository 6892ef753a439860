import type { Kysely } from 'kysely'
import type { AuditLogRow, Database } from '../../db/database.js'
import { uuidFloor } from './audit-log.js'

export interface AuditLogFilter {
  entityType?: string | undefined
  entityId?: string | undefined
  actorType?: 'user' | 'api_key' | 'system' | undefined
  actorId?: string | undefined
  action?: string | undefined
  /** ISO 8601 UTC with milliseconds, inclusive. */
  from?: string | undefined
  /** ISO 8601 UTC with milliseconds, exclusive. */
  to?: string | undefined
}

function filtered(db: Kysely<Database>, filter: AuditLogFilter) {
  let query = db.selectFrom('audit_log')
  if (filter.entityType !== undefined) query = query.where('entity_type', '=', filter.entityType)
  if (filter.entityId !== undefined) query = query.where('entity_id', '=', filter.entityId)
  if (filter.actorType !== undefined) query = query.where('actor_type', '=', filter.actorType)
  if (filter.actorId !== undefined) query = query.where('actor_id', '=', filter.actorId)
  if (filter.action !== undefined) query = query.where('action', '=', filter.action)
  // A time filter also bounds the id, so that the primary key finds the range: an entry's id carries its time's
  // millisecond (one written before that rule carries a millisecond at most a second later).
  if (filter.from !== undefined) query = query.where('at', '>=', filter.from).where('id', '>=', uuidFloor(Date.parse(filter.from)))
  if (filter.to !== undefined) query = query.where('at', '<', filter.to).where('id', '<', uuidFloor(Date.parse(filter.to) + 1000))
  return query
}

/** One page of entries, newest first (a UUIDv7 sorts by its time), and how many match. */
export async function listAuditEntries(
  db: Kysely<Database>,
  filter: AuditLogFilter,
  page: { limit: number; offset: number },
): Promise<{ rows: AuditLogRow[]; total: number }> {
  const rows = await filtered(db, filter).selectAll().orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute()
  // A first page that is not full already says how many match.
  if (page.offset === 0 && rows.length < page.limit) return { rows, total: rows.length }
  const counted = await filtered(db, filter)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow()
  return { rows, total: Number(counted.n) }
}

/**
 * Deletes the entries made before `before` (Unix ms), by their ids (which carry the time, at or after `at`): the
 * retention job, the one path that deletes entries.
 */
export async function deleteAuditEntriesBefore(db: Kysely<Database>, before: number): Promise<number> {
  const result = await db.deleteFrom('audit_log').where('id', '<', uuidFloor(before)).executeTakeFirst()
  return Number(result.numDeletedRows)
}
