import { type Kysely, PostgresAdapter, sql, type Transaction } from 'kysely'
import type { Database, PaymentRow } from '../../db/database.js'
import type { PaymentStatus } from './payments.schemas.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

function isPostgres(db: Db | Trx): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}

// ---- orders, as payments read them ----

export async function findOrderForPayment(db: Db | Trx, orderId: number) {
  return db.selectFrom('orders').select(['id', 'user_id', 'status', 'total_cents', 'created_at']).where('id', '=', orderId).executeTakeFirst()
}

// ---- payments ----

export async function findPayment(db: Db | Trx, orderId: number): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('order_id', '=', orderId).executeTakeFirst()
}

/** The payment row, locked until the transaction ends on PostgreSQL (SQLite runs one transaction at a time). */
export async function lockPayment(trx: Trx, orderId: number): Promise<PaymentRow | undefined> {
  return trx
    .selectFrom('payments')
    .selectAll()
    .where('order_id', '=', orderId)
    .$if(isPostgres(trx), (qb) => qb.forUpdate())
    .executeTakeFirst()
}

/** The payment of the intent the shop created, locked as lockPayment. */
export async function lockPaymentByIntent(trx: Trx, intentId: string): Promise<PaymentRow | undefined> {
  return trx
    .selectFrom('payments')
    .selectAll()
    .where('intent_id', '=', intentId)
    .$if(isPostgres(trx), (qb) => qb.forUpdate())
    .executeTakeFirst()
}

export async function findPayments(db: Db, orderIds: number[]) {
  if (orderIds.length === 0) return []
  return db.selectFrom('payments').select(['order_id', 'provider', 'status', 'amount_cents', 'currency']).where('order_id', 'in', orderIds).execute()
}

/** Writes a payment row unless the order has one. */
export async function insertPayment(
  trx: Trx,
  row: { order_id: number; provider: 'manual' | 'stripe'; status: PaymentStatus; amount_cents: number; currency: string; created_at: string },
): Promise<void> {
  await trx
    .insertInto('payments')
    .values({ ...row, updated_at: row.created_at })
    .onConflict((oc) => oc.column('order_id').doNothing())
    .execute()
}

/** Stores the order's newest intent; only a newer attempt replaces an older one (racing first calls share one). */
export async function storeIntent(trx: Trx, orderId: number, intentId: string, attempt: number, now: string): Promise<void> {
  await trx
    .updateTable('payments')
    .set({ intent_id: intentId, intent_attempt: attempt, provider: 'stripe', status: 'unpaid', updated_at: now })
    .where('order_id', '=', orderId)
    .where('intent_attempt', '<', attempt)
    .where('status', 'in', ['unpaid', 'failed'])
    .execute()
}

/** Moves a payment to `to` when its status is one of `from`; false when it was not. */
export async function movePayment(trx: Trx, orderId: number, from: readonly PaymentStatus[], to: PaymentStatus, now: string): Promise<boolean> {
  const result = await trx
    .updateTable('payments')
    .set({ status: to, updated_at: now })
    .where('order_id', '=', orderId)
    .where('status', 'in', from)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

export async function recordMismatch(trx: Trx, orderId: number, mismatch: string, now: string): Promise<void> {
  await trx.updateTable('payments').set({ mismatch, updated_at: now }).where('order_id', '=', orderId).execute()
}

/** After a definite refusal, the next refund attempt takes the next idempotency key (once, whoever asks). */
export async function nextRefundAttempt(db: Db, orderId: number, attempt: number): Promise<void> {
  await db
    .updateTable('payments')
    .set({ refund_attempt: attempt + 1 })
    .where('order_id', '=', orderId)
    .where('refund_attempt', '=', attempt)
    .execute()
}

// ---- events ----

/** Records an event id; false when it was recorded before (a duplicate delivery). */
export async function recordEvent(trx: Trx, eventId: string, type: string, now: string): Promise<boolean> {
  const result = await trx
    .insertInto('payment_events')
    .values({ event_id: eventId, type, received_at: now })
    .onConflict((oc) => oc.column('event_id').doNothing())
    .returning('event_id')
    .executeTakeFirst()
  return result !== undefined
}

// ---- jobs ----

/**
 * Intents whose payment is not settled: of pending orders created before `before` (all of them without it), and
 * of orders cancelled since `cancelledSince` (a success whose webhook was lost must still be refunded).
 */
export async function listOpenIntents(db: Db, options: { before?: string | undefined; cancelledSince: string }) {
  const { before, cancelledSince } = options
  return db
    .selectFrom('payments as p')
    .innerJoin('orders as o', 'o.id', 'p.order_id')
    .select(['p.order_id', 'p.intent_id'])
    .where((eb) =>
      eb.or([
        before === undefined ? eb('o.status', '=', 'pending') : eb.and([eb('o.status', '=', 'pending'), eb('o.created_at', '<', before)]),
        eb.and([eb('o.status', '=', 'cancelled'), eb('o.updated_at', '>=', cancelledSince)]),
      ]),
    )
    .where('p.intent_id', 'is not', null)
    .where('p.status', 'in', ['unpaid', 'processing', 'failed'])
    .orderBy('p.order_id')
    .execute()
}

/** Pending orders created before `before` whose payment neither is under way nor done: the expiry's candidates. */
export async function listExpiredOrders(db: Db, before: string, limit: number) {
  return db
    .selectFrom('orders as o')
    .leftJoin('payments as p', 'p.order_id', 'o.id')
    .select(['o.id', 'p.intent_id'])
    .where('o.status', '=', 'pending')
    .where('o.created_at', '<', before)
    .where((eb) => eb.or([eb('p.status', 'is', null), eb('p.status', 'in', ['unpaid', 'failed'])]))
    .orderBy('o.id')
    .limit(limit)
    .execute()
}

/**
 * Cancels an expired order in one conditional statement: still pending, and no payment under way or done. A
 * payment that lands at the same moment either commits first (this changes nothing) or finds the order cancelled
 * (and is refunded).
 */
export async function cancelExpiredOrder(trx: Trx, orderId: number, before: string, now: string): Promise<boolean> {
  const result = await trx
    .updateTable('orders')
    .set({ status: 'cancelled', updated_at: now })
    .where('id', '=', orderId)
    .where('status', '=', 'pending')
    .where('created_at', '<', before)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('payments')
            .select(sql.lit(1).as('one'))
            .where('payments.order_id', '=', orderId)
            .where('payments.status', 'in', ['processing', 'paid', 'refunded']),
        ),
      ),
    )
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/**
 * Claims this run of a job across instances: the one update that moves `next_run_at` past now wins, the
 * others find it in the future. Works the same on SQLite (one process) and PostgreSQL (any number).
 */
export async function claimJobRun(db: Db, name: string, now: string, next: string): Promise<boolean> {
  await db
    .insertInto('payment_jobs')
    .values({ name, next_run_at: '1970-01-01T00:00:00.000Z' })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute()
  const result = await db.updateTable('payment_jobs').set({ next_run_at: next }).where('name', '=', name).where('next_run_at', '<=', now).executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}
