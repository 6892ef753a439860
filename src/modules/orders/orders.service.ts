import { type Kysely, PostgresAdapter, sql, type Transaction } from 'kysely'
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
import { enqueueEmail } from '../outbox/outbox.js'
import { findActiveShippingMethod, shipsTo, shopShips } from '../shipping/shipping.service.js'
import { type MoveRequest, OrderLifecycle } from './order-lifecycle.js'
import { loadOrder, type OrderRecord, type PaymentDefaults, rowsToOrders, toOrder } from './order-view.js'
import * as repo from './orders.repository.js'
import { orderLinkUrl, type OrderTokens } from './order-token.js'
import type { ListOrdersQuery, Order, OrderLookupInput, OrderStatus, PlaceOrderInput } from './orders.schemas.js'
import { computeTotals } from '../totals/totals.js'

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
    const existing = await repo.findOrderIdByIdempotencyKey(db, { userId }, key, idempotencyCutoff())
    if (existing !== undefined) return { order: await loadOrder(db, deps.payments, existing), created: false }
  }
  try {
    const order = await retryOnDeadlock(() =>
      db.transaction().execute((trx) => createOrderFromCart(deps, trx, userId, key, checkout, options.afterStep ?? (() => undefined))),
    )
    return { order, created: true }
  } catch (error) {
    // Lost a race for the same key: the winner's order is the answer.
    if (key !== undefined && isUniqueViolation(error)) {
      const winner = await repo.findOrderIdByIdempotencyKey(db, { userId }, key, idempotencyCutoff())
      if (winner !== undefined) return { order: await loadOrder(db, deps.payments, winner), created: false }
    }
    throw error
  }
}

/** The address and method a checkout names (404 when unknown, someone else's or inactive). */
async function resolveCheckoutReferences(trx: Transaction<Database>, userId: number, checkout: CheckoutInput) {
  let address: AddressSnapshot | undefined
  if (checkout.shippingAddressId !== undefined) {
    address = await findOwnAddressSnapshot(trx, userId, checkout.shippingAddressId)
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
 * required while the shop ships and compatible (422), then stock (409). Everything runs in the transaction, so a
 * failure at any step leaves the cart, the stock and the orders as they were.
 */
async function createOrderFromCart(
  deps: OrdersDeps,
  trx: Transaction<Database>,
  userId: number,
  key: string | undefined,
  checkout: CheckoutInput,
  step: NonNullable<PlaceOrderOptions['afterStep']>,
): Promise<Order> {
  const now = nowIso()
  const noCheckout: repo.CheckoutColumns = { subtotal_cents: null, shipping_cents: null, shipping_address: null, shipping_method: null, note: null }
  let orderId: number | undefined
  if (key !== undefined) {
    // The key is claimed first: a racing request with the same key waits here, then fails on the primary key
    // and answers the winner's order, instead of finding the cart already emptied.
    await repo.deleteExpiredIdempotencyKey(trx, { userId }, key, idempotencyCutoff())
    orderId = (await repo.insertOrder(trx, { user_id: userId, total_cents: 0, status: 'pending', created_at: now, updated_at: now, ...noCheckout })).id
    await repo.insertIdempotencyKey(trx, { scope: { userId }, key, order_id: orderId, created_at: now })
    await step('key-claimed')
  }

  const { address, method } = await resolveCheckoutReferences(trx, userId, checkout)

  const lines = await repo.takeCartLines(trx, userId)
  if (lines.length === 0) throw new AppError(400, 'cartEmpty')
  await step('cart-taken')

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
  const isCheckout = ships || Object.keys(checkout).length > 0
  const columns: repo.CheckoutColumns = isCheckout
    ? {
        subtotal_cents: totals.subtotalCents,
        shipping_cents: totals.shippingCents,
        shipping_address: address ? JSON.stringify(address) : null,
        // The method as it was (its list price); what was charged is shippingTotal.
        shipping_method: method ? JSON.stringify({ id: method.id, name: method.name, price: centsToAmount(method.price_cents) }) : null,
        note: checkout.note ?? null,
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
  // An account order's e-mail is its user's.
  const email = (await repo.findAccountEmail(trx, userId)) ?? null
  const record: OrderRecord = { id, user_id: userId, guest: 0, email, total_cents: totalCents, status: 'pending', created_at: now, updated_at: now, ...columns }
  const orderLines = items.sort((a, b) => a.id - b.id).map((item) => ({ ...item, product: products.get(item.product_id) }))
  const order = toOrder(record, orderLines, null, deps.payments)
  // Events: order.created, and stock.low for each product this order took to the threshold or below.
  await deps.events.emit(trx, { type: 'order.created', data: order })
  await deps.inventory.announceLowStock(trx, reserved)
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
  const filter: repo.OrderFilter = {
    ...(userId !== undefined ? { userId } : {}),
    ...(query.status ? { status: query.status } : {}),
    ...(query.guest !== undefined ? { guest: query.guest } : {}),
    ...(query.email !== undefined ? { email: query.email.trim().toLowerCase() } : {}),
  }
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

/** A guest's order as its order token opens it: the order as its owner reads it (no `customer`, no `nextStatuses`). */
export async function getOrderByToken(deps: OrdersDeps, id: number): Promise<Order> {
  return loadOrder(deps.db, deps.payments, id)
}

/** The guest cancels their `pending` order through its link (the token named it); the stock comes back. */
export async function cancelOrderByToken(deps: OrdersDeps, id: number, log: MoveRequest['log']): Promise<Order> {
  await deps.lifecycle.move({ orderId: id, to: 'cancelled', cause: 'customer', actorId: null, log })
  return loadOrder(deps.db, deps.payments, id)
}

// ---- links to a guest's order ----

/** What a link to a guest's order needs: the tokens (app.orderTokens) and the storefront's address (SHOP_URL). */
export interface OrderLinkSettings {
  tokens: OrderTokens
  /** Without a trailing slash. */
  shopUrl: string
}

/**
 * An order token for `orderId`, valid GUEST_ORDER_LINK_TTL from `issuedAt` (ms; now by default), and the link that
 * carries it. Guest checkout signs as of the order's `createdAt`: its 201, a replay of it and the order-received
 * e-mail then carry the very same token.
 */
export function orderLink(settings: OrderLinkSettings, orderId: number, issuedAt?: number): { orderToken: string; link: string } {
  const orderToken = settings.tokens.sign(orderId, issuedAt)
  return { orderToken, link: orderLinkUrl(settings.shopUrl, orderId, orderToken) }
}

/**
 * POST /orders/lookup: e-mails a fresh link to a guest order whose e-mail is `email` (ignoring case). Account
 * orders and anything that does not match get nothing, and the caller answers the same 202 either way. Both ways do
 * the same work short of the e-mail's row (the order read by id, a token signed, one transaction), so the answer
 * takes about as long whether or not the data matched.
 */
export async function requestOrderLink(deps: OrdersDeps, input: OrderLookupInput, settings: OrderLinkSettings): Promise<void> {
  const { db } = deps
  const email = input.email.trim().toLowerCase()
  const { link } = orderLink(settings, input.orderId)
  await db.transaction().execute(async (trx) => {
    // As the password-reset request: a commit that wrote a row waits for its WAL flush on PostgreSQL, one that
    // wrote none does not, which would tell a match from a miss. The e-mail does not need that wait.
    if (db.getExecutor().adapter instanceof PostgresAdapter) await sql`set local synchronous_commit = off`.execute(trx)
    const order = await repo.findOrderContact(trx, input.orderId)
    if (order?.guest !== 1 || order.email === null || order.email.toLowerCase() !== email) return
    await enqueueEmail(trx, { template: 'guest-order-link', to: order.email, data: { order: { id: order.id }, link } })
  })
}
