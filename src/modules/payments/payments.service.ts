import type { Kysely, Transaction } from 'kysely'
import type { PaymentsConfig } from '../../config.js'
import type { Database, PaymentRow } from '../../db/database.js'
import { AppError, messages } from '../../shared/errors.js'
import { centsToAmount } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import * as orders from '../orders/orders.repository.js'
// A cycle (orders.service calls onOrderStatusChange): both sides only call each other's functions, never at load.
import { emitStatusEvents } from '../orders/orders.service.js'
import type { OrderStatus } from '../orders/orders.schemas.js'
import { RefundError, type PaymentProvider, type RemoteIntent, type RemoteProvider } from './providers/provider.js'
import * as repo from './payments.repository.js'
import type { PaymentAnswer, PaymentStatus, PaymentSummary } from './payments.schemas.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

/** What the payments module needs to act: its provider, its settings and a logger (no card data ever reaches it). */
export interface Payments {
  readonly provider: PaymentProvider
  readonly config: PaymentsConfig
  readonly log: { error: (obj: object, msg: string) => void; warn: (obj: object, msg: string) => void; info: (obj: object, msg: string) => void }
  /**
   * Test-only seam: awaited after each step of applying an event and of refunding a cancelled order, so a test
   * can make it throw (a crash between steps) and check that nothing half-done was kept. Nothing in the service
   * sets it, so it cannot be reached over HTTP.
   */
  afterStep?: ((step: PaymentStep) => void | Promise<void>) | undefined
}

/**
 * Steps of the payment paths, in order, named for the test-only seam: `event-recorded` (its id is stored),
 * `order-paid` (the order row moved), `refund-made` (Stripe refunded), `payment-moved` (the payment row moved,
 * the last write before the commit) and `committed` (after the commit, before the answer).
 */
export type PaymentStep = 'event-recorded' | 'order-paid' | 'refund-made' | 'payment-moved' | 'committed'

async function step(payments: Payments, name: PaymentStep): Promise<void> {
  if (payments.afterStep) await payments.afterStep(name)
}

/**
 * The payments of each open database, so that the orders service reaches them through the one `db` it is given
 * (orders.service.ts calls onOrderStatusChange). Several apps in one process (the tests) each have their own.
 */
const registry = new WeakMap<Db, Payments>()

export function attachPayments(db: Db, payments: Payments): void {
  registry.set(db, payments)
}

export function detachPayments(db: Db): void {
  registry.delete(db)
}

/** The refund's idempotency key: the order and the attempt (a definite refusal moves to the next number). */
export function refundKey(orderId: number, attempt: number): string {
  return `refund-order-${orderId}-${attempt}`
}

/**
 * The PaymentIntent's idempotency key: the order, the instant it was created (ms) and the attempt. The instant keeps
 * two databases on one Stripe account (a reset staging database, two shops) apart: with the order id alone, a new
 * database's order 1 was handed the old order 1's intent, which Stripe replays for 24 h.
 */
export function intentKey(order: { id: number; created_at: string }, attempt: number): string {
  return `order-${order.id}-${Date.parse(order.created_at)}-intent-${attempt}`
}

function summary(row: Pick<PaymentRow, 'provider' | 'status' | 'amount_cents' | 'currency'>): PaymentSummary {
  return { provider: row.provider, status: row.status, amount: centsToAmount(row.amount_cents), currency: row.currency }
}

// ---- POST /orders/:id/payment ----

/**
 * The payment of the caller's own pending order. With Stripe: the order's PaymentIntent, created once under an
 * idempotency key (racing calls get the same one), the same one while it can be paid, a new one once canceled.
 */
export async function startPayment(db: Db, payments: Payments, userId: number, orderId: number): Promise<PaymentAnswer> {
  const order = await repo.findOrderForPayment(db, orderId)
  if (!order || order.user_id !== userId) throw new AppError(404, messages.orderNotFound)
  if (order.status !== 'pending') throw new AppError(409, messages.orderNotPayable)
  const { provider, config } = payments
  const existing = await repo.findPayment(db, orderId)
  if (provider.name === 'manual') {
    return summary(existing ?? { provider: 'manual', status: 'unpaid', amount_cents: order.total_cents, currency: config.currency })
  }

  if (existing?.intent_id) {
    const intent = await callProvider(payments, orderId, () => provider.retrieveIntent(existing.intent_id as string))
    if (intent.status !== 'canceled') return answer(provider, existing, intent)
  }
  const attempt = (existing?.intent_attempt ?? 0) + 1
  const intent = await callProvider(payments, orderId, () =>
    provider.createIntent({ orderId, amountCents: order.total_cents, currency: config.currency, idempotencyKey: intentKey(order, attempt) }),
  )
  const stored = await db.transaction().execute(async (trx) => {
    const now = nowIso()
    await repo.insertPayment(trx, {
      order_id: orderId,
      provider: 'stripe',
      status: 'unpaid',
      amount_cents: order.total_cents,
      currency: config.currency,
      created_at: now,
    })
    await repo.storeIntent(trx, orderId, intent.id, attempt, now)
    return repo.findPayment(trx, orderId)
  })
  if (!stored) throw new AppError(404, messages.orderNotFound)
  // A racing call stored a newer intent: answer that one.
  if (stored.intent_id !== intent.id && stored.intent_id !== null) {
    return answer(provider, stored, await callProvider(payments, orderId, () => provider.retrieveIntent(stored.intent_id as string)))
  }
  return answer(provider, stored, intent)
}

function answer(provider: RemoteProvider, row: PaymentRow, intent: RemoteIntent): PaymentAnswer {
  return {
    ...summary(row),
    ...(intent.clientSecret !== null ? { clientSecret: intent.clientSecret } : {}),
    ...(provider.publishableKey !== null ? { publishableKey: provider.publishableKey } : {}),
  }
}

/** A call to the provider that did not succeed is a 502; its cause goes to the log. */
async function callProvider<T>(payments: Payments, orderId: number, call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    payments.log.warn({ orderId, err: error }, 'the payment provider did not answer')
    throw new AppError(502, messages.paymentProviderUnavailable, { cause: error })
  }
}

// ---- the order JSON's `payment` ----

/** `payment` for each order (by id), from its row, or `unpaid` when the provider has not seen it yet. */
export async function paymentSummaries(db: Db, payments: Payments, list: Array<{ id: number; total: number }>): Promise<Map<number, PaymentSummary>> {
  const rows = new Map(
    (
      await repo.findPayments(
        db,
        list.map((o) => o.id),
      )
    ).map((row) => [row.order_id, row]),
  )
  const result = new Map<number, PaymentSummary>()
  for (const order of list) {
    const row = rows.get(order.id)
    result.set(order.id, row ? summary(row) : { provider: payments.provider.name, status: 'unpaid', amount: order.total, currency: payments.config.currency })
  }
  return result
}

// ---- the orders' status changes (called by orders.service.ts inside its transaction) ----

/** A manual payment's row, made when an admin's move first concerns money (marked paid, or a paid order cancelled). */
async function recordManualPayment(trx: Trx, payments: Payments, orderId: number, status: 'paid' | 'refunded', now: string): Promise<void> {
  const order = await repo.findOrderForPayment(trx, orderId)
  if (!order) return
  await repo.insertPayment(trx, {
    order_id: orderId,
    provider: 'manual',
    status,
    amount_cents: order.total_cents,
    currency: payments.config.currency,
    created_at: now,
  })
}

/**
 * Called by the orders service once an order's status has moved, inside the same transaction:
 * - to `paid` (an admin): the payment is `paid`; an open Stripe intent is cancelled after the commit;
 * - `paid` to `cancelled`: the payment is refunded now, through the provider, before the commit; a failed
 *   refund throws a 502 and the whole change rolls back (`manual` refunds by the shop's own means: `refunded`);
 * - `pending` to `cancelled`: the order's intent is cancelled after the commit, so it can no longer be paid.
 * Returns the work to do after the commit.
 */
export async function onOrderStatusChange(db: Db, trx: Trx, change: { orderId: number; from: OrderStatus; to: OrderStatus }): Promise<() => Promise<void>> {
  const payments = registry.get(db)
  const nothing = async () => {}
  if (!payments) return nothing
  const { orderId, from, to } = change
  const now = nowIso()
  const row = await repo.lockPayment(trx, orderId)
  if (to === 'paid') {
    if (!row) {
      await recordManualPayment(trx, payments, orderId, 'paid', now)
      return nothing
    }
    await repo.movePayment(trx, orderId, ['unpaid', 'processing', 'failed'], 'paid', now)
    return row.intent_id !== null ? () => cancelIntentQuietly(payments, orderId, row.intent_id as string) : nothing
  }
  if (to !== 'cancelled') return nothing
  if (from === 'paid') {
    if (!row) {
      await recordManualPayment(trx, payments, orderId, 'refunded', now)
      return nothing
    }
    if (row.status === 'paid' && row.provider === 'stripe' && row.intent_id !== null) {
      await refund(db, payments, row)
      await step(payments, 'refund-made')
    }
    await repo.movePayment(trx, orderId, ['paid'], 'refunded', now)
    await step(payments, 'payment-moved')
    return nothing
  }
  return row?.intent_id ? () => cancelIntentQuietly(payments, orderId, row.intent_id as string) : nothing
}

/** Refunds a Stripe payment in full, or throws the 502; a definite refusal moves the next attempt to a new key. */
async function refund(db: Db, payments: Payments, row: PaymentRow): Promise<void> {
  const { provider } = payments
  if (provider.name !== 'stripe' || row.intent_id === null) return
  try {
    await provider.refund({ intentId: row.intent_id, idempotencyKey: refundKey(row.order_id, row.refund_attempt) })
  } catch (error) {
    const definite = error instanceof RefundError && error.definite
    payments.log.error({ orderId: row.order_id, attempt: row.refund_attempt, definite }, 'refund failed')
    // Outside the transaction that is about to roll back: the next attempt must not replay this refusal.
    // (On SQLite it runs once the rollback has freed the connection.)
    if (definite) void repo.nextRefundAttempt(db, row.order_id, row.refund_attempt).catch(() => {})
    throw new AppError(502, messages.refundFailed, { cause: error })
  }
}

async function cancelIntentQuietly(payments: Payments, orderId: number, intentId: string): Promise<void> {
  if (payments.provider.name !== 'stripe') return
  try {
    await payments.provider.cancelIntent(intentId)
  } catch (error) {
    // A success that still comes is refunded when its event (or the reconcile job) arrives.
    payments.log.warn({ orderId, err: error }, 'could not cancel the payment intent')
  }
}

// ---- Stripe events (the webhook and the reconcile job) ----

export type IntentEventType = 'payment_intent.succeeded' | 'payment_intent.processing' | 'payment_intent.payment_failed' | 'payment_intent.canceled'

const handled = new Set<string>(['payment_intent.succeeded', 'payment_intent.processing', 'payment_intent.payment_failed', 'payment_intent.canceled'])

export function isIntentEvent(type: string): type is IntentEventType {
  return handled.has(type)
}

/** What an event did, for the log and the reconcile command's report. */
export type EventOutcome = 'duplicate' | 'unknown-intent' | 'unchanged' | 'paid' | 'processing' | 'failed' | 'refunded' | 'mismatch'

/**
 * Applies what Stripe says about an intent, once and only forward: with an event id, a duplicate delivery is
 * ignored (the id is unique); the payment row is locked while it is read and changed, so concurrent deliveries
 * of different events take turns; no event moves a `paid` or `refunded` payment back. The intent is matched by
 * the id the shop stored, never by its metadata.
 */
export async function applyIntentEvent(
  db: Db,
  payments: Payments,
  event: { id?: string; type: IntentEventType; intent: { id: string; amountReceivedCents: number; currency: string } },
): Promise<{ outcome: EventOutcome; orderId?: number }> {
  const result = await db.transaction().execute(async (trx) => {
    const now = nowIso()
    if (event.id !== undefined) {
      if (!(await repo.recordEvent(trx, event.id, event.type, now))) return { outcome: 'duplicate' as const }
      await step(payments, 'event-recorded')
    }
    const row = await repo.lockPaymentByIntent(trx, event.intent.id)
    if (!row) return { outcome: 'unknown-intent' as const }
    const orderId = row.order_id
    const done = (outcome: EventOutcome) => ({ outcome, orderId })
    const moved = async (yes: boolean) => {
      if (yes) await step(payments, 'payment-moved')
      return yes
    }
    switch (event.type) {
      case 'payment_intent.processing':
        return done((await moved(await repo.movePayment(trx, orderId, ['unpaid', 'failed'], 'processing', now))) ? 'processing' : 'unchanged')
      case 'payment_intent.payment_failed':
      case 'payment_intent.canceled':
        return done((await moved(await repo.movePayment(trx, orderId, ['unpaid', 'processing'], 'failed', now))) ? 'failed' : 'unchanged')
      case 'payment_intent.succeeded':
        return done(await applySuccess(db, trx, payments, row, event.intent, event.id, now))
    }
  })
  await step(payments, 'committed')
  return result
}

async function applySuccess(
  db: Db,
  trx: Trx,
  payments: Payments,
  row: PaymentRow,
  intent: { amountReceivedCents: number; currency: string },
  eventId: string | undefined,
  now: string,
): Promise<EventOutcome> {
  const active: PaymentStatus[] = ['unpaid', 'processing', 'failed']
  if (!active.includes(row.status)) return 'unchanged'
  const orderId = row.order_id
  if (intent.amountReceivedCents !== row.amount_cents || intent.currency.toUpperCase() !== row.currency) {
    await repo.recordMismatch(
      trx,
      orderId,
      `received ${intent.amountReceivedCents} ${intent.currency.toUpperCase()}, expected ${row.amount_cents} ${row.currency}`,
      now,
    )
    payments.log.error({ eventId, orderId }, 'payment amount or currency does not match the order: not applied')
    return 'mismatch'
  }
  // Conditional on `pending`: of this and a cancel (or the expiry), exactly one wins the order row.
  if (await orders.updateOrderStatus(trx, orderId, 'pending', 'paid', now)) {
    await emitStatusEvents(db, trx, orderId, 'paid')
    await step(payments, 'order-paid')
    await repo.movePayment(trx, orderId, active, 'paid', now)
    await step(payments, 'payment-moved')
    return 'paid'
  }
  const order = await repo.findOrderForPayment(trx, orderId)
  if (order?.status === 'cancelled') {
    // Paid after the order was cancelled (by its owner, an admin or the expiry): the money goes back.
    await refund(db, payments, row)
    await step(payments, 'refund-made')
    await repo.movePayment(trx, orderId, active, 'refunded', now)
    await step(payments, 'payment-moved')
    return 'refunded'
  }
  // Marked paid by an admin meanwhile (or moved on since).
  await repo.movePayment(trx, orderId, active, 'paid', now)
  await step(payments, 'payment-moved')
  return 'paid'
}

// ---- jobs ----

/** Lost webhooks: how old a pending order's intent must be before the periodic job asks Stripe about it. */
export const RECONCILE_AGE_MS = 10 * 60_000
/** A cancelled order's intent is still watched this long: a success whose webhook was lost is refunded. */
const CANCELLED_WATCH_MS = 24 * 60 * 60_000

/**
 * Asks Stripe about the intent of each pending order (older than `olderThanMs`; every one without it), and of
 * orders cancelled in the last 24 hours with an unsettled payment, and applies what it says by the webhook's
 * rules (a success on a cancelled order is refunded). Returns what changed.
 */
export async function reconcilePayments(db: Db, payments: Payments, options: { olderThanMs?: number } = {}) {
  const { provider } = payments
  const changes: Array<{ orderId: number; outcome: EventOutcome }> = []
  if (provider.name !== 'stripe') return changes
  const before = options.olderThanMs === undefined ? undefined : new Date(Date.now() - options.olderThanMs).toISOString()
  const cancelledSince = new Date(Date.now() - CANCELLED_WATCH_MS).toISOString()
  for (const { order_id: orderId, intent_id: intentId } of await repo.listOpenIntents(db, { before, cancelledSince })) {
    if (intentId === null) continue
    let intent: RemoteIntent
    try {
      intent = await provider.retrieveIntent(intentId)
    } catch (error) {
      payments.log.warn({ orderId, err: error }, 'reconcile: Stripe did not answer about an intent')
      continue
    }
    const type = intentEventType(intent.status)
    if (type === undefined) continue
    try {
      const { outcome } = await applyIntentEvent(db, payments, { type, intent })
      if (outcome !== 'unchanged' && outcome !== 'unknown-intent') changes.push({ orderId, outcome })
    } catch (error) {
      // A refund Stripe did not make: the next run tries again.
      payments.log.warn({ orderId, err: error }, 'reconcile: could not apply an intent')
    }
  }
  return changes
}

function intentEventType(status: string): IntentEventType | undefined {
  if (status === 'succeeded') return 'payment_intent.succeeded'
  if (status === 'processing') return 'payment_intent.processing'
  if (status === 'canceled') return 'payment_intent.canceled'
  return undefined
}

/**
 * Cancels the pending orders still unpaid ORDER_PAYMENT_TTL after their creation, puts their units back and
 * cancels their intents. A payment in `processing` holds its order. Returns the ids cancelled.
 */
export async function expireUnpaidOrders(db: Db, payments: Payments, options: { batch?: number } = {}): Promise<number[]> {
  const ttl = payments.config.orderPaymentTtlMs
  if (ttl <= 0) return []
  const before = new Date(Date.now() - ttl).toISOString()
  const expired: number[] = []
  for (const candidate of await repo.listExpiredOrders(db, before, options.batch ?? 100)) {
    const cancelled = await db.transaction().execute(async (trx) => {
      if (!(await repo.cancelExpiredOrder(trx, candidate.id, before, nowIso()))) return false
      for (const line of await orders.listOrderLines(trx, candidate.id)) await orders.releaseStock(trx, line.product_id, line.quantity)
      await emitStatusEvents(db, trx, candidate.id, 'cancelled')
      return true
    })
    if (!cancelled) continue
    expired.push(candidate.id)
    if (candidate.intent_id !== null) await cancelIntentQuietly(payments, candidate.id, candidate.intent_id)
  }
  if (expired.length > 0) payments.log.info({ orders: expired }, 'unpaid orders expired; their stock is back')
  return expired
}
