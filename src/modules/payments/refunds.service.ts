import { appendOrderEvent, systemActor } from '../orders/order-timeline.js'
import { createHash } from 'node:crypto'
import type { Kysely, Transaction } from 'kysely'
import type { Database, PaymentRow } from '../../db/database.js'
import { AppError, messages } from '../../shared/errors.js'
import type { EventSink } from '../../shared/event-sink.js'
import { centsToAmount, parseCents } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import type { Inventory } from '../inventory/inventory.service.js'
import type { OrderLifecycle } from '../orders/order-lifecycle.js'
import { loadOrder, type PaymentDefaults, toRefund } from '../orders/order-view.js'
import { refundAmounts } from '../totals/refunds.js'
import { RefundError } from './providers/provider.js'
import { type AuditSource, recordAudit, systemSource } from '../staff/audit-log.js'
import * as repo from './payments.repository.js'
import { type EventOutcome, needsCardRefund, type PaymentsLog, type PaymentsService } from './payments.service.js'
import type { Refund, RefundInput, RefundPreview } from './refunds.schemas.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

/** How long an `Idempotency-Key` names the same refund of an order. */
const KEY_TTL_MS = 24 * 60 * 60_000

/**
 * Stripe's idempotency key of a refund by line: the order, the first 16 hex digits of the SHA-256 of the request's
 * `Idempotency-Key` (the key itself may hold anything printable; the hash keeps Stripe's key short and plain), and
 * the attempt, which moves on only after Stripe refused (Stripe replays an answer under the same key for 24 hours).
 */
export function lineRefundKey(orderId: number, idempotencyKey: string, attempt: number): string {
  const hash = createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 16)
  return `refund-order-${orderId}-${hash}-${attempt}`
}

/** Who refunds: the admin's id (the refund's `actor` adds their name as it is then), or an API key. */
export interface RefundActor {
  id: number
  apiKey?: { id: number; name: string }
}

export interface RefundsDeps {
  db: Db
  payments: PaymentsService
  lifecycle: OrderLifecycle
  inventory: Inventory
  events: EventSink
  defaults: PaymentDefaults
}

/** An amount of the body in cents: a number with at most 2 decimals (the schema bounds it). */
function cents(field: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined
  const parsed = parseCents(value)
  if (parsed === null) throw new ValidationError(`${field} must be a number conforming to the specified constraints`, field)
  return parsed
}

/** Amounts inside messages: `23.00 EUR`. */
function inMessage(amountCents: number, currency: string): string {
  return `${centsToAmount(amountCents).toFixed(2)} ${currency}`
}

interface PlannedLine {
  id: number
  productId: number
  variantId: number | null
  units: number
  /** Of the units, how many had not shipped (they count as cancelled: they will never ship). */
  cancelled: number
  restock: boolean
  amountCents: number
  taxCents: number
}

/** A refund as the checks found it possible: what it gives back, line by line. */
interface Plan {
  payment: PaymentRow
  currency: string
  lines: PlannedLine[]
  shippingCents: number
  taxCents: number
  amountCents: number
  refundableCents: number
}

/**
 * Refunds by line (POST /orders/:id/refunds and its preview). The amounts come from the totals module's refund
 * arithmetic (src/modules/totals/refunds.ts); the checks run in the documented order inside the transaction that
 * writes, with the order row locked (then its payment row, the lifecycle's lock order), so two refunds of an order
 * take turns and never give back the same unit twice.
 *
 * With the manual provider (and a Stripe order an admin marked paid: the shop took that money by its own means) the
 * refund is recorded in one transaction. Through Stripe the payments module's pending discipline holds: the refund
 * is written and committed as pending (its units counted, so no other refund takes them, and the payment's marker
 * set, so a `charge.refunded` webhook arriving meanwhile is not taken for a refund made in Stripe's dashboard),
 * Stripe is called outside any transaction, and a second transaction settles it (stock, payment, timeline, event,
 * e-mail). Stripe refusing drops the pending refund: nothing stays recorded. Stripe not answering leaves it pending:
 * the same request repeated (same key) or the reconcile job finishes it under the same Stripe key.
 */
export class RefundsService {
  private readonly db: Db
  private readonly payments: PaymentsService
  private readonly lifecycle: OrderLifecycle
  private readonly inventory: Inventory
  private readonly events: EventSink
  private readonly defaults: PaymentDefaults

  constructor(deps: RefundsDeps) {
    this.db = deps.db
    this.payments = deps.payments
    this.lifecycle = deps.lifecycle
    this.inventory = deps.inventory
    this.events = deps.events
    this.defaults = deps.defaults
    this.payments.pendingRefunds = (orderId, log) => this.finishPending(orderId, log)
  }

  /** What the refund would give back now, by the same checks (nothing written). */
  async preview(orderId: number, input: RefundInput): Promise<RefundPreview> {
    const body = checkBody(input)
    // Read in one transaction for a consistent view, locking nothing: a preview writes nothing.
    const plan = await this.db.transaction().execute(async (trx) => this.plan(trx, orderId, input, body, false))
    return {
      amount: centsToAmount(plan.amountCents),
      items: plan.lines.map((line) => ({
        orderItemId: line.id,
        quantity: line.units,
        amount: centsToAmount(line.amountCents),
        tax: centsToAmount(line.taxCents),
      })),
      shippingAmount: centsToAmount(plan.shippingCents),
      taxAmount: centsToAmount(plan.taxCents),
      refundable: centsToAmount(plan.refundableCents),
    }
  }

  /**
   * Makes a refund; `created: false` when `key` already made one on this order in the last 24 hours (that refund is
   * the answer, and nothing is done again). A pending refund under the same key is finished, not made twice.
   */
  async create(
    orderId: number,
    key: string,
    input: RefundInput,
    actor: RefundActor,
    log: PaymentsLog,
    audit: AuditSource,
  ): Promise<{ refund: Refund; created: boolean }> {
    const body = checkBody(input)
    const first = await this.db.transaction().execute(async (trx) => this.begin(trx, orderId, key, input, body, actor, audit))
    if (first.kind === 'replay') return { refund: await this.loadRefund(first.id), created: false }
    await this.finish(orderId, first, log, audit)
    return { refund: await this.loadRefund(first.id), created: true }
  }

  /**
   * A refund made inside another change's transaction (a return's receipt): written there by create()'s rules, with
   * the same key discipline. A refund the shop pays back by its own means is settled in `trx`; one through Stripe is
   * left pending in it, and `after` (to call once `trx` has committed, never inside it) asks Stripe and settles it:
   * its 502 then leaves the change made and the refund undone (a refusal) or pending (no answer: finished by a
   * repeat or the reconcile job).
   */
  async refundWithin(
    trx: Trx,
    orderId: number,
    key: string,
    input: RefundInput,
    actor: RefundActor,
  ): Promise<{ refundId: number; after: (log: PaymentsLog) => Promise<void> }> {
    // Part of the return's receipt, which is the staff's change: no entry of its own.
    const first = await this.begin(trx, orderId, key, input, checkBody(input), actor, null)
    return { refundId: first.id, after: async (log) => (first.kind === 'replay' ? undefined : this.finish(orderId, first, log, null)) }
  }

  /**
   * The first transaction's part: the key, the checks, the refund written (settled, or pending for Stripe). `replay`:
   * the key made this refund already.
   */
  private async begin(
    trx: Trx,
    orderId: number,
    key: string,
    input: RefundInput,
    body: ReturnType<typeof checkBody>,
    actor: RefundActor,
    audit: AuditSource | null,
  ): Promise<{ kind: 'replay' | 'made' | 'resume'; id: number }> {
    const now = nowIso()
    const cutoff = new Date(Date.now() - KEY_TTL_MS).toISOString()
    // The order row first (404 before anything else), then the key: a repeat waits for the first request's commit.
    if (!(await this.lifecycle.lock(trx, orderId))) throw new AppError(404, 'orderNotFound')
    const keyRow = await trx.selectFrom('refund_keys').selectAll().where('order_id', '=', orderId).where('key', '=', key).executeTakeFirst()
    const fresh = keyRow !== undefined && keyRow.created_at >= cutoff
    if (fresh && keyRow.refund_id !== null) {
      const made = await trx.selectFrom('refunds').select(['id', 'pending_at']).where('id', '=', keyRow.refund_id).executeTakeFirst()
      if (made) return { kind: made.pending_at === null ? 'replay' : 'resume', id: made.id }
    }
    const plan = await this.plan(trx, orderId, input, body)
    const throughStripe = needsCardRefund(plan.payment) && plan.amountCents > 0 && this.payments.remote !== undefined
    const actorName =
      actor.apiKey !== undefined
        ? actor.apiKey.name
        : ((await trx.selectFrom('users').select('name').where('id', '=', actor.id).executeTakeFirst())?.name ?? null)
    const refundId = await this.write(trx, orderId, plan, input.reason ?? null, actor, actorName, throughStripe ? now : null, now)
    // A key seen before (a refusal's, or one older than 24 hours) keeps counting its attempts: Stripe's key is new.
    const attempt = keyRow === undefined ? 1 : fresh ? keyRow.attempt : keyRow.attempt + 1
    await trx
      .insertInto('refund_keys')
      .values({ order_id: orderId, key, attempt, refund_id: refundId, created_at: fresh ? keyRow.created_at : now })
      .onConflict((oc) => oc.columns(['order_id', 'key']).doUpdateSet({ attempt, refund_id: refundId, created_at: fresh ? keyRow.created_at : now }))
      .execute()
    if (!throughStripe) {
      if (await this.settle(trx, orderId, refundId, now)) await this.recordRefund(trx, refundId, audit)
      return { kind: 'made', id: refundId }
    }
    await repo.markRefundPending(trx, orderId, plan.amountCents, now)
    return { kind: 'resume', id: refundId }
  }

  /** After the first transaction committed: Stripe asked and the refund settled (nothing to do for a settled one). */
  private async finish(orderId: number, first: { kind: 'replay' | 'made' | 'resume'; id: number }, log: PaymentsLog, audit: AuditSource | null): Promise<void> {
    if (first.kind === 'made') {
      await this.payments.step('committed')
      return
    }
    if (first.kind !== 'resume') return
    await this.payments.step('refund-pending')
    await this.callStripe(orderId, first.id, log, audit)
  }

  /**
   * The reconcile job's part (PaymentsService.reconcile): the order's refund by line still pending, asked of Stripe
   * again under its key and settled; `undefined` when the order has none.
   */
  async finishPending(orderId: number, log: PaymentsLog): Promise<EventOutcome | undefined> {
    const pending = await this.db.selectFrom('refunds').select('id').where('order_id', '=', orderId).where('pending_at', 'is not', null).executeTakeFirst()
    if (!pending) return undefined
    try {
      await this.callStripe(orderId, pending.id, log, systemSource('payments-reconcile'))
      return 'refunded'
    } catch (error) {
      if (error instanceof AppError && error.key === 'refundFailed' && !(await this.isPending(pending.id))) return 'unchanged'
      throw error
    }
  }

  private async isPending(refundId: number): Promise<boolean> {
    const row = await this.db.selectFrom('refunds').select('pending_at').where('id', '=', refundId).executeTakeFirst()
    return row !== undefined && row.pending_at !== null
  }

  /** Asks Stripe for the pending refund under its key, then settles it; a refusal drops it. 502 when not refunded. */
  private async callStripe(orderId: number, refundId: number, log: PaymentsLog, audit: AuditSource | null): Promise<void> {
    const provider = this.payments.remote
    const row = await this.db
      .selectFrom('refunds as r')
      .innerJoin('refund_keys as k', 'k.refund_id', 'r.id')
      .innerJoin('payments as p', 'p.order_id', 'r.order_id')
      .select(['r.amount_cents', 'r.pending_at', 'k.key', 'k.attempt', 'p.intent_id'])
      .where('r.id', '=', refundId)
      .executeTakeFirst()
    if (!row || row.pending_at === null) return
    if (!provider || row.intent_id === null) throw new AppError(502, 'refundFailed')
    const intentId = row.intent_id
    try {
      await provider.refund({ intentId, idempotencyKey: lineRefundKey(orderId, row.key, row.attempt), amountCents: Number(row.amount_cents) })
    } catch (error) {
      const definite = error instanceof RefundError && error.definite
      log.error({ orderId, refundId, attempt: row.attempt, definite }, 'refund failed')
      // Refused: nothing was refunded, so nothing of it stays, and the key's next attempt is a new Stripe key. Not
      // answered: it stays pending; the same request again, or the reconcile job, asks under the same key.
      if (definite) await this.drop(orderId, refundId)
      throw new AppError(502, 'refundFailed', { cause: error })
    }
    await this.payments.step('refund-made')
    await this.db.transaction().execute(async (trx) => {
      await this.lifecycle.lock(trx, orderId)
      if (await this.settle(trx, orderId, refundId, nowIso())) await this.recordRefund(trx, refundId, audit)
    })
    await this.payments.step('committed')
  }

  /**
   * A refund's audit entry, written when it settles (in that transaction): a refund through Stripe counts once Stripe
   * made it, so one it refuses (dropped) leaves no entry.
   */
  private async recordRefund(trx: Trx, refundId: number, audit: AuditSource | null): Promise<void> {
    const refund = await this.loadRefund(refundId, trx)
    await recordAudit(trx, { by: audit, action: 'refund.create', entityType: 'refund', entityId: refundId, before: null, after: refund })
  }

  /** Undoes a pending refund Stripe refused: its rows, its units, the payment's marker; the key's attempt moves on. */
  private async drop(orderId: number, refundId: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await this.lifecycle.lock(trx, orderId)
      const refund = await trx.selectFrom('refunds').select(['id', 'pending_at']).where('id', '=', refundId).executeTakeFirst()
      if (!refund || refund.pending_at === null) return
      const items = await trx.selectFrom('refund_items').select(['order_item_id', 'quantity', 'cancelled_quantity']).where('refund_id', '=', refundId).execute()
      for (const item of items) {
        // Its units go back to the line's unrefunded ones, those it counted as not shipped to the ones left to ship.
        await trx
          .updateTable('order_items')
          .set((eb) => ({
            refunded_quantity: eb('refunded_quantity', '-', item.quantity),
            cancelled_quantity: eb('cancelled_quantity', '-', item.cancelled_quantity),
          }))
          .where('id', '=', item.order_item_id)
          .execute()
      }
      await trx
        .updateTable('refund_keys')
        .set((eb) => ({ refund_id: null, attempt: eb('attempt', '+', 1) }))
        .where('refund_id', '=', refundId)
        .execute()
      await trx.deleteFrom('refund_items').where('refund_id', '=', refundId).execute()
      await trx.deleteFrom('refunds').where('id', '=', refundId).execute()
      await trx
        .updateTable('payments')
        .set({ refund_pending_at: null, refund_pending_cents: null, updated_at: nowIso() })
        .where('order_id', '=', orderId)
        .execute()
    })
  }

  /**
   * The checks, in order, and the amounts: the payment (409 unless paid or partially refunded), each item on this
   * order (422), its units still refundable (409), the shipping and the amount (409), a refund in flight (409).
   */
  private async plan(trx: Trx, orderId: number, input: RefundInput, body: ReturnType<typeof checkBody>, lock = true): Promise<Plan> {
    const order = await trx.selectFrom('orders').select(['id', 'total_cents', 'tax_total_cents', 'currency']).where('id', '=', orderId).executeTakeFirst()
    if (!order) throw new AppError(404, 'orderNotFound')
    const payment = lock ? await repo.lockPayment(trx, orderId) : await repo.findPayment(trx, orderId)
    const currency = payment?.currency ?? order.currency ?? this.defaults.currency
    const pendingCents = Number(payment?.refund_pending_cents ?? 0)
    if (!payment || payment.status !== 'paid' || Number(payment.refunded_cents) >= Number(payment.amount_cents)) {
      throw new AppError(409, 'nothingToRefund')
    }
    const lines = await trx
      .selectFrom('order_items')
      .select([
        'id',
        'product_id',
        'variant_id',
        'quantity',
        'price_cents',
        'total_cents',
        'tax_cents',
        'fulfilled_quantity',
        'refunded_quantity',
        'cancelled_quantity',
      ])
      .where('order_id', '=', orderId)
      .orderBy('id')
      .execute()
    const byId = new Map(lines.map((line) => [line.id, line]))
    // The same line twice adds up (restocked if either asks).
    const asked = new Map<number, { units: number; restock: boolean }>()
    for (const item of input.items ?? []) {
      const seen = asked.get(item.orderItemId)
      asked.set(item.orderItemId, { units: (seen?.units ?? 0) + item.quantity, restock: (seen?.restock ?? false) || item.restock === true })
    }
    for (const id of asked.keys()) if (!byId.has(id)) throw new AppError(422, 'orderItemNotInOrder', id)
    for (const [id, { units }] of asked) {
      const line = byId.get(id)
      if (line && units > line.quantity - line.refunded_quantity) throw new AppError(409, 'refundQuantityTooHigh', id)
    }
    // What the order charged for shipping (after its discount, with its tax when prices exclude it) is what its lines
    // do not account for; its tax, what their taxes do not. Orders placed the plain way charged none.
    const lineTotal = (line: (typeof lines)[number]) => (line.total_cents === null ? Number(line.price_cents) * line.quantity : Number(line.total_cents))
    const shippingCharged = Math.max(0, Number(order.total_cents) - lines.reduce((sum, line) => sum + lineTotal(line), 0))
    const shippingTax = Math.max(0, Number(order.tax_total_cents ?? 0) - lines.reduce((sum, line) => sum + Number(line.tax_cents ?? 0), 0))
    const shippingRefunded = Number(
      (
        await trx
          .selectFrom('refunds')
          .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('shipping_cents'), eb.lit(0)).as('n'))
          .where('order_id', '=', orderId)
          .executeTakeFirstOrThrow()
      ).n,
    )
    const { shippingCents, amountCents } = body
    const refundableCents = Number(payment.amount_cents) - Number(payment.refunded_cents) - pendingCents
    if (shippingCents > shippingCharged - shippingRefunded) {
      throw new AppError(409, 'refundShippingTooHigh', inMessage(shippingCharged - shippingRefunded, currency))
    }
    if (amountCents !== undefined && amountCents > refundableCents)
      throw new AppError(409, 'refundAmountTooHigh', inMessage(Math.max(0, refundableCents), currency))
    if (payment.refund_pending_at !== null) throw new AppError(409, 'refundInProgress')
    const chosen = [...asked].map(([id, ask]) => ({ line: byId.get(id) as (typeof lines)[number], ...ask }))
    const amounts = refundAmounts({
      lines: chosen.map(({ line, units }) => ({
        quantity: line.quantity,
        totalCents: lineTotal(line),
        taxCents: Number(line.tax_cents ?? 0),
        refundedQuantity: line.refunded_quantity,
        units,
      })),
      shipping: { chargedCents: shippingCharged, taxCents: shippingTax, refundedCents: shippingRefunded },
      shippingCents,
      refundableCents: Math.max(0, refundableCents),
      amountCents,
    })
    return {
      payment,
      currency,
      lines: chosen.map(({ line, units, restock }, index) => ({
        id: line.id,
        productId: line.product_id,
        variantId: line.variant_id,
        units,
        // Refunded units come first from those not shipped: they will never ship.
        cancelled: Math.min(units, Math.max(0, line.quantity - line.fulfilled_quantity - line.cancelled_quantity)),
        restock,
        amountCents: amounts.lines[index]?.amountCents ?? 0,
        taxCents: amounts.lines[index]?.taxCents ?? 0,
      })),
      shippingCents,
      taxCents: amounts.taxCents,
      amountCents: amounts.amountCents,
      refundableCents: Math.max(0, refundableCents),
    }
  }

  /** Writes the refund, its lines and the lines' counters (conditional: a unit is never refunded twice); returns its id. */
  private async write(
    trx: Trx,
    orderId: number,
    plan: Plan,
    reason: string | null,
    actor: RefundActor,
    actorName: string | null,
    pendingAt: string | null,
    now: string,
  ) {
    const refund = await trx
      .insertInto('refunds')
      .values({
        order_id: orderId,
        amount_cents: plan.amountCents,
        provider: needsCardRefund(plan.payment) ? 'stripe' : 'manual',
        provider_ref: null,
        reason,
        actor_type: actor.apiKey !== undefined ? 'api_key' : 'user',
        actor_id: actor.apiKey !== undefined ? actor.apiKey.id : actor.id,
        actor_name: actorName,
        created_at: now,
        shipping_cents: plan.shippingCents,
        tax_cents: plan.taxCents,
        pending_at: pendingAt,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    for (const line of plan.lines) {
      const moved = await trx
        .updateTable('order_items')
        .set((eb) => ({ refunded_quantity: eb('refunded_quantity', '+', line.units), cancelled_quantity: eb('cancelled_quantity', '+', line.cancelled) }))
        .where('id', '=', line.id)
        .where((eb) => eb(eb('refunded_quantity', '+', line.units), '<=', eb.ref('quantity')))
        .executeTakeFirst()
      if (Number(moved.numUpdatedRows) === 0) throw new AppError(409, 'refundQuantityTooHigh', line.id)
    }
    if (plan.lines.length > 0) {
      await trx
        .insertInto('refund_items')
        .values(
          plan.lines.map((line) => ({
            refund_id: refund.id,
            order_item_id: line.id,
            quantity: line.units,
            cancelled_quantity: line.cancelled,
            amount_cents: line.amountCents,
            tax_cents: line.taxCents,
            restock: line.restock ? 1 : 0,
          })),
        )
        .execute()
    }
    return refund.id
  }

  /**
   * The refund settles, in the caller's transaction (order row locked): its restocked units go back, the payment
   * counts it (`refunded` once all of it came back; the order's status never moves), and the timeline entry, the
   * `order.refunded` event and the `order-refunded` e-mail are written with it. False when it was settled already.
   */
  private async settle(trx: Trx, orderId: number, refundId: number, now: string): Promise<boolean> {
    const refund = await trx.selectFrom('refunds').selectAll().where('id', '=', refundId).executeTakeFirst()
    if (!refund) return false
    const payment = await repo.lockPayment(trx, orderId)
    if (!payment) return false
    const wasPending = refund.pending_at !== null
    if (wasPending) {
      // Someone else settled it meanwhile (the reconcile job and a repeated request): nothing is counted twice.
      const cleared = await trx
        .updateTable('refunds')
        .set({ pending_at: null })
        .where('id', '=', refundId)
        .where('pending_at', 'is not', null)
        .executeTakeFirst()
      if (Number(cleared.numUpdatedRows) === 0) return false
    }
    const items = await trx
      .selectFrom('refund_items as ri')
      .innerJoin('order_items as i', 'i.id', 'ri.order_item_id')
      .select(['ri.order_item_id', 'ri.quantity', 'ri.amount_cents', 'ri.tax_cents', 'ri.restock', 'i.product_id', 'i.variant_id'])
      .where('ri.refund_id', '=', refundId)
      .orderBy('ri.order_item_id')
      .execute()
    const restock = items.flatMap((item) =>
      item.restock === 1 && item.variant_id !== null ? [{ productId: item.product_id, variantId: item.variant_id, quantity: item.quantity }] : [],
    )
    if (restock.length > 0) await this.inventory.release(trx, restock)
    const cents = Number(refund.amount_cents)
    const refunded = Number(payment.refunded_cents) + cents
    await trx
      .updateTable('payments')
      .set({
        refunded_cents: refunded,
        ...(refunded >= Number(payment.amount_cents) ? { status: 'refunded' as const } : {}),
        ...(wasPending ? { refund_pending_at: null, refund_pending_cents: null } : {}),
        updated_at: now,
      })
      .where('order_id', '=', orderId)
      .execute()
    await this.payments.step('payment-moved')
    const shown = toRefund(refund, items)
    await appendOrderEvent(trx, {
      orderId,
      type: 'order.refunded',
      at: now,
      actor:
        refund.actor_id === null || refund.actor_type === 'system'
          ? systemActor
          : refund.actor_type === 'api_key'
            ? { type: 'api_key', id: refund.actor_id, name: refund.actor_name ?? '' }
            : { type: 'user', id: refund.actor_id },
      data: { refundId, amount: shown.amount, currency: payment.currency, items: shown.items, shippingAmount: shown.shippingAmount },
    })
    const order = await loadOrder(trx, this.defaults, orderId)
    await this.events.emit(trx, { type: 'order.refunded', data: { order, refund: shown } })
    return true
  }

  private async loadRefund(refundId: number, db: Db = this.db): Promise<Refund> {
    const row = await db.selectFrom('refunds').selectAll().where('id', '=', refundId).executeTakeFirstOrThrow()
    const items = await db.selectFrom('refund_items').selectAll().where('refund_id', '=', refundId).orderBy('order_item_id').execute()
    return toRefund(row, items)
  }
}

/** The body's amounts in cents, once it names something to refund: units, shipping or an amount (422 otherwise). */
function checkBody(input: RefundInput): { shippingCents: number; amountCents: number | undefined } {
  const shippingCents = cents('shippingAmount', input.shippingAmount) ?? 0
  const amountCents = cents('amount', input.amount)
  if ((input.items ?? []).length === 0 && shippingCents === 0 && amountCents === undefined) {
    throw new ValidationError(messages.refundNothingGiven, 'body')
  }
  return { shippingCents, amountCents }
}
