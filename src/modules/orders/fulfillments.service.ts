import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { AppError, messages } from '../../shared/errors.js'
import type { EventSink } from '../../shared/event-sink.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { enqueueEmail } from '../outbox/outbox.js'
import * as repo from './fulfillments.repository.js'
import type { CreateFulfillmentInput, Fulfillment, MarkDeliveredInput, UpdateFulfillmentInput } from './fulfillments.schemas.js'
import type { LifecycleHook, OrderLifecycle, OrderMove } from './order-lifecycle.js'
import { appendOrderEvent, listOrderEvents, type OrderActor, orderActorOf, type OrderTimelineEvent, type StaffCaller, userIdOf } from './order-timeline.js'
import { orderLinkUrl, type OrderTokens } from './order-token.js'
import { fulfillmentStatusOf, loadOrder, type PaymentDefaults } from './order-view.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

/**
 * Shipments. A fulfillment ships some units of an order's lines; the lines count them (`fulfilled_quantity`), moved by
 * conditional updates in the shipment's transaction, under the order's lock: two requests never ship the same unit.
 * The first one moves a paid order to shipped, through the lifecycle in the same transaction; the last delivery of
 * a fully shipped order moves it to delivered. Each writes its timeline entries and queues its events there.
 */
export interface FulfillmentsDeps {
  db: Db
  lifecycle: OrderLifecycle
  events: EventSink
  payments: PaymentDefaults
}

/** Links to a guest's order in the e-mails sent outside an event (a shipment's tracking corrected). */
export interface ShipmentLinkSettings {
  tokens: OrderTokens
  shopUrl: string
}

type Log = OrderMove['log']

/** `trackingUrl`: an absolute http or https URL (a 422 before anything is read). */
function checkTrackingUrl(url: string | null | undefined): void {
  if (url === undefined || url === null) return
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new ValidationError(messages.trackingUrlInvalid, 'trackingUrl')
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.hostname === '' || url.trim() !== url)
    throw new ValidationError(messages.trackingUrlInvalid, 'trackingUrl')
}

/** `deliveredAt` in UTC; the future is refused (a 422). */
function deliveredInstant(value: string | undefined, now: string): string {
  if (value === undefined) return now
  const at = new Date(value)
  if (at.getTime() > Date.parse(now)) throw new ValidationError(messages.deliveredAtInFuture, 'deliveredAt')
  return at.toISOString()
}

interface ShipRequest {
  orderId: number
  items?: ReadonlyArray<{ orderItemId: number; quantity: number }> | undefined
  carrier: string | null
  trackingNumber: string | null
  trackingUrl: string | null
  notifyCustomer: boolean
  actor: OrderActor
  /** The admin's id, for the lifecycle's move. */
  actorId: number | null
  log: Log
}

/**
 * Records one shipment inside `trx`, the order locked by the caller. Checks: a line of another order (422), the
 * order's status (409), nothing left (409), too many units of a line (409). With `move`, a paid order moves to
 * shipped (the lifecycle's after-commit work is returned); a move to shipped already under way passes false.
 */
async function ship(
  deps: FulfillmentsDeps,
  trx: Trx,
  status: string,
  request: ShipRequest,
  move: boolean,
): Promise<{ fulfillment: Fulfillment; after: () => Promise<void> }> {
  const lines = await repo.listShippableLines(trx, request.orderId)
  const byId = new Map(lines.map((line) => [line.id, line]))
  // The same line named twice ships the sum.
  let wanted: Map<number, number> | undefined
  if (request.items !== undefined) {
    wanted = new Map()
    for (const item of request.items) {
      if (!byId.has(item.orderItemId)) throw new AppError(422, 'orderItemNotInOrder', item.orderItemId)
      wanted.set(item.orderItemId, (wanted.get(item.orderItemId) ?? 0) + item.quantity)
    }
  }
  if (status !== 'paid' && status !== 'shipped') throw new AppError(409, 'orderNotShippable', status)
  const left = (line: (typeof lines)[number]) => line.quantity - line.fulfilled_quantity - line.cancelled_quantity
  if (!lines.some((line) => left(line) > 0)) throw new AppError(409, 'nothingToShip')
  const items = wanted
    ? [...wanted].sort(([a], [b]) => a - b).map(([orderItemId, quantity]) => ({ orderItemId, quantity }))
    : lines.filter((line) => left(line) > 0).map((line) => ({ orderItemId: line.id, quantity: left(line) }))
  for (const item of items) {
    if (item.quantity > left(byId.get(item.orderItemId)!)) throw new AppError(409, 'fulfillQuantityTooLarge', item.orderItemId)
  }
  // The counters move in line id order, each only while its units are still there.
  for (const item of items) {
    if (!(await repo.takeUnits(trx, item.orderItemId, item.quantity))) throw new AppError(409, 'fulfillQuantityTooLarge', item.orderItemId)
  }
  const now = nowIso()
  const id = await repo.insertFulfillment(
    trx,
    {
      order_id: request.orderId,
      carrier: request.carrier,
      tracking_number: request.trackingNumber,
      tracking_url: request.trackingUrl,
      shipped_at: now,
      created_at: now,
    },
    items,
  )
  const fulfillment = (await repo.findFulfillment(trx, id))!
  await appendOrderEvent(trx, { orderId: request.orderId, type: 'order.fulfilled', at: now, actor: request.actor, data: { fulfillment } })
  let after: () => Promise<void> = async () => {}
  if (move && status === 'paid') {
    after = await deps.lifecycle.moveWithin(trx, {
      orderId: request.orderId,
      from: 'paid',
      to: 'shipped',
      cause: 'fulfillment',
      actorId: request.actorId,
      actor: request.actor,
      // The shipment's own entry records the write.
      audit: null,
      log: request.log,
    })
  }
  const order = await loadOrder(trx, deps.payments, request.orderId)
  await deps.events.emit(trx, { type: 'order.fulfilled', data: { order, fulfillment }, notifyCustomer: request.notifyCustomer })
  return { fulfillment, after }
}

/** POST /orders/:id/fulfillments: 201 with the shipment. */
export async function createFulfillment(
  deps: FulfillmentsDeps,
  orderId: number,
  input: CreateFulfillmentInput,
  actor: StaffCaller,
  log: Log,
  audit: AuditSource,
): Promise<Fulfillment> {
  checkTrackingUrl(input.trackingUrl)
  const { fulfillment, after } = await deps.db.transaction().execute(async (trx) => {
    const locked = await deps.lifecycle.lock(trx, orderId)
    if (!locked) throw new AppError(404, 'orderNotFound')
    const shipped = await ship(
      deps,
      trx,
      locked.status,
      {
        orderId,
        items: input.items,
        carrier: input.carrier ?? null,
        trackingNumber: input.trackingNumber ?? null,
        trackingUrl: input.trackingUrl ?? null,
        notifyCustomer: input.notifyCustomer ?? true,
        actor: orderActorOf(actor),
        actorId: userIdOf(actor),
        log,
      },
      true,
    )
    const created = shipped.fulfillment
    await recordAudit(trx, { by: audit, action: 'fulfillment.create', entityType: 'fulfillment', entityId: created.id, before: null, after: created })
    return shipped
  })
  await after()
  return fulfillment
}

/**
 * A fulfillment delivered: when the order is shipped, shipped in full and every one of its fulfillments delivered,
 * it moves to delivered by itself (the lifecycle emits order.delivered).
 */
async function deliverOrderIfComplete(deps: FulfillmentsDeps, trx: Trx, orderId: number, caller: StaffCaller, log: Log) {
  const order = await deps.lifecycle.lock(trx, orderId)
  if (order?.status !== 'shipped') return async () => {}
  if (fulfillmentStatusOf(await repo.listShippableLines(trx, orderId)) !== 'fulfilled') return async () => {}
  if (!(await repo.allDelivered(trx, orderId))) return async () => {}
  return deps.lifecycle.moveWithin(trx, {
    orderId,
    from: 'shipped',
    to: 'delivered',
    cause: 'fulfillment',
    actorId: userIdOf(caller),
    actor: orderActorOf(caller),
    audit: null,
    log,
  })
}

/** Finds the fulfillment and locks its order (the lock every order change takes first), or 404. */
async function lockFulfillment(deps: FulfillmentsDeps, trx: Trx, id: number): Promise<Fulfillment> {
  const orderId = await repo.findFulfillmentOrderId(trx, id)
  if (orderId === undefined) throw new AppError(404, 'fulfillmentNotFound')
  await deps.lifecycle.lock(trx, orderId)
  const fulfillment = await repo.findFulfillment(trx, id)
  if (!fulfillment) throw new AppError(404, 'fulfillmentNotFound')
  return fulfillment
}

/** PATCH /fulfillments/:id: carrier, tracking, delivery; 200 with the shipment as it now is. */
export async function updateFulfillment(
  deps: FulfillmentsDeps,
  id: number,
  input: UpdateFulfillmentInput,
  actor: StaffCaller,
  links: ShipmentLinkSettings,
  log: Log,
  audit: AuditSource,
): Promise<Fulfillment> {
  checkTrackingUrl(input.trackingUrl)
  const now = nowIso()
  const deliveredAt = input.deliveredAt === undefined ? undefined : deliveredInstant(input.deliveredAt, now)
  const { fulfillment, after } = await deps.db.transaction().execute(async (trx) => {
    const before = await lockFulfillment(deps, trx, id)
    const set = {
      ...(input.carrier !== undefined ? { carrier: input.carrier } : {}),
      ...(input.trackingNumber !== undefined ? { tracking_number: input.trackingNumber } : {}),
      ...(input.trackingUrl !== undefined ? { tracking_url: input.trackingUrl } : {}),
      ...(deliveredAt !== undefined ? { delivered_at: deliveredAt } : {}),
    }
    await repo.updateFulfillment(trx, id, set)
    const fulfillment = (await repo.findFulfillment(trx, id))!
    const userActor = orderActorOf(actor)
    const changed: Record<string, unknown> = {}
    for (const key of ['carrier', 'trackingNumber', 'trackingUrl'] as const) if (fulfillment[key] !== before[key]) changed[key] = fulfillment[key]
    if (Object.keys(changed).length > 0)
      await appendOrderEvent(trx, { orderId: before.orderId, type: 'fulfillment.updated', at: now, actor: userActor, data: { fulfillmentId: id, ...changed } })
    let after: () => Promise<void> = async () => {}
    if (deliveredAt !== undefined) {
      await appendOrderEvent(trx, {
        orderId: before.orderId,
        type: 'fulfillment.delivered',
        at: now,
        actor: userActor,
        data: { fulfillmentId: id, deliveredAt },
      })
      after = await deliverOrderIfComplete(deps, trx, before.orderId, actor, log)
    }
    if (input.notifyCustomer === true) await emailShipmentAgain(deps, trx, before.orderId, fulfillment, links)
    await recordAudit(trx, { by: audit, action: 'fulfillment.update', entityType: 'fulfillment', entityId: id, before, after: fulfillment })
    return { fulfillment, after }
  })
  await after()
  return fulfillment
}

/** POST /fulfillments/:id/delivered: 200 with the shipment, delivered at `deliveredAt` (now by default). */
export async function markDelivered(
  deps: FulfillmentsDeps,
  id: number,
  input: MarkDeliveredInput,
  actor: StaffCaller,
  log: Log,
  audit: AuditSource,
): Promise<Fulfillment> {
  const now = nowIso()
  const deliveredAt = deliveredInstant(input?.deliveredAt, now)
  const { fulfillment, after } = await deps.db.transaction().execute(async (trx) => {
    const before = await lockFulfillment(deps, trx, id)
    await repo.updateFulfillment(trx, id, { delivered_at: deliveredAt })
    await appendOrderEvent(trx, {
      orderId: before.orderId,
      type: 'fulfillment.delivered',
      at: now,
      actor: orderActorOf(actor),
      data: { fulfillmentId: id, deliveredAt },
    })
    const after = await deliverOrderIfComplete(deps, trx, before.orderId, actor, log)
    const fulfillment = (await repo.findFulfillment(trx, id))!
    await recordAudit(trx, { by: audit, action: 'fulfillment.deliver', entityType: 'fulfillment', entityId: id, before, after: fulfillment })
    return { fulfillment, after }
  })
  await after()
  return fulfillment
}

/** order-shipped once more, with the shipment's tracking as it now is (PATCH with `notifyCustomer: true`). */
async function emailShipmentAgain(deps: FulfillmentsDeps, trx: Trx, orderId: number, fulfillment: Fulfillment, links: ShipmentLinkSettings) {
  const order = await loadOrder(trx, deps.payments, orderId)
  if (order.email === null) return
  const name = order.guest
    ? (order.shippingAddress?.fullName ?? '')
    : ((
        await trx
          .selectFrom('users')
          .select('name')
          .where('id', '=', order.userId ?? 0)
          .executeTakeFirst()
      )?.name ?? '')
  const link = order.guest ? { link: orderLinkUrl(links.shopUrl, order.id, links.tokens.sign(order.id)) } : {}
  await enqueueEmail(trx, { template: 'order-shipped', to: order.email, data: { name, order, fulfillment, ...link } })
}

// ---- the timeline ----

/** GET /orders/:id/events: the order's timeline, oldest first (404 for an unknown order). */
export async function orderEvents(deps: FulfillmentsDeps, orderId: number): Promise<OrderTimelineEvent[]> {
  if (!(await deps.lifecycle.exists(deps.db, orderId))) throw new AppError(404, 'orderNotFound')
  return listOrderEvents(deps.db, orderId)
}

/** POST /orders/:id/notes: a staff note on the timeline; 201 with its entry. */
export async function addNote(deps: FulfillmentsDeps, orderId: number, text: string, actor: StaffCaller, audit: AuditSource): Promise<OrderTimelineEvent> {
  return deps.db.transaction().execute(async (trx) => {
    if (!(await deps.lifecycle.lock(trx, orderId))) throw new AppError(404, 'orderNotFound')
    const id = await appendOrderEvent(trx, { orderId, type: 'note', actor: orderActorOf(actor), data: { text } })
    const note = (await listOrderEvents(trx, orderId, id))[0]!
    // Recorded on its order: a note is part of the order's timeline.
    await recordAudit(trx, { by: audit, action: 'order.add_note', entityType: 'order', entityId: orderId, before: null, after: note })
    return note
  })
}

/**
 * The lifecycle's hook for moves made without a shipment (PATCH /orders/:id/status): a move to shipped records one
 * untracked fulfillment of every unit left, e-mailed to the customer; a move to delivered marks delivered now the
 * fulfillments that were not, and is refused while part of the order is still to ship.
 */
export function fulfillmentsHook(deps: FulfillmentsDeps): LifecycleHook {
  return {
    async apply(trx: Trx, move: OrderMove): Promise<void> {
      if (move.cause === 'fulfillment') return
      if (move.to === 'shipped') {
        const actor: OrderActor = move.actor ?? (move.actorId === null ? { type: 'system' } : { type: 'user', id: move.actorId })
        const request = {
          orderId: move.orderId,
          carrier: null,
          trackingNumber: null,
          trackingUrl: null,
          notifyCustomer: true,
          actor,
          actorId: move.actorId,
          log: move.log,
        }
        // The order's row says shipped already: the move is under way.
        await ship(deps, trx, 'shipped', request, false)
      } else if (move.to === 'delivered') {
        if (fulfillmentStatusOf(await repo.listShippableLines(trx, move.orderId)) === 'partial') throw new AppError(409, 'itemsLeftToShip')
        const now = nowIso()
        const actor: OrderActor = move.actor ?? (move.actorId === null ? { type: 'system' } : { type: 'user', id: move.actorId })
        for (const fulfillmentId of await repo.deliverUndelivered(trx, move.orderId, now))
          await appendOrderEvent(trx, { orderId: move.orderId, type: 'fulfillment.delivered', at: now, actor, data: { fulfillmentId, deliveredAt: now } })
      }
    },
  }
}
