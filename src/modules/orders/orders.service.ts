import type { Kysely, Transaction } from 'kysely'
import type { Database, ShippingMethodRow } from '../../db/database.js'
import type { AuthUser } from '../../plugins/auth.js'
import { isUniqueViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import { type EventSink, noEvents } from '../../shared/event-sink.js'
import { centsToAmount } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { addressInputToSnapshot, findOwnAddressSnapshot } from '../addresses/addresses.service.js'
import type { AddressSnapshot } from '../addresses/addresses.schemas.js'
import { createInventory, type Inventory } from '../inventory/inventory.service.js'
import { findActiveShippingMethod, shipsTo, shopShips } from '../shipping/shipping.service.js'
import { type MoveRequest, OrderLifecycle } from './order-lifecycle.js'
import { loadOrder, type OrderRecord, type PaymentDefaults, rowsToOrders, toOrder } from './order-view.js'
import * as repo from './orders.repository.js'
import type { ListOrdersQuery, Order, OrderStatus, PlaceOrderInput } from './orders.schemas.js'
import { computeTotals } from '../totals/totals.js'
import { cartAddress, cartMethod } from '../cart/cart-view.js'
import { type CartRef, clearCartAfterOrder, takeCart } from '../cart/cart.service.js'

type Db = Kysely<Database>

const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000

/** What the orders module needs, handed to it by app.ts (nothing is looked up by `db`). */
export interface OrdersDeps {
  db: Db
  lifecycle: OrderLifecycle
  inventory: Inventory
  events: EventSink
  payments: PaymentDefaults
}

/**
 * The orders module's dependencies on one database: its inventory and lifecycle, with `events` going where the
 * caller says (app.ts: the outbox; a bench or a script: nowhere). app.ts then adds the payments' hook.
 */
export function createOrdersDeps(db: Db, payments: PaymentDefaults = { provider: 'manual', currency: 'EUR' }, events: EventSink = noEvents): OrdersDeps {
  const inventory = createInventory({ events })
  const lifecycle = new OrderLifecycle({ db, inventory, events, payments })
  return { db, lifecycle, inventory, events, payments }
}

/** Steps of order creation, in order; named for the test-only failure seam. */
export type PlaceOrderStep = 'key-claimed' | 'cart-taken' | 'stock-reserved' | 'order-written' | 'items-written'

export interface PlaceOrderOptions {
  idempotencyKey?: string | undefined
  /**
   * Test-only seam: awaited after each step inside the transaction, so a test can make it throw and check that
   * nothing was kept. Routes never pass it, so it cannot be reached over HTTP.
   */
  afterStep?: (step: PlaceOrderStep) => void | Promise<void>
}

/**
 * PostgreSQL only: an admin deleting a product locks the product, then (by cascade) the cart lines holding it,
 * while an order locks its cart lines, then the products. If the two meet, PostgreSQL aborts one of them with a
 * deadlock error; the order's transaction has then rolled back completely and is simply run again.
 */
async function retryOnDeadlock<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (error) {
      if (attempt >= attempts || (error as { code?: unknown } | null)?.code !== '40P01') throw error
    }
  }
}

/** Whether a key's first order is still the answer: keys older than this name a new order. */
function idempotencyCutoff(): string {
  return new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString()
}

/** The checkout body, as validated by the route's schema (every field optional). */
export type CheckoutInput = PlaceOrderInput

/**
 * Turns the user's cart into a `pending` order in one transaction: the cart is emptied, the stock taken (the
 * inventory, in product id order), the totals computed (the totals function) and the order written. Any failure
 * rolls all of it back. With an idempotency key, a key already used by this user in the last 24 hours returns that
 * order instead (`created: false`), also when requests race. `checkout` carries the address, shipping method and
 * note (see createOrderFromCart for the order of its checks).
 */
export async function placeOrder(
  deps: OrdersDeps,
  userId: number,
  options: PlaceOrderOptions = {},
  checkout: CheckoutInput = {},
): Promise<{ order: Order; created: boolean }> {
  const { db } = deps
  // Body fields come first (422), before a repeated key is answered or anything is read.
  if (checkout.shippingAddressId !== undefined && checkout.shippingAddress !== undefined)
    throw new ValidationError(messages.addressIdAndInline, 'shippingAddressId')
  const key = options.idempotencyKey
  if (key !== undefined) {
    const existing = await repo.findOrderIdByIdempotencyKey(db, userId, key, idempotencyCutoff())
    if (existing !== undefined) return { order: await loadOrder(db, deps.payments, existing), created: false }
  }
  try {
    const order = await retryOnDeadlock(() =>
      db.transaction().execute((trx) => createOrderFromCart(deps, trx, { userId }, key, checkout, options.afterStep ?? (() => undefined))),
    )
    return { order, created: true }
  } catch (error) {
    // Lost a race for the same key: the winner's order is the answer.
    if (key !== undefined && isUniqueViolation(error)) {
      const winner = await repo.findOrderIdByIdempotencyKey(db, userId, key, idempotencyCutoff())
      if (winner !== undefined) return { order: await loadOrder(db, deps.payments, winner), created: false }
    }
    throw error
  }
}

/** The address and method a checkout's body names (404 when unknown, someone else's or inactive). */
async function resolveCheckoutReferences(trx: Transaction<Database>, userId: number | undefined, checkout: CheckoutInput) {
  let address: AddressSnapshot | undefined
  if (checkout.shippingAddressId !== undefined) {
    address = userId === undefined ? undefined : await findOwnAddressSnapshot(trx, userId, checkout.shippingAddressId)
    if (!address) throw new AppError(404, 'addressNotFound')
  } else if (checkout.shippingAddress !== undefined) {
    // Used for this order only, not saved to the address book.
    address = addressInputToSnapshot(checkout.shippingAddress)
  }
  let method: ShippingMethodRow | undefined
  if (checkout.shippingMethodId !== undefined) {
    method = await findActiveShippingMethod(trx, checkout.shippingMethodId)
    if (!method) throw new AppError(404, 'shippingMethodNotFound')
  }
  return { address, method }
}

/**
 * Checks in the documented order: the referenced address and method (404), the empty cart (400), address and method
 * required while the shop ships and compatible (422), then stock (409). The body's choices win over those kept on
 * the cart (PATCH /cart). Everything runs in the transaction, so a failure at any step leaves the cart, the stock
 * and the orders as they were.
 */
async function createOrderFromCart(
  deps: OrdersDeps,
  trx: Transaction<Database>,
  ref: CartRef,
  key: string | undefined,
  checkout: CheckoutInput,
  step: NonNullable<PlaceOrderOptions['afterStep']>,
): Promise<Order> {
  const now = nowIso()
  const userId = ref.userId
  // Guest orders arrive with the orders' guest columns.
  if (userId === undefined) throw new AppError(401, 'noUser')
  const noCheckout: repo.CheckoutColumns = { subtotal_cents: null, shipping_cents: null, shipping_address: null, shipping_method: null, note: null }
  let orderId: number | undefined
  if (key !== undefined) {
    // The key is claimed first: a racing request with the same key waits here, then fails on the primary key
    // and answers the winner's order, instead of finding the cart already emptied.
    await repo.deleteExpiredIdempotencyKey(trx, userId, key, idempotencyCutoff())
    orderId = (await repo.insertOrder(trx, { user_id: userId, total_cents: 0, status: 'pending', created_at: now, updated_at: now, ...noCheckout })).id
    await repo.insertIdempotencyKey(trx, { user_id: userId, key, order_id: orderId, created_at: now })
    await step('key-claimed')
  }

  const chosen = await resolveCheckoutReferences(trx, userId, checkout)

  const { cart, lines } = await takeCart(trx, ref)
  if (lines.length === 0) throw new AppError(400, 'cartEmpty')
  await step('cart-taken')

  // What the body leaves out, the cart's kept choices give (an address or method gone since counts as none).
  const address =
    chosen.address ?? (checkout.shippingAddressId === undefined && checkout.shippingAddress === undefined ? await cartAddress(trx, ref, cart) : undefined)
  const method = chosen.method ?? (checkout.shippingMethodId === undefined ? await cartMethod(trx, cart) : undefined)
  const note = checkout.note ?? cart?.note ?? undefined

  // A named method is active, so the shop ships; otherwise one probe tells whether it does.
  const ships = method !== undefined || (await shopShips(trx))
  if (ships) {
    if (!address) throw new AppError(422, 'shippingAddressRequired')
    if (!method) throw new AppError(422, 'shippingMethodRequired')
    if (!shipsTo(method, address.country)) throw new AppError(422, 'shippingUnavailable', address.country)
  }

  // A product taken off sale (a draft again, or archived) since it was added is not sold: the inventory refuses it.
  const reserved = await deps.inventory.reserve(
    trx,
    lines.map((line) => ({ productId: line.product_id, variantId: line.variant_id, quantity: line.quantity })),
  )
  await step('stock-reserved')

  // Prices may have risen since the lines were added; past the maximum the sums would stop being exact.
  const totals = computeTotals({
    lines: reserved.map(({ variant, quantity }) => ({ unitCents: variant.price_cents, quantity })),
    shipping: method ? { priceCents: method.price_cents, freeOverCents: method.free_over_cents } : null,
  })
  if (!totals.withinLimits) throw new AppError(409, 'amountTooLarge')
  // A checkout order: a body with something in it, or a shop that ships. A plain order keeps the checkout columns null.
  const isCheckout = ships || Object.keys(checkout).length > 0 || address !== undefined || method !== undefined || note !== undefined
  const columns: repo.CheckoutColumns = isCheckout
    ? {
        subtotal_cents: totals.subtotalCents,
        shipping_cents: totals.shippingTotalCents,
        shipping_address: address ? JSON.stringify(address) : null,
        // The method as it was (its list price); what was charged is shippingTotal.
        shipping_method: method ? JSON.stringify({ id: method.id, name: method.name, price: centsToAmount(method.price_cents) }) : null,
        note: note ?? null,
      }
    : noCheckout

  const totalCents = totals.totalCents
  if (orderId === undefined) {
    orderId = (await repo.insertOrder(trx, { user_id: userId, total_cents: totalCents, status: 'pending', created_at: now, updated_at: now, ...columns })).id
  } else {
    await repo.setOrderTotals(trx, orderId, { total_cents: totalCents, ...columns })
  }
  await step('order-written')

  const id = orderId
  const items = await repo.insertOrderItems(
    trx,
    reserved.map(({ product, variant, quantity }) => ({
      order_id: id,
      product_id: product.id,
      variant_id: variant.id,
      sku: variant.sku,
      variant_title: variant.title,
      quantity,
      price_cents: variant.price_cents,
      name: product.name,
    })),
  )
  await step('items-written')

  // The answer is built from what the transaction already holds: no read-back query.
  const products = new Map(reserved.map(({ product }) => [product.id, product]))
  const record: OrderRecord = { id, user_id: userId, total_cents: totalCents, status: 'pending', created_at: now, updated_at: now, ...columns }
  const orderLines = items.sort((a, b) => a.id - b.id).map((item) => ({ ...item, product: products.get(item.product_id) }))
  const order = toOrder(record, orderLines, null, deps.payments)
  // Events: order.created, and stock.low for each product this order took to the threshold or below.
  await deps.events.emit(trx, { type: 'order.created', data: order })
  await deps.inventory.announceLowStock(trx, reserved)
  await clearCartAfterOrder(trx, ref, cart?.id)
  return order
}

/** One order: any order for an admin (with its customer and next statuses), only their own for a customer (someone else's is "not found"). */
export async function getOrder(deps: OrdersDeps, caller: AuthUser, id: number): Promise<Order> {
  const admin = caller.role === 'admin'
  return loadOrder(deps.db, deps.payments, id, admin ? { admin: deps.lifecycle } : { ownerId: caller.id })
}

/**
 * Newest first: the caller's own orders, or everyone's (with their customer) for an admin, or one customer's with
 * `userId`; `total` counts before paging. A customer may name only themselves: another id is the admin routes' 403.
 */
export async function listOrders(deps: OrdersDeps, caller: AuthUser, query: ListOrdersQuery): Promise<{ orders: Order[]; total: number }> {
  const { db } = deps
  const admin = caller.role === 'admin'
  if (!admin && query.userId !== undefined && query.userId !== caller.id) throw new AppError(403, 'requiresRoles', ['admin'])
  const userId = admin ? query.userId : caller.id
  const filter = { ...(userId !== undefined ? { userId } : {}), ...(query.status ? { status: query.status } : {}) }
  const [rows, total] = await Promise.all([repo.listOrdersWithItems(db, { ...filter, limit: query.limit, offset: query.offset }), repo.countOrders(db, filter)])
  return { orders: rowsToOrders(rows, deps.payments, admin ? deps.lifecycle : undefined), total }
}

/**
 * An admin moves an order along the lifecycle's transitions (the lifecycle does the rest: stock, payment, events).
 * The answer is the order as its owner reads it (an admin's GET adds `customer` and `nextStatuses`).
 */
export async function changeOrderStatus(deps: OrdersDeps, caller: AuthUser, id: number, to: OrderStatus, log: MoveRequest['log']): Promise<Order> {
  await deps.lifecycle.move({ orderId: id, to, cause: 'admin', actorId: caller.id, log })
  return loadOrder(deps.db, deps.payments, id)
}

/** The owner cancels their own `pending` order; the stock comes back. Someone else's order is "not found". */
export async function cancelOwnOrder(deps: OrdersDeps, userId: number, id: number, log: MoveRequest['log']): Promise<Order> {
  await deps.lifecycle.move({ orderId: id, to: 'cancelled', cause: 'customer', actorId: userId, ownerId: userId, log })
  return loadOrder(deps.db, deps.payments, id, { ownerId: userId })
}
