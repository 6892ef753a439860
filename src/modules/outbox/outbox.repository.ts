import { type Compilable, type Kysely, type QueryResult, type RawBuilder, type Selectable, sql } from 'kysely'
import { prepared, preparedList } from '../../db/prepared.js'
import type { Dialect } from '../../db/connect.js'
import type { Database, OutboxTable } from '../../db/database.js'

export type OutboxRow = Selectable<OutboxTable>

/** One channel's share of a claim: its free slots, and for webhook deliveries the endpoints' own caps. */
export interface LaneClaim {
  channel: OutboxRow['channel']
  /** Rows to take at most: the lane's free slots. */
  limit: number
  /**
   * Webhook deliveries: at most `cap` rows of one endpoint (`webhook_id`) in flight, `inFlight` counting this
   * instance's. An endpoint at its cap has no row taken; one below it, as many as it has room for.
   */
  perEndpoint?: { cap: number; inFlight: ReadonlyMap<number, number> }
}

/**
 * Takes due rows for this instance, for each lane up to its `limit` (and its endpoints' room): pending, due, and not
 * held by anyone (or held past its lease: a crashed instance), oldest due first. Only rows that can start now are
 * taken: a row of an endpoint at its cap is left as it is, for later or for another instance. On PostgreSQL, rows
 * another instance is claiming this very moment are skipped (FOR UPDATE SKIP LOCKED), so each row goes to one
 * instance; on SQLite the one connection serialises claims. One statement for every lane.
 */
export async function claimDue(
  db: Kysely<Database>,
  dialect: Dialect,
  { lanes, now, leaseMs }: { lanes: readonly LaneClaim[]; now: number; leaseMs: number },
): Promise<OutboxRow[]> {
  const taking = lanes.filter((lane) => lane.limit > 0)
  if (taking.length === 0) return []
  const values: ClaimValues = { nowAt: new Date(now).toISOString(), until: new Date(now + leaseMs).toISOString() }
  for (const lane of taking) {
    values[`limit_${lane.channel}`] = lane.limit
    if (lane.perEndpoint) {
      values[`window_${lane.channel}`] = lane.limit * lane.perEndpoint.cap
      values[`cap_${lane.channel}`] = lane.perEndpoint.cap
    }
  }
  // No endpoint with rows in flight here (the usual case): the statement's shape is that of its lanes, and it is
  // compiled once per shape (on PostgreSQL prepared by name). Otherwise the endpoints' ids and room are in its text.
  const busy = taking.some((lane) => lane.perEndpoint && [...lane.perEndpoint.inFlight.values()].some((count) => count > 0))
  if (busy) return (await db.executeQuery(claimQuery(db, dialect, taking, values))).rows
  const shape = `${dialect}:${taking.map((lane) => `${lane.channel}${lane.perEndpoint ? '/endpoints' : ''}`).join(',')}`
  let statement = claimStatements.get(shape)
  if (!statement) {
    const lanesOfShape = taking.map((lane) => ({ ...lane, ...(lane.perEndpoint ? { perEndpoint: { cap: 0, inFlight: new Map<number, number>() } } : {}) }))
    statement = prepared((db, v: ClaimValues) => claimQuery(db, dialect, lanesOfShape, v))
    claimStatements.set(shape, statement)
  }
  return (await statement(db, values)).rows
}

/** A claim's values: the time, the lease's end, and each lane's limit (and for webhooks its window and cap). */
type ClaimValues = { nowAt: string; until: string } & Record<string, string | number>

const claimStatements = new Map<string, (db: Kysely<Database>, values: ClaimValues) => Promise<QueryResult<OutboxRow>>>()

/** The claim's statement for `lanes` (each with rows to take); every number and time comes from `v`. */
function claimQuery(db: Kysely<Database>, dialect: Dialect, lanes: readonly LaneClaim[], v: ClaimValues): Compilable<OutboxRow> {
  const postgres = dialect === 'postgres'
  const due = (channel: OutboxRow['channel']) =>
    db
      .selectFrom('outbox')
      // A literal, as in the partial index outbox_due, so that both databases' planners see the index applies.
      .where('status', '=', sql.lit('pending'))
      .where('next_attempt_at', '<=', v.nowAt)
      .where('channel', '=', channel)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', v.nowAt)]))
      .orderBy('next_attempt_at')
  // Each lane's ids, as the text of a subquery: one SELECT per lane, joined by UNION ALL. (Kysely would put one
  // lane's ORDER BY and LIMIT on the whole union; as derived tables each keeps its own, on both databases.)
  const parts: RawBuilder<unknown>[] = []
  for (const lane of lanes) {
    const limit = v[`limit_${lane.channel}`] as number
    if (!lane.perEndpoint) {
      const rows = due(lane.channel).select('id').limit(limit)
      parts.push(sql`select id from (${postgres ? rows.forUpdate().skipLocked() : rows}) as ${sql.id(`${lane.channel}_due`)}`)
      continue
    }
    const { inFlight } = lane.perEndpoint
    const cap = v[`cap_${lane.channel}`] as number
    const full = [...inFlight].filter(([, count]) => count >= lane.perEndpoint!.cap).map(([id]) => id)
    const partly = [...inFlight].filter(([, count]) => count > 0 && count < lane.perEndpoint!.cap)
    // The oldest due rows of the endpoints with room (a full endpoint's rows are passed over, not taken): `limit`
    // endpoints of `cap` rows each at most, as many as the lane could need. An endpoint with more rows in it than
    // room fills up; the dispatcher then claims again, passing over it too.
    const window = due(lane.channel)
      .select(['id', 'webhook_id', 'next_attempt_at'])
      .$if(full.length > 0, (qb) => qb.where((eb) => eb.or([eb('webhook_id', 'is', null), eb('webhook_id', 'not in', full)])))
      .limit(v[`window_${lane.channel}`] as number)
    // How many more rows each endpoint may start: cap less what it has in flight here (cast: PostgreSQL would read
    // a bare parameter in a CASE as text). Rows without an endpoint (none is written so; tests) count as one. The
    // limit below is cast too: SQLite prepares a statement with a bare `limit ?` again at every run (sqlite-compiler.ts).
    const int = (value: number) => sql`cast(${value} as integer)`
    const room = sql.join(
      partly.map(([id, count]) => sql`when webhook_id = ${id} then ${int(lane.perEndpoint!.cap - count)}`),
      sql` `,
    )
    const allowed = partly.length > 0 ? sql`case ${room} else ${int(cap)} end` : int(cap)
    parts.push(sql`select id from (
      select id from (
        select id, next_attempt_at, row_number() over (partition by webhook_id order by next_attempt_at, id) as place, ${allowed} as allowed
        from (${postgres ? window.forUpdate().skipLocked() : window}) as ${sql.id(`${lane.channel}_window`)}
      ) as ${sql.id(`${lane.channel}_ranked`)}
      where place <= allowed
      order by next_attempt_at
      limit ${int(limit)}
    ) as ${sql.id(`${lane.channel}_due`)}`)
  }
  const ids = sql.join(parts, sql` union all `)
  if (postgres) {
    // A CTE, evaluated once: as `id IN (subquery)` PostgreSQL may run the LIMITed, SKIP LOCKED subquery once per
    // candidate row and claim far more than `limit`.
    return db
      .with(
        (cte) => cte('due').materialized(),
        () => sql<{ id: string }>`(${ids})`,
      )
      .updateTable('outbox')
      .set({ locked_until: v.until })
      .from('due')
      .whereRef('outbox.id', '=', 'due.id')
      .returningAll('outbox')
  }
  // One statement, so the subqueries' choice holds for the update; the rows are then found by their key (repeating
  // the subqueries' conditions here made SQLite walk every pending row of a backlog for each claim).
  return db
    .updateTable('outbox')
    .set({ locked_until: v.until })
    .where('id', 'in', sql<string>`(${ids})`)
    .returningAll()
}

/** Records delivered messages, several at once: each gets one more attempt and the answer's status code. */
export async function markDelivered(db: Kysely<Database>, ids: readonly string[], done: { statusCode: number | null; at: string }): Promise<void> {
  await markStatement(db, ids, done)
}

// Compiled once per number of messages recorded together, up to 16 (as many as the lanes deliver at once, mostly).
const markStatement = preparedList(markDeliveredQuery, 16)

function markDeliveredQuery(db: Kysely<Database>, ids: readonly string[], done: { statusCode: number | null; at: string }) {
  return (
    db
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
      // A literal, as in the claim: SQLite reads a bound value compared with the partial index outbox_due's condition
      // at planning time, and prepared the statement again at every run.
      .where('status', '=', sql.lit('pending'))
  )
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
    .where('status', '=', sql.lit('pending'))
    .execute()
}
