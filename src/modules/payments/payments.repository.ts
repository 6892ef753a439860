import { type Insertable, type Kysely, type Transaction } from 'kysely'
import type { Database, PaymentRow, RefundsTable } from '../../db/database.js'
import type { PaymentStatus } from './payments.schemas.js'
import { isPostgres } from '../../db/dialect.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

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

/** The order of the intent the shop created (not locked: the order row is locked first, then the payment). */
export async function findOrderOfIntent(db: Db | Trx, intentId: string): Promise<number | undefined> {
  return (await db.selectFrom('payments').select('order_id').where('intent_id', '=', intentId).executeTakeFirst())?.order_id
}

export async function findPayments(db: Db, orderIds: number[]) {
  if (orderIds.length === 0) return []
  return db.selectFrom('payments').select(['order_id', 'provider', 'status', 'amount_cents', 'currency']).where('order_id', 'in', orderIds).execute()
}

/** Writes a payment row unless the order has one. */
export async function insertPayment(
  trx: Trx,
  row: {
    order_id: number
    provider: 'manual' | 'stripe'
    status: PaymentStatus
    amount_cents: number
    currency: string
    created_at: string
    paid_manually?: number
    refunded_cents?: number
  },
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

/** A success that did not match the order: what it said, and what it received (refunded if the order is cancelled). */
export async function recordMismatch(trx: Trx, orderId: number, mismatch: string, receivedCents: number, now: string): Promise<void> {
  await trx.updateTable('payments').set({ mismatch, received_cents: receivedCents, updated_at: now }).where('order_id', '=', orderId).execute()
}

/** An admin marked the order paid: the card is not how it was paid. */
export async function markPaidManually(trx: Trx, orderId: number, now: string): Promise<void> {
  await trx.updateTable('payments').set({ status: 'paid', paid_manually: 1, updated_at: now }).where('order_id', '=', orderId).execute()
}

/** Records a refund about to be asked of the provider (committed before the call); an existing one is kept. */
export async function markRefundPending(trx: Trx, orderId: number, cents: number, now: string): Promise<void> {
  await trx
    .updateTable('payments')
    .set({ refund_pending_at: now, refund_pending_cents: cents, updated_at: now })
    .where('order_id', '=', orderId)
    .where('refund_pending_at', 'is', null)
    .execute()
}

/** The provider refused the pending refund: it is gone, and the next attempt takes the next key. */
export async function dropRefundPending(db: Db | Trx, orderId: number, attempt: number, now: string): Promise<void> {
  await db
    .updateTable('payments')
    .set({ refund_pending_at: null, refund_pending_cents: null, refund_attempt: attempt + 1, updated_at: now })
    .where('order_id', '=', orderId)
    .where('refund_attempt', '=', attempt)
    .execute()
}

/**
 * The pending refund was made: its amount joins `refunded_cents`, the marker goes, and the payment becomes
 * `refunded` once everything paid has come back. Returns the amount settled (0 when nothing was pending).
 */
export async function settleRefundPending(trx: Trx, row: PaymentRow, now: string): Promise<number> {
  const cents = Number(row.refund_pending_cents ?? 0)
  if (row.refund_pending_at === null) return 0
  const refunded = Number(row.refunded_cents) + cents
  await trx
    .updateTable('payments')
    .set({
      refunded_cents: refunded,
      refund_pending_at: null,
      refund_pending_cents: null,
      // A paid order is refunded once all of it came back (part of it shows as partially_refunded); a success that
      // was never applied (a mismatch, a late one on a cancelled order) is refunded by this one refund.
      status: refunded >= Number(row.amount_cents) || row.status !== 'paid' ? 'refunded' : row.status,
      updated_at: now,
    })
    .where('order_id', '=', row.order_id)
    .execute()
  return cents
}

/** A second payment was refunded: the marker goes, and the row says what happened (the order stays paid). */
export async function clearSecondCharge(trx: Trx, orderId: number, note: string, now: string): Promise<void> {
  await trx
    .updateTable('payments')
    .set({ refund_pending_at: null, refund_pending_cents: null, mismatch: note, updated_at: now })
    .where('order_id', '=', orderId)
    .execute()
}

/** Adds a refund made outside the shop (or by its own means) to `refunded_cents`; `refunded` once it covers the amount. */
export async function addRefunded(trx: Trx, row: PaymentRow, cents: number, now: string): Promise<void> {
  const refunded = Number(row.refunded_cents) + cents
  await trx
    .updateTable('payments')
    .set({
      refunded_cents: refunded,
      ...(refunded >= Number(row.amount_cents) && row.status === 'paid' ? { status: 'refunded' as const } : {}),
      updated_at: now,
    })
    .where('order_id', '=', row.order_id)
    .execute()
}

/** Writes a refund; returns its id. */
export async function insertRefund(trx: Trx, row: Insertable<RefundsTable>): Promise<number> {
  return (await trx.insertInto('refunds').values(row).returning('id').executeTakeFirstOrThrow()).id
}

/** Whether the order has a refund by line written and not yet settled (its marker is the payment's). */
export async function hasPendingLineRefund(db: Db | Trx, orderId: number): Promise<boolean> {
  const row = await db.selectFrom('refunds').select('id').where('order_id', '=', orderId).where('pending_at', 'is not', null).executeTakeFirst()
  return row !== undefined
}

/** Refunds recorded and committed before `before` and never settled: a crash or a timeout left them. */
export async function listPendingRefunds(db: Db, before: string) {
  return db
    .selectFrom('payments as p')
    .innerJoin('orders as o', 'o.id', 'p.order_id')
    .select(['p.order_id', 'o.status'])
    .where('p.refund_pending_at', 'is not', null)
    .where('p.refund_pending_at', '<', before)
    .orderBy('p.order_id')
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
    .select(['o.id'])
    .where('o.status', '=', 'pending')
    .where('o.created_at', '<', before)
    .where((eb) => eb.or([eb('p.status', 'is', null), eb('p.status', 'in', ['unpaid', 'failed'])]))
    .orderBy('o.id')
    .limit(limit)
    .execute()
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
