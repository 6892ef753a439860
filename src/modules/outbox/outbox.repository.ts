import { type Kysely, type Selectable, sql } from 'kysely'
import type { Dialect } from '../../db/connect.js'
import type { Database, OutboxTable } from '../../db/database.js'

export type OutboxRow = Selectable<OutboxTable>

/**
 * Takes up to `limit` due rows of the given channels for this instance: pending, due, and not held by anyone (or
 * held past its lease: a crashed instance). On PostgreSQL, rows another instance is claiming this very moment are
 * skipped (FOR UPDATE SKIP LOCKED), so each row goes to one instance; on SQLite the one connection serialises claims.
 */
export async function claimDue(
  db: Kysely<Database>,
  dialect: Dialect,
  { channels, limit, now, leaseMs }: { channels: OutboxRow['channel'][]; limit: number; now: number; leaseMs: number },
): Promise<OutboxRow[]> {
  const nowAt = new Date(now).toISOString()
  const until = new Date(now + leaseMs).toISOString()
  const due = db
    .selectFrom('outbox')
    .select('id')
    // A literal, as in the partial index outbox_due, so that both databases' planners see the index applies.
    .where('status', '=', sql.lit('pending'))
    .where('next_attempt_at', '<=', nowAt)
    .where('channel', 'in', channels)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', nowAt)]))
    .orderBy('next_attempt_at')
    .limit(limit)
  if (dialect === 'postgres') {
    // A CTE, evaluated once: as `id IN (subquery)` PostgreSQL may run the LIMITed, SKIP LOCKED subquery once per
    // candidate row and claim far more than `limit`.
    return db
      .with('due', () => due.forUpdate().skipLocked())
      .updateTable('outbox')
      .set({ locked_until: until })
      .from('due')
      .whereRef('outbox.id', '=', 'due.id')
      .returningAll('outbox')
      .execute()
  }
  // One statement, so the subquery's choice holds for the update; the rows are then found by their key (repeating
  // the subquery's conditions here made SQLite walk every pending row of a backlog for each claim).
  return db.updateTable('outbox').set({ locked_until: until }).where('id', 'in', due).returningAll().execute()
}

/** Records delivered messages, several at once: each gets one more attempt and the answer's status code. */
export async function markDelivered(db: Kysely<Database>, ids: readonly string[], done: { statusCode: number | null; at: string }): Promise<void> {
  await db
    .updateTable('outbox')
    .set((eb) => ({
      status: 'delivered',
      attempts: eb('attempts', '+', 1),
      delivered_at: done.at,
      last_status_code: done.statusCode,
      last_error: null,
      locked_until: null,
    }))
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .execute()
}

/** A failed attempt: tried again at `nextAttemptAt`, or `failed` for good when it is null. */
export async function markFailedAttempt(
  db: Kysely<Database>,
  id: string,
  failure: { attempts: number; statusCode: number | null; error: string; nextAttemptAt: string | null },
): Promise<void> {
  await db
    .updateTable('outbox')
    .set({
      attempts: failure.attempts,
      last_status_code: failure.statusCode,
      last_error: failure.error,
      locked_until: null,
      ...(failure.nextAttemptAt === null ? { status: 'failed' as const } : { next_attempt_at: failure.nextAttemptAt }),
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute()
}
