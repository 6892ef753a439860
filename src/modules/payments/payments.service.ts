import type { FastifyBaseLogger } from 'fastify'
import type { Kysely, Transaction } from 'kysely'
import type { PaymentsConfig } from '../../config.js'
import type { Database, PaymentRow } from '../../db/database.js'
import { AppError } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import type { LifecycleHook, OrderLifecycle, OrderMove } from '../orders/order-lifecycle.js'
import type { EventSink } from '../../shared/event-sink.js'
import { enqueueEmail } from '../outbox/outbox.js'
import { loadOrder, paymentSummary, toRefund } from '../orders/order-view.js'
import { appendOrderEvent, systemActor } from '../orders/order-timeline.js'
import { RefundError, type PaymentProvider, type RemoteIntent, type RemoteProvider } from './providers/provider.js'
import { systemSource } from '../staff/audit-log.js'
import * as repo from './payments.repository.js'
import type { PaymentAnswer, PaymentStatus } from './payments.schemas.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>
export type PaymentsLog = Pick<FastifyBaseLogger, 'error' | 'warn' | 'info'>

/**
 * Steps of the payment paths, in order, named for the test-only seam `afterStep`: `refund-pending` (a refund
 * recorded and committed, the provider not yet called), `refund-made` (the provider refunded), `event-recorded`
 * (a Stripe event's id is stored), `order-paid` (the order row moved), `payment-moved` (the payment row moved,
 * the last write before the commit) and `committed` (after the commit, before the answer).
 */
export type PaymentStep = 'refund-pending' | 'refund-made' | 'event-recorded' | 'order-paid' | 'payment-moved' | 'committed'

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

/** Lost webhooks: how old a pending order's intent must be before the periodic job asks Stripe about it. */
export const RECONCILE_AGE_MS = 10 * 60_000
/**
 * A refund recorded but never settled is finished by the reconcile job once it is this old: longer than any call
 * to Stripe can last (two attempts of 10 s and the SDK's back-off), so the job never races a request still waiting.
 */
export const PENDING_REFUND_AGE_MS = 60_000
/** A cancelled order's intent is still watched this long: a success whose webhook was lost is refunded. */
const CANCELLED_WATCH_MS = 24 * 60 * 60_000

export type ChargeEventType = 'charge.refunded' | 'charge.dispute.created'

export function isChargeEvent(type: string): type is ChargeEventType {
  return type === 'charge.refunded' || type === 'charge.dispute.created'
}

export type IntentEventType = 'payment_intent.succeeded' | 'payment_intent.processing' | 'payment_intent.payment_failed' | 'payment_intent.canceled'

const handled = new Set<string>(['payment_intent.succeeded', 'payment_intent.processing', 'payment_intent.payment_failed', 'payment_intent.canceled'])

export function isIntentEvent(type: string): type is IntentEventType {
  return handled.has(type)
}

/** What an event did, for the log and the reconcile command's report. */
export type EventOutcome = 'duplicate' | 'unknown-intent' | 'unchanged' | 'paid' | 'processing' | 'failed' | 'refunded' | 'mismatch' | 'cancelled'

const ACTIVE: PaymentStatus[] = ['unpaid', 'processing', 'failed']

export interface PaymentsDeps {
  db: Db
  provider: PaymentProvider
  config: PaymentsConfig
  log: PaymentsLog
  lifecycle: OrderLifecycle
  /** Who hears of a dispute (ADMIN_NOTIFY_EMAIL). */
  adminEmails?: readonly string[]
  /** Where a refund made in Stripe's dashboard is announced (`order.refunded`); none: not announced. */
  events?: EventSink
}

/**
 * The payments module: the order's payment row, the provider's intents and refunds, Stripe's events, and the
 * timed jobs. It never writes `orders.status`: it asks the order lifecycle for moves, and registers its hook there
 * for the moves others make (a refund before a paid order is cancelled, an intent cancelled after a pending one
 * is). No call to the provider is ever made inside a database transaction: a refund is recorded and committed
 * first (`refund_pending_at`), the provider called, and the refund settled in a second transaction; the reconcile
 * job finishes what a crash or a timeout left in between.
 */
export class PaymentsService {
  readonly provider: PaymentProvider
  readonly config: PaymentsConfig
  readonly log: PaymentsLog
  /**
   * Test-only seam: awaited after each step of the payment paths, so a test can make it throw (a crash between
   * steps) and check that nothing half-done was kept. Nothing in the service sets it.
   */
  afterStep: ((step: PaymentStep) => void | Promise<void>) | undefined
  private readonly db: Db
  private readonly lifecycle: OrderLifecycle
  private readonly adminEmails: readonly string[]
  private readonly events: EventSink | undefined

  constructor(deps: PaymentsDeps) {
    this.db = deps.db
    this.provider = deps.provider
    this.config = deps.config
    this.log = deps.log
    this.lifecycle = deps.lifecycle
    this.adminEmails = deps.adminEmails ?? []
    this.events = deps.events
    this.afterStep = undefined
    this.pendingRefunds = undefined
    deps.lifecycle.use(this.lifecycleHook())
  }

  /** Runs the test-only seam after `name` (the refunds by line share it: their steps are the same). */
  async step(name: PaymentStep): Promise<void> {
    if (this.afterStep) await this.afterStep(name)
  }

  /**
   * The refunds by line (refunds.service.ts) register here, so that the reconcile job finishes theirs too: it
   * answers `undefined` when the order has no refund by line pending, else what finishing it did (`refunded`, or
   * `unchanged` when Stripe refused it and it was dropped); a failure to reach Stripe throws (the next run retries).
   */
  pendingRefunds: ((orderId: number, log: PaymentsLog) => Promise<EventOutcome | undefined>) | undefined

  get remote(): RemoteProvider | undefined {
    return this.provider.name === 'stripe' ? this.provider : undefined
  }

  // ---- POST /orders/:id/payment ----

  /**
   * The payment of the caller's own pending order (`ownerId`), or of the order a guest's link opened (`ownerId` null). With Stripe: the order's PaymentIntent, created once under an
   * idempotency key (racing calls get the same one), the same one while it can be paid, a new one once canceled.
   */
  async startPayment(ownerId: number | null, orderId: number, log: PaymentsLog = this.log): Promise<PaymentAnswer> {
    const { db, config } = this
    const order = await repo.findOrderForPayment(db, orderId)
    // `ownerId` null: the order was opened by its order token (a guest's link), which names it.
    if (!order || (ownerId !== null && order.user_id !== ownerId)) throw new AppError(404, 'orderNotFound')
    if (order.status !== 'pending') throw new AppError(409, 'orderNotPayable')
    const existing = await repo.findPayment(db, orderId)
    const provider = this.remote
    if (!provider) {
      return paymentSummary(existing ?? { provider: 'manual', status: 'unpaid', amount_cents: order.total_cents, currency: config.currency, refunded_cents: 0 })
    }
    if (existing?.intent_id) {
      const intent = await this.call(log, orderId, () => provider.retrieveIntent(existing.intent_id as string))
      if (intent.status !== 'canceled') return answer(provider, existing, intent)
    }
    const attempt = (existing?.intent_attempt ?? 0) + 1
    const intent = await this.call(log, orderId, () =>
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
    if (!stored) throw new AppError(404, 'orderNotFound')
    // A racing call stored a newer intent: answer that one.
    if (stored.intent_id !== intent.id && stored.intent_id !== null) {
      return answer(provider, stored, await this.call(log, orderId, () => provider.retrieveIntent(stored.intent_id as string)))
    }
    return answer(provider, stored, intent)
  }

  /** A call to the provider that did not succeed is a 502; its cause goes to the log. */
  private async call<T>(log: PaymentsLog, orderId: number, call: () => Promise<T>): Promise<T> {
    try {
      return await call()
    } catch (error) {
      log.warn({ orderId, err: error }, 'the payment provider did not answer')
      throw new AppError(502, 'paymentProviderUnavailable', { cause: error })
    }
  }

  // ---- the lifecycle's hook: what an order move means for its payment ----

  private lifecycleHook(): LifecycleHook {
    return {
      prepare: (move) => this.prepareMove(move),
      apply: (trx, move) => this.applyMove(trx, move),
      afterCommit: (move) => this.afterMove(move),
    }
  }

  /**
   * Before the move's transaction (network calls belong here):
   * - an admin's move to `paid` is refused (409) while the order's card payment has succeeded or is under way:
   *   the customer would pay twice. Stripe is asked when the shop has not heard yet;
   * - cancelling a paid order refunds it first: the refund is recorded and committed, Stripe called, and the move
   *   (whose transaction settles the refund) goes on only once Stripe has refunded. A refusal is a 502 and changes
   *   nothing; a timeout is a 502 too, and leaves the refund pending for the admin's retry or the reconcile job.
   */
  private async prepareMove(move: OrderMove): Promise<void> {
    const provider = this.remote
    if (!provider) return
    if (move.to === 'paid' && move.cause === 'admin') {
      const row = await repo.findPayment(this.db, move.orderId)
      if (row?.status === 'processing') throw new AppError(409, 'paidByCard')
      if (row?.intent_id && (row.status === 'unpaid' || row.status === 'failed')) {
        const intentId = row.intent_id
        const intent = await this.call(move.log, move.orderId, () => provider.retrieveIntent(intentId))
        if (intent.status === 'succeeded' || intent.status === 'processing') throw new AppError(409, 'paidByCard')
      }
      return
    }
    if (move.from === 'paid' && move.to === 'cancelled') await this.refundBeforeCancel(provider, move)
  }

  private async refundBeforeCancel(provider: RemoteProvider, move: OrderMove): Promise<void> {
    const row = await this.db.transaction().execute(async (trx) => {
      const order = await this.lifecycle.lock(trx, move.orderId)
      if (order?.status !== 'paid') throw new AppError(409, 'transitionNotAllowed', order?.status ?? move.from, move.to)
      const payment = await repo.lockPayment(trx, move.orderId)
      if (!payment || !needsCardRefund(payment)) return undefined
      // A refund by line still waiting for Stripe holds the marker: the rest is known only once it settles.
      if (payment.refund_pending_at !== null && (await repo.hasPendingLineRefund(trx, move.orderId))) throw new AppError(409, 'refundInProgress')
      await repo.markRefundPending(trx, move.orderId, Number(payment.amount_cents) - Number(payment.refunded_cents), nowIso())
      return repo.findPayment(trx, move.orderId)
    })
    if (!row) return
    await this.step('refund-pending')
    await this.refundPending(provider, row, move.log)
    await this.step('refund-made')
  }

  /** Asks the provider for the pending refund of `row`; a failure is the 502, after dropping a refused one. */
  private async refundPending(provider: RemoteProvider, row: PaymentRow, log: PaymentsLog): Promise<void> {
    if (row.intent_id === null) return
    const intentId = row.intent_id
    try {
      const amountCents = row.refund_pending_cents === null ? undefined : Number(row.refund_pending_cents)
      await provider.refund({ intentId, idempotencyKey: refundKey(row.order_id, row.refund_attempt), amountCents })
    } catch (error) {
      const definite = error instanceof RefundError && error.definite
      log.error({ orderId: row.order_id, attempt: row.refund_attempt, definite }, 'refund failed')
      // A refusal: nothing was refunded, the pending refund goes, and the next attempt must not replay this
      // refusal (Stripe keeps an answer under its key for 24 h). A timeout keeps both: the retry reuses the key.
      if (definite) await repo.dropRefundPending(this.db, row.order_id, row.refund_attempt, nowIso())
      throw new AppError(502, 'refundFailed', { cause: error })
    }
  }

  /** Inside the move's transaction, with the order row locked: the payment row follows the move. */
  private async applyMove(trx: Trx, move: OrderMove): Promise<void> {
    const now = nowIso()
    const row = await repo.lockPayment(trx, move.orderId)
    if (move.to === 'paid') {
      if (move.cause === 'payment') {
        await repo.movePayment(trx, move.orderId, ACTIVE, 'paid', now)
        await this.step('payment-moved')
        return
      }
      // An admin marked it paid (money taken by other means): the card is not how it was paid.
      if (row?.status === 'processing') throw new AppError(409, 'paidByCard')
      if (!row) await this.insertManual(trx, move.orderId, 'paid', now)
      else await repo.markPaidManually(trx, move.orderId, now)
      return
    }
    if (move.from === 'paid' && row?.refund_pending_at && move.to !== 'cancelled') throw new AppError(409, 'refundInProgress')
    if (move.from !== 'paid' || move.to !== 'cancelled') return
    if (!row) {
      const cents = await this.insertManual(trx, move.orderId, 'refunded', now)
      await this.recordRefund(trx, move.orderId, cents, 'manual', move.actorId, now)
      return
    }
    if (needsCardRefund(row)) {
      // The refund was made before this transaction (prepareMove); it settles here, with the cancel.
      if (row.refund_pending_at === null) throw new AppError(409, 'transitionNotAllowed', 'paid', 'cancelled')
      const settled = await repo.settleRefundPending(trx, row, now)
      await this.recordRefund(trx, move.orderId, settled, 'stripe', move.actorId, now)
      await this.step('payment-moved')
      return
    }
    // Paid by the shop's own means (manual, or marked paid by an admin): refunded by them too.
    const rest = Number(row.amount_cents) - Number(row.refunded_cents)
    await repo.addRefunded(trx, row, rest, now)
    await repo.movePayment(trx, move.orderId, ['paid'], 'refunded', now)
    if (rest > 0) await this.recordRefund(trx, move.orderId, rest, 'manual', move.actorId, now)
  }

  /** After the commit: an intent that must no longer be paid is cancelled; money a cancelled order received goes back. */
  private async afterMove(move: OrderMove): Promise<void> {
    if (!this.remote) return
    const adminPaid = move.to === 'paid' && move.cause === 'admin'
    if (!adminPaid && !(move.from === 'pending' && move.to === 'cancelled')) return
    const row = await repo.findPayment(this.db, move.orderId)
    if (!row?.intent_id) return
    await this.cancelIntentQuietly(move.log, move.orderId, row.intent_id)
    // A success that did not match the order (amount or currency) took money that was never applied.
    if (move.to === 'cancelled' && row.received_cents !== null && Number(row.received_cents) > 0) {
      await this.returnMoney(move.orderId, move.log).catch((error: unknown) => {
        move.log.warn({ orderId: move.orderId, err: error }, 'could not refund a mismatched payment yet: the reconcile job will')
      })
    }
  }

  /** A manual payment's row, paid by the shop's own means (or refunded by them); returns the amount, 0 without an order. */
  private async insertManual(trx: Trx, orderId: number, status: 'paid' | 'refunded', now: string): Promise<number> {
    const order = await repo.findOrderForPayment(trx, orderId)
    if (!order) return 0
    await repo.insertPayment(trx, {
      order_id: orderId,
      provider: 'manual',
      status,
      amount_cents: order.total_cents,
      currency: this.config.currency,
      created_at: now,
      paid_manually: 1,
      refunded_cents: status === 'refunded' ? order.total_cents : 0,
    })
    return order.total_cents
  }

  private async recordRefund(
    trx: Trx,
    orderId: number,
    cents: number,
    provider: 'manual' | 'stripe',
    actorId: number | null,
    now: string,
    reason: string | null = null,
  ) {
    if (cents <= 0) return
    await repo.insertRefund(trx, {
      order_id: orderId,
      amount_cents: cents,
      provider,
      provider_ref: null,
      reason,
      actor_type: actorId === null ? 'system' : 'user',
      actor_id: actorId,
      actor_name: null,
      created_at: now,
    })
  }

  private async cancelIntentQuietly(log: PaymentsLog, orderId: number, intentId: string): Promise<void> {
    const provider = this.remote
    if (!provider) return
    try {
      await provider.cancelIntent(intentId)
    } catch (error) {
      // A success that still comes is refunded when its event (or the reconcile job) arrives.
      log.warn({ orderId, err: error }, 'could not cancel the payment intent')
    }
  }

  /**
   * Gives back money the shop must not keep: a success on an order cancelled meanwhile (or a mismatched one, once
   * its order is cancelled). Recorded, committed, refunded, settled; with `eventId`, the event is recorded with the
   * settlement (so a failure leaves it unrecorded and Stripe's redelivery tries again). A 502 when the provider fails.
   */
  private async returnMoney(orderId: number, log: PaymentsLog, eventId?: { id: string; type: string }): Promise<EventOutcome> {
    const provider = this.remote
    if (!provider) return 'unchanged'
    const row = await this.db.transaction().execute(async (trx) => {
      await this.lifecycle.lock(trx, orderId)
      const payment = await repo.lockPayment(trx, orderId)
      if (!payment || !owesCardMoney(payment) || payment.intent_id === null) return undefined
      await repo.markRefundPending(trx, orderId, Number(payment.received_cents ?? payment.amount_cents), nowIso())
      return repo.findPayment(trx, orderId)
    })
    if (!row) return 'unchanged'
    await this.step('refund-pending')
    // The whole of what the intent received (no amount: Stripe refunds all that is left).
    await this.refundPending(provider, { ...row, refund_pending_cents: null }, log)
    await this.step('refund-made')
    const outcome = await this.db.transaction().execute(async (trx) => {
      const now = nowIso()
      if (eventId !== undefined) {
        if (!(await repo.recordEvent(trx, eventId.id, eventId.type, now))) return 'duplicate' as const
        await this.step('event-recorded')
      }
      await this.lifecycle.lock(trx, orderId)
      const payment = await repo.lockPayment(trx, orderId)
      if (!payment || !owesCardMoney(payment) || payment.refund_pending_at === null) return 'unchanged' as const
      if (payment.status === 'paid') {
        // A second payment (the admin had marked the order paid): the card's money went back, the order stays paid.
        await repo.clearSecondCharge(trx, orderId, 'paid twice (marked paid, then by card): the card payment was refunded', now)
        await this.recordRefund(trx, orderId, Number(payment.refund_pending_cents ?? 0), 'stripe', null, now, 'second payment')
        await this.step('payment-moved')
        return 'refunded' as const
      }
      const settled = await repo.settleRefundPending(trx, payment, now)
      await this.recordRefund(trx, orderId, settled, 'stripe', null, now)
      await this.step('payment-moved')
      return 'refunded' as const
    })
    await this.step('committed')
    return outcome
  }

  // ---- Stripe events (the webhook and the reconcile job) ----

  /**
   * Applies what Stripe says about an intent, once and only forward: with an event id, a duplicate delivery is
   * ignored (the id is unique); the order row, then the payment row, are locked while they are read and changed
   * (the lifecycle's lock order), so concurrent deliveries, a cancel and the expiry take turns; no event moves a
   * `paid` or `refunded` payment back. The intent is matched by the id the shop stored, never by its metadata.
   */
  async applyIntentEvent(
    event: { id?: string; type: IntentEventType; intent: { id: string; amountReceivedCents: number; currency: string } },
    log: PaymentsLog = this.log,
  ): Promise<{ outcome: EventOutcome; orderId?: number }> {
    const orderId = await repo.findOrderOfIntent(this.db, event.intent.id)
    let after: () => Promise<void> = async () => {}
    const result = await this.db.transaction().execute(async (trx): Promise<{ outcome: EventOutcome; orderId?: number }> => {
      const now = nowIso()
      if (orderId === undefined) {
        if (event.id !== undefined) await repo.recordEvent(trx, event.id, event.type, now)
        return { outcome: 'unknown-intent' }
      }
      const done = (outcome: EventOutcome) => ({ outcome, orderId })
      const order = await this.lifecycle.lock(trx, orderId)
      const row = await repo.lockPayment(trx, orderId)
      if (!order || !row) return { outcome: 'unknown-intent' }
      // Money to give back is settled apart, with the event (returnMoney): nothing is recorded here. That is a
      // success on a cancelled order, or on one an admin marked paid meanwhile (the customer would pay twice).
      if (event.type === 'payment_intent.succeeded' && (order.status === 'cancelled' ? ACTIVE.includes(row.status) : isManuallyPaid(row))) {
        return done('refunded')
      }
      if (event.id !== undefined) {
        if (!(await repo.recordEvent(trx, event.id, event.type, now))) return done('duplicate')
        await this.step('event-recorded')
      }
      const moved = async (yes: boolean) => {
        if (yes) await this.step('payment-moved')
        return yes
      }
      switch (event.type) {
        case 'payment_intent.processing':
          return done((await moved(await repo.movePayment(trx, orderId, ['unpaid', 'failed'], 'processing', now))) ? 'processing' : 'unchanged')
        case 'payment_intent.payment_failed':
        case 'payment_intent.canceled':
          return done((await moved(await repo.movePayment(trx, orderId, ['unpaid', 'processing'], 'failed', now))) ? 'failed' : 'unchanged')
        case 'payment_intent.succeeded': {
          if (!ACTIVE.includes(row.status)) return done('unchanged')
          const { amountReceivedCents, currency } = event.intent
          if (amountReceivedCents !== Number(row.amount_cents) || currency.toUpperCase() !== row.currency) {
            const what = `received ${amountReceivedCents} ${currency.toUpperCase()}, expected ${row.amount_cents} ${row.currency}`
            await repo.recordMismatch(trx, orderId, what, amountReceivedCents, now)
            log.error({ eventId: event.id, orderId }, 'payment amount or currency does not match the order: not applied; refunded if the order is cancelled')
            return done('mismatch')
          }
          if (order.status === 'pending') {
            after = await this.lifecycle.moveWithin(trx, { orderId, from: 'pending', to: 'paid', cause: 'payment', actorId: null, audit: null, log })
            await this.step('order-paid')
            return done('paid')
          }
          // Marked paid by an admin meanwhile (or moved on since): the card's money is the order's now.
          await repo.movePayment(trx, orderId, ACTIVE, 'paid', now)
          await this.step('payment-moved')
          return done('paid')
        }
      }
    })
    if (result.outcome === 'refunded' && result.orderId !== undefined) {
      // Paid after the order was cancelled (by its owner, an admin or the expiry): the money goes back.
      const outcome = await this.returnMoney(result.orderId, log, event.id === undefined ? undefined : { id: event.id, type: event.type })
      return { outcome: outcome === 'unchanged' ? 'refunded' : outcome, orderId: result.orderId }
    }
    await this.step('committed')
    await after()
    return result
  }

  /**
   * What Stripe says of a charge, beyond the intents: a refund made in its dashboard (`charge.refunded`, whose
   * `amount_refunded` is the charge's running total) is recorded as a refund by the system, so that
   * `payment.status` and `refundedAmount` stay true (the shop's own refunds, settled or pending, are already
   * counted: only the difference is new); a dispute (`charge.dispute.created`) goes on the order's timeline, and
   * to the admins by e-mail. Neither changes the order's status. Applied once per event id, under the order's lock.
   */
  async applyChargeEvent(
    event: { id: string; type: ChargeEventType; intentId: string; chargeId: string; amountCents: number; reason: string | null },
    log: PaymentsLog = this.log,
  ): Promise<{ outcome: EventOutcome | 'disputed'; orderId?: number }> {
    const orderId = await repo.findOrderOfIntent(this.db, event.intentId)
    return this.db.transaction().execute(async (trx): Promise<{ outcome: EventOutcome | 'disputed'; orderId?: number }> => {
      const now = nowIso()
      if (!(await repo.recordEvent(trx, event.id, event.type, now))) return { outcome: 'duplicate' }
      if (orderId === undefined) return { outcome: 'unknown-intent' }
      await this.lifecycle.lock(trx, orderId)
      const row = await repo.lockPayment(trx, orderId)
      if (!row) return { outcome: 'unknown-intent' }
      const system = { actor_type: 'system' as const, actor_id: null, actor_name: null }
      if (event.type === 'charge.dispute.created') {
        const data = { disputeId: event.chargeId, amount: event.amountCents / 100, currency: row.currency, reason: event.reason }
        await appendOrderEvent(trx, { orderId, type: 'payment.disputed', at: now, actor: systemActor, data })
        await this.notifyDispute(trx, orderId, data)
        log.warn({ eventId: event.id, orderId }, 'a payment of the order is disputed')
        return { outcome: 'disputed', orderId }
      }
      const known = Number(row.refunded_cents) + Number(row.refund_pending_cents ?? 0)
      const outside = event.amountCents - known
      if (outside <= 0) return { outcome: 'unchanged', orderId }
      await repo.addRefunded(trx, row, outside, now)
      const refund = {
        order_id: orderId,
        amount_cents: outside,
        provider: 'stripe' as const,
        provider_ref: event.chargeId,
        reason: 'charge.refunded',
        ...system,
        created_at: now,
      }
      const refundId = await repo.insertRefund(trx, refund)
      await appendOrderEvent(trx, {
        orderId,
        type: 'order.refunded',
        at: now,
        actor: systemActor,
        data: { amount: outside / 100, currency: row.currency, source: 'stripe' },
      })
      // A refund like the shop's own: announced (`order.refunded`, and so the customer's `order-refunded`).
      if (this.events) {
        const shown = toRefund({ ...refund, id: refundId, shipping_cents: 0, tax_cents: 0 }, [])
        const order = await loadOrder(trx, { provider: this.provider.name, currency: this.config.currency }, orderId)
        await this.events.emit(trx, { type: 'order.refunded', data: { order, refund: shown } })
      }
      log.info({ eventId: event.id, orderId, cents: outside }, 'a refund made in Stripe was recorded')
      return { outcome: 'refunded', orderId }
    })
  }

  /** The dispute's e-mail to ADMIN_NOTIFY_EMAIL, queued in the event's transaction. */
  private async notifyDispute(trx: Trx, orderId: number, dispute: { disputeId: string; amount: number; currency: string; reason: string | null }) {
    const messages = this.adminEmails.map((to) => ({ template: 'admin-payment-disputed' as const, to, data: { orderId, ...dispute } }))
    if (messages.length > 0) await enqueueEmail(trx, ...messages)
  }

  // ---- jobs ----

  /**
   * Finishes what a crash or a timeout left half done, then asks Stripe about the intent of each pending order
   * (older than `olderThanMs`; every one without it) and of orders cancelled in the last 24 hours with an unsettled
   * payment, and applies what it says by the webhook's rules (a success on a cancelled order is refunded). Returns
   * what changed.
   */
  async reconcile(options: { olderThanMs?: number; pendingRefundAgeMs?: number } = {}): Promise<Array<{ orderId: number; outcome: EventOutcome }>> {
    const { db, log } = this
    const provider = this.remote
    const changes: Array<{ orderId: number; outcome: EventOutcome }> = []
    if (!provider) return changes
    const pendingBefore = new Date(Date.now() - (options.pendingRefundAgeMs ?? PENDING_REFUND_AGE_MS)).toISOString()
    for (const pending of await repo.listPendingRefunds(db, pendingBefore)) {
      try {
        const byLine = this.pendingRefunds ? await this.pendingRefunds(pending.order_id, log) : undefined
        if (byLine !== undefined) {
          if (byLine === 'refunded') changes.push({ orderId: pending.order_id, outcome: byLine })
        } else if (pending.status === 'paid') {
          // An admin's cancel whose refund was recorded and never settled: the same key, then the cancel.
          await this.lifecycle.move({
            orderId: pending.order_id,
            to: 'cancelled',
            cause: 'admin',
            actorId: null,
            audit: systemSource('payments-reconcile'),
            log,
          })
          changes.push({ orderId: pending.order_id, outcome: 'cancelled' })
        } else {
          const outcome = await this.returnMoney(pending.order_id, log)
          if (outcome === 'refunded') changes.push({ orderId: pending.order_id, outcome })
        }
      } catch (error) {
        log.warn({ orderId: pending.order_id, err: error }, 'reconcile: could not finish a pending refund')
      }
    }
    const before = options.olderThanMs === undefined ? undefined : new Date(Date.now() - options.olderThanMs).toISOString()
    const cancelledSince = new Date(Date.now() - CANCELLED_WATCH_MS).toISOString()
    for (const { order_id: orderId, intent_id: intentId } of await repo.listOpenIntents(db, { before, cancelledSince })) {
      if (intentId === null) continue
      let intent: RemoteIntent
      try {
        intent = await provider.retrieveIntent(intentId)
      } catch (error) {
        log.warn({ orderId, err: error }, 'reconcile: Stripe did not answer about an intent')
        continue
      }
      const type = intentEventType(intent.status)
      if (type === undefined) continue
      try {
        const { outcome } = await this.applyIntentEvent({ type, intent })
        if (outcome !== 'unchanged' && outcome !== 'unknown-intent') changes.push({ orderId, outcome })
      } catch (error) {
        // A refund Stripe did not make: the next run tries again.
        log.warn({ orderId, err: error }, 'reconcile: could not apply an intent')
      }
    }
    return changes
  }

  /**
   * Cancels the pending orders still unpaid ORDER_PAYMENT_TTL after their creation, through the lifecycle (their
   * units come back, their intents are cancelled). A payment under way or done holds its order. Returns the ids.
   */
  async expireUnpaidOrders(options: { batch?: number } = {}): Promise<number[]> {
    const ttl = this.config.orderPaymentTtlMs
    if (ttl <= 0) return []
    const before = new Date(Date.now() - ttl).toISOString()
    const expired: number[] = []
    for (const candidate of await repo.listExpiredOrders(this.db, before, options.batch ?? 100)) {
      const after = await this.db.transaction().execute(async (trx) => {
        const order = await this.lifecycle.lock(trx, candidate.id)
        if (order?.status !== 'pending') return undefined
        // A payment that landed meanwhile either committed first (this changes nothing) or finds the order
        // cancelled (and is refunded).
        const row = await repo.lockPayment(trx, candidate.id)
        if (row && !['unpaid', 'failed'].includes(row.status)) return undefined
        return this.lifecycle.moveWithin(trx, {
          orderId: candidate.id,
          from: 'pending',
          to: 'cancelled',
          cause: 'expiry',
          actorId: null,
          audit: systemSource('order-expiry'),
          log: this.log,
        })
      })
      if (!after) continue
      expired.push(candidate.id)
      await after()
    }
    if (expired.length > 0) this.log.info({ orders: expired }, 'unpaid orders expired; their stock is back')
    return expired
  }
}

/** An order an admin marked paid while it had an intent: a card success after that is a second payment. */
function isManuallyPaid(row: PaymentRow): boolean {
  return row.status === 'paid' && row.paid_manually === 1 && row.intent_id !== null
}

/** The intent holds money the shop must give back: never applied (still active), or a second payment. */
function owesCardMoney(row: PaymentRow): boolean {
  return ACTIVE.includes(row.status) || isManuallyPaid(row)
}

/** A card payment the provider holds and must refund: Stripe's, paid by card (not marked paid by an admin). */
export function needsCardRefund(row: PaymentRow): boolean {
  return row.provider === 'stripe' && row.intent_id !== null && row.status === 'paid' && row.paid_manually === 0
}

function answer(provider: RemoteProvider, row: PaymentRow, intent: RemoteIntent): PaymentAnswer {
  return {
    ...paymentSummary(row),
    ...(intent.clientSecret !== null ? { clientSecret: intent.clientSecret } : {}),
    ...(provider.publishableKey !== null ? { publishableKey: provider.publishableKey } : {}),
  }
}

function intentEventType(status: string): IntentEventType | undefined {
  if (status === 'succeeded') return 'payment_intent.succeeded'
  if (status === 'processing') return 'payment_intent.processing'
  if (status === 'canceled') return 'payment_intent.canceled'
  return undefined
}
