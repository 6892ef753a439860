import type { Kysely } from 'kysely'
import type { AuditLogRow, Database } from '../../db/database.js'
import { deleteAuditEntriesBefore, listAuditEntries } from './audit-log.repository.js'
import type { AuditLogEntry, ListAuditLogQuery } from './audit-log.schemas.js'

/** An entry as the API shows it. */
export function auditRowToEntry(row: AuditLogRow): AuditLogEntry {
  return {
    id: row.id,
    at: row.at,
    actor: { type: row.actor_type, id: row.actor_id === null ? null : Number(row.actor_id), name: row.actor_name },
    action: row.action,
    entityType: row.entity_type,
    entityId: row.entity_id,
    before: row.before === null ? null : JSON.parse(row.before),
    after: row.after === null ? null : JSON.parse(row.after),
    requestId: row.request_id,
    ip: row.ip,
    userAgent: row.user_agent,
  }
}

// Stored times are ISO 8601 UTC with milliseconds: the bounds are compared in that form.
const iso = (text: string | undefined) => (text === undefined ? undefined : new Date(text).toISOString())

/** One page of the audit log, newest first, and how many entries match. */
export async function listAuditLog(db: Kysely<Database>, query: ListAuditLogQuery): Promise<{ entries: AuditLogEntry[]; total: number }> {
  const { rows, total } = await listAuditEntries(
    db,
    {
      entityType: query.entityType,
      entityId: query.entityId,
      actorType: query.actorType,
      actorId: query.actorId === undefined ? undefined : String(query.actorId),
      action: query.action,
      from: iso(query.from),
      to: iso(query.to),
    },
    { limit: query.limit ?? 100, offset: query.offset ?? 0 },
  )
  return { entries: rows.map(auditRowToEntry), total }
}

/** Deletes the entries older than `retentionMs` (0 keeps them all); answers how many went. */
export async function pruneAuditLog(db: Kysely<Database>, retentionMs: number, now = Date.now()): Promise<number> {
  if (retentionMs <= 0) return 0
  return deleteAuditEntriesBefore(db, now - retentionMs)
}
