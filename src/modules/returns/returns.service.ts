import { appendOrderEvent, type OrderActor, systemActor } from '../orders/order-timeline.js'
import type { Kysely, Transaction } from 'kysely'
import type { Database, ReturnSource, ReturnStatus } from '../../db/database.js'
import { isUniqueViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import type { EventSink } from '../../shared/event-sink.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import type { Inventory } from '../inventory/inventory.service.js'
import { loadOrder, type PaymentDefaults } from '../orders/order-view.js'
import type { Order } from '../orders/orders.schemas.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'
import * as repo from './returns.repository.js'
import type { CreateReturnInput, ListReturnsQuery, ReceiveReturnInput, Return } from './returns.schemas.js'
import { type DeliveryState, returnDeadline, windowClosed } from './windows.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

/** The days returns and withdrawals count in, and how many. */
export interface AfterSaleSettings {
  /** SHOP_TIMEZONE. */
  zone: string
  returnDays: number
  withdrawalDays: number
}

/** What a receipt that refunds asks of the refunds module. Amounts in cents. */
export interface ReturnRefundRequest {
  orderId: number
  returnId: number
  /** The received units to refund, by order line; their restock is the receipt's own (already done). */
  items: Array<{ orderItemId: number; quantity: number }>
  shippingAmountCents: number | undefined
  amountCents: number | undefined
  idempotencyKey: string
  actor: Actor
}

/**
 * The refunds module, as a receipt calls it: it refunds `request`'s units by its own rules (amounts, checks, the
 * provider) inside `trx`, the receipt's transaction, and answers the refund's id. Any refusal it throws rolls the
 * receipt back with it.
 */
export interface ReturnRefunds {
  refundReceived(trx: Trx, request: ReturnRefundRequest): Promise<{ refundId: number; afterCommit?: () => Promise<void> }>
}

/** What the returns module needs, handed to it by app.ts. */
export interface ReturnsDeps {
  db: Db
  inventory: Inventory
  events: EventSink
  payments: PaymentDefaults
  settings: AfterSaleSettings
  /** The refunds module (app.ts); undefined only where no receipt refunds (a receipt that would then fails whole). */
  refunds: ReturnRefunds | undefined
  /** The clock (tests move it); now by default. */
  now?: () => Date
}

/**
 * Who asks: a signed-in user (staff or the order's customer), a guest with the order's link (the order's e-mail as
 * name), or the shop itself. `staff` decides the rules: staff create approved returns and are not bound by the window.
 */
/** The timeline's form of who acted (a user's name is read when the timeline is shown; a guest is their e-mail). */
function timelineActor(actor: Actor): OrderActor {
  if (actor.type === 'user' && actor.id !== null) return { type: 'user', id: actor.id }
  if (actor.type === 'api_key' && actor.id !== null) return { type: 'api_key', id: actor.id, name: actor.name ?? '' }
  if (actor.type === 'guest' && actor.name !== null) return { type: 'guest', email: actor.name }
  return systemActor
}

export interface Actor {
  /** `api_key`: staff through an API key (`id` and `name` are the key's). */
  type: 'user' | 'guest' | 'api_key' | 'system'
  id: number | null
  name: string | null
  staff: boolean
  /** A staff member's request: their changes are recorded in the audit log. Null for customers and guests. */
  audit: AuditSource | null
}

const clock = (deps: { now?: () => Date }): Date => deps.now?.() ?? new Date()

// ---- what an order's units allow ----

/**
 * Whether the order has reached its customer in full: something shipped, every line shipped or cancelled, and
 * every shipment delivered; then its latest delivery.
 */
export async function deliveryState(db: Db | Trx, orderId: number, lines: readonly repo.OrderLineRow[]): Promise<DeliveryState> {
  const summary = await repo.deliverySummary(db, orderId)
  const fulfilled =
    lines.some((line) => line.fulfilled_quantity > 0) && lines.every((line) => line.fulfilled_quantity + line.cancelled_quantity >= line.quantity)
  const delivered = fulfilled && summary.shipments > 0 && summary.delivered === summary.shipments
  return { delivered, lastDeliveredAt: delivered ? summary.lastDeliveredAt : null }
}

/** Returnable units of each line: shipped, less those in returns that were not rejected. */
function returnableUnits(lines: readonly repo.OrderLineRow[], inReturns: ReadonlyMap<number, number>): Map<number, number> {
  return new Map(lines.map((line) => [line.id, Math.max(0, line.fulfilled_quantity - (inReturns.get(line.id) ?? 0))]))
}

/** 422 when two entries name the same order line. */
export function checkDistinctLines(items: ReadonlyArray<{ orderItemId: number }> | undefined): void {
  if (!items) return
  const seen = new Set<number>()
  for (const item of items) {
    if (seen.has(item.orderItemId)) throw new ValidationError(messages.itemRepeated, 'orderItemId')
    seen.add(item.orderItemId)
  }
}

// ---- the return as the API shows it ----

export function toReturn(row: repo.ReturnRow, items: readonly repo.ReturnItemRow[]): Return {
  return {
    id: row.id,
    orderId: row.order_id,
    status: row.status,
    source: row.source,
    reason: row.reason,
    rejectionReason: row.reject_reason,
    items: items.map((item) => ({ orderItemId: item.order_item_id, quantity: item.quantity, reason: item.reason, receivedQuantity: item.received_quantity })),
    refundId: row.refund_id,
    withdrawalId: row.withdrawal_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

async function loadReturn(db: Db | Trx, id: number): Promise<Return> {
  const row = await repo.findReturn(db, id)
  if (!row) throw new AppError(404, 'returnNotFound')
  return toReturn(row, await repo.findReturnItems(db, [id]))
}

const eventOfStatus: Record<ReturnStatus, 'return.requested' | 'return.approved' | 'return.rejected' | 'return.received'> = {
  requested: 'return.requested',
  approved: 'return.approved',
  rejected: 'return.rejected',
  received: 'return.received',
}

/**
 * A return's move, told in the transaction that made it: the order's timeline, and the `return.*` event (its
 * webhooks and e-mails) with `{order, return}`.
 */
async function announce(
  deps: ReturnsDeps,
  trx: Trx,
  returnId: number,
  actor: Actor,
  now: string,
  change: { verb: 'create' | 'approve' | 'reject' | 'receive'; before: Return | null },
): Promise<Return> {
  const ret = await loadReturn(trx, returnId)
  const order: Order = await loadOrder(trx, deps.payments, ret.orderId)
  const type = eventOfStatus[ret.status]
  await appendOrderEvent(trx, { orderId: ret.orderId, type, at: now, actor: timelineActor(actor), data: { return: ret } })
  await deps.events.emit(trx, { type, data: { order, return: ret } })
  await recordAudit(trx, { by: actor.audit, action: `return.${change.verb}`, entityType: 'return', entityId: returnId, before: change.before, after: ret })
  return ret
}

// ---- creating a return ----

interface NewReturn {
  source: ReturnSource
  reason: string | null
  items: Array<{ orderItemId: number; quantity: number; reason: string | null }>
  withdrawalId?: number
}

async function insertReturn(deps: ReturnsDeps, trx: Trx, orderId: number, input: NewReturn, actor: Actor): Promise<Return> {
  const now = nowIso()
  // Staff's returns (their own, or made from a withdrawal) are approved as they are made; a customer's waits.
  const status: ReturnStatus = input.source === 'customer' ? 'requested' : 'approved'
  const id = await repo.insertReturn(trx, {
    order_id: orderId,
    status,
    source: input.source,
    reason: input.reason,
    created_at: now,
    updated_at: now,
    ...(input.withdrawalId !== undefined ? { withdrawal_id: input.withdrawalId } : {}),
  })
  await repo.insertReturnItems(trx, id, input.items)
  return announce(deps, trx, id, actor, now, { verb: 'create', before: null })
}

/** Who may open an order's returns: staff any order's, a customer their own, a guest the order their link opens. */
export interface OrderCaller {
  actor: Actor
  /** A customer's own id: another's order is not found. */
  ownerId?: number
}

/**
 * POST /orders/:id/returns. Checks, in order: repeated lines (422), the order (404; someone else's too), a line of
 * another order (422), nothing shipped (409), a customer past the window (409), more units than returnable (409).
 * The order is locked, so two requests never return the same unit.
 */
export async function createReturn(deps: ReturnsDeps, caller: OrderCaller, orderId: number, input: CreateReturnInput): Promise<Return> {
  checkDistinctLines(input.items)
  return deps.db.transaction().execute(async (trx) => {
    const order = await repo.lockOrder(trx, orderId)
    if (!order || (caller.ownerId !== undefined && order.user_id !== caller.ownerId)) throw new AppError(404, 'orderNotFound')
    const lines = await repo.findOrderLines(trx, orderId)
    const byId = new Map(lines.map((line) => [line.id, line]))
    for (const item of input.items) if (!byId.has(item.orderItemId)) throw new AppError(422, 'orderItemNotInOrder', item.orderItemId)
    if (!lines.some((line) => line.fulfilled_quantity > 0)) throw new AppError(409, 'nothingShippedToReturn')
    if (!caller.actor.staff) {
      const deadline = returnDeadline(await deliveryState(trx, orderId, lines), deps.settings.zone, deps.settings.returnDays)
      if (windowClosed(deadline, clock(deps), deps.settings.zone)) throw new AppError(409, 'returnWindowClosed')
    }
    const returnable = returnableUnits(lines, await repo.unitsInReturns(trx, orderId))
    for (const item of input.items) {
      if (item.quantity > (returnable.get(item.orderItemId) ?? 0)) throw new AppError(409, 'returnQuantityTooLarge', item.orderItemId)
    }
    return insertReturn(
      deps,
      trx,
      orderId,
      {
        source: caller.actor.staff ? 'admin' : 'customer',
        reason: input.reason ?? null,
        items: input.items.map((item) => ({ orderItemId: item.orderItemId, quantity: item.quantity, reason: item.reason ?? null })),
      },
      caller.actor,
    )
  })
}

/** GET /orders/:id/returns: the order's returns, oldest first (404 for an order the caller may not open). */
export async function listOrderReturns(deps: ReturnsDeps, caller: OrderCaller, orderId: number): Promise<Return[]> {
  const order = await repo.findOrderContact(deps.db, orderId)
  if (!order || (caller.ownerId !== undefined && order.user_id !== caller.ownerId)) throw new AppError(404, 'orderNotFound')
  const rows = (await repo.listReturns(deps.db, { orderId, limit: 1000, offset: 0 })).reverse()
  return withItems(deps.db, rows)
}

async function withItems(db: Db, rows: readonly repo.ReturnRow[]): Promise<Return[]> {
  const items = await repo.findReturnItems(
    db,
    rows.map((row) => row.id),
  )
  return rows.map((row) =>
    toReturn(
      row,
      items.filter((item) => item.return_id === row.id),
    ),
  )
}

/** GET /returns: newest first, by status; `total` counts before paging. */
export async function listReturns(deps: ReturnsDeps, query: ListReturnsQuery): Promise<{ returns: Return[]; total: number }> {
  const filter = { orderId: query.orderId, status: query.status }
  const [rows, total] = await Promise.all([
    repo.listReturns(deps.db, { ...filter, limit: query.limit, offset: query.offset }),
    repo.countReturns(deps.db, filter),
  ])
  return { returns: await withItems(deps.db, rows), total }
}

export async function getReturn(deps: ReturnsDeps, id: number): Promise<Return> {
  return loadReturn(deps.db, id)
}

// ---- moving a return ----

/**
 * Takes the return's order lock, then the return: 404 when unknown, 409 when its status does not allow `to`. The
 * status is read again under the lock, so two moves of one return never both pass.
 */
async function lockReturn(trx: Trx, id: number, to: ReturnStatus): Promise<repo.ReturnRow> {
  const found = await repo.findReturn(trx, id)
  if (!found) throw new AppError(404, 'returnNotFound')
  await repo.lockOrder(trx, found.order_id)
  const row = (await repo.findReturn(trx, id))!
  const allowed = (row.status === 'requested' && (to === 'approved' || to === 'rejected')) || (row.status === 'approved' && to === 'received')
  if (!allowed) throw new AppError(409, 'returnTransitionNotAllowed', row.status, to)
  return row
}

export async function approveReturn(deps: ReturnsDeps, actor: Actor, id: number): Promise<Return> {
  return deps.db.transaction().execute(async (trx) => {
    await lockReturn(trx, id, 'approved')
    const before = await loadReturn(trx, id)
    const now = nowIso()
    await repo.moveReturn(trx, id, 'requested', 'approved', now)
    return announce(deps, trx, id, actor, now, { verb: 'approve', before })
  })
}

export async function rejectReturn(deps: ReturnsDeps, actor: Actor, id: number, reason: string): Promise<Return> {
  return deps.db.transaction().execute(async (trx) => {
    await lockReturn(trx, id, 'rejected')
    const before = await loadReturn(trx, id)
    const now = nowIso()
    await repo.moveReturn(trx, id, 'requested', 'rejected', now, { reject_reason: reason })
    return announce(deps, trx, id, actor, now, { verb: 'reject', before })
  })
}

/**
 * POST /returns/:id/receive: the units that arrived (no `items`: every unit of the return), each line back in stock
 * unless `restock: false`, and (unless `refund: false`) refunded. Checks after the body: the return (404), its
 * status (409), a line of another order (422), more units than the return holds (409); then the refund's own.
 * Everything happens in one transaction: a refused refund leaves the return approved and the stock as it was.
 */
export async function receiveReturn(
  deps: ReturnsDeps,
  actor: Actor,
  id: number,
  input: ReceiveReturnInput,
  idempotencyKey: string | undefined,
): Promise<Return> {
  const refund = input.refund ?? true
  if (refund && idempotencyKey === undefined) throw new ValidationError(messages.idempotencyKeyMissing, 'idempotency-key')
  checkDistinctLines(input.items)
  let afterCommit: (() => Promise<void>) | undefined
  const received = await deps.db.transaction().execute(async (trx) => {
    const row = await lockReturn(trx, id, 'received')
    const returnItems = await repo.findReturnItems(trx, [id])
    const inReturn = new Map(returnItems.map((item) => [item.order_item_id, item]))
    const lines = new Map((await repo.findOrderLines(trx, row.order_id)).map((line) => [line.id, line]))
    const received = new Map<number, { quantity: number; restock: boolean }>()
    if (input.items) {
      for (const item of input.items) if (!lines.has(item.orderItemId)) throw new AppError(422, 'orderItemNotInOrder', item.orderItemId)
      for (const item of input.items) {
        if (item.quantity > (inReturn.get(item.orderItemId)?.quantity ?? 0)) throw new AppError(409, 'returnQuantityTooLarge', item.orderItemId)
        received.set(item.orderItemId, { quantity: item.quantity, restock: item.restock ?? true })
      }
    } else {
      for (const item of returnItems) received.set(item.order_item_id, { quantity: item.quantity, restock: true })
    }

    const before = await loadReturn(trx, id)
    const now = nowIso()
    await repo.moveReturn(trx, id, 'approved', 'received', now)
    for (const item of returnItems) await repo.setReceivedQuantity(trx, id, item.order_item_id, received.get(item.order_item_id)?.quantity ?? 0)
    // Back in stock through the inventory, as every unit that comes back (a variant deleted since is skipped).
    const restock = [...received.entries()]
      .filter(([, unit]) => unit.restock && unit.quantity > 0)
      .map(([orderItemId, unit]) => ({ line: lines.get(orderItemId)!, quantity: unit.quantity }))
      .filter(({ line }) => line.variant_id !== null)
      .map(({ line, quantity }) => ({ productId: line.product_id, variantId: line.variant_id as number, quantity }))
    if (restock.length > 0) await deps.inventory.release(trx, restock)

    if (refund) {
      // The received units, refunded by the refunds module in this very transaction (and the return points to it).
      if (!deps.refunds) throw new Error('returns: a receipt that refunds needs the refunds module (ReturnsDeps.refunds, wired in src/app.ts)')
      const made = await deps.refunds.refundReceived(trx, {
        orderId: row.order_id,
        returnId: id,
        items: [...received.entries()].filter(([, unit]) => unit.quantity > 0).map(([orderItemId, unit]) => ({ orderItemId, quantity: unit.quantity })),
        shippingAmountCents: input.shippingAmount === undefined ? undefined : Math.round(input.shippingAmount * 100),
        amountCents: input.amount === undefined ? undefined : Math.round(input.amount * 100),
        idempotencyKey: idempotencyKey as string,
        actor,
      })
      await trx.updateTable('returns').set({ refund_id: made.refundId }).where('id', '=', id).execute()
      afterCommit = made.afterCommit
    }
    // One entry for the receipt: its refund, made in this transaction, is part of it.
    return announce(deps, trx, id, actor, now, { verb: 'receive', before })
  })
  // Through Stripe, the refund was left pending in the receipt's transaction; it is asked for now, outside it. Its
  // 502 leaves the receipt made: the units are back, and the refund is undone (refused: `refundId` reads null again)
  // or finished later (no answer: a repeat of the request or the reconcile job).
  if (afterCommit) await afterCommit()
  return afterCommit ? loadReturn(deps.db, id) : received
}

// ---- a withdrawal's return ----

/**
 * POST /withdrawals/:id/return: an approved return of the withdrawal's units that shipped and are still returnable.
 * Checks: the withdrawal (404), a return made already (409), nothing of it shipped (409). The unique key on the
 * return's withdrawal settles two staff racing.
 */
export async function returnWithdrawal(deps: ReturnsDeps, actor: Actor, withdrawalId: number): Promise<Return> {
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const found = await repo.findWithdrawal(trx, withdrawalId)
      if (!found) throw new AppError(404, 'withdrawalNotFound')
      await repo.lockOrder(trx, found.order_id)
      const withdrawal = (await repo.findWithdrawal(trx, withdrawalId))!
      if (withdrawal.return_id !== null) throw new AppError(409, 'withdrawalHasReturn')
      const lines = await repo.findOrderLines(trx, withdrawal.order_id)
      const returnable = returnableUnits(lines, await repo.unitsInReturns(trx, withdrawal.order_id))
      const withdrawn = JSON.parse(withdrawal.items) as Array<{ orderItemId: number; quantity: number }>
      const items = withdrawn
        .map((item) => ({ orderItemId: item.orderItemId, quantity: Math.min(item.quantity, returnable.get(item.orderItemId) ?? 0), reason: null }))
        .filter((item) => item.quantity > 0)
      if (items.length === 0) throw new AppError(409, 'withdrawalNothingShipped')
      return insertReturn(deps, trx, withdrawal.order_id, { source: 'withdrawal', reason: null, items, withdrawalId }, actor)
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'withdrawalHasReturn')
    throw error
  }
}
