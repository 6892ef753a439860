import type { Kysely, Transaction } from 'kysely'
import type { Database, ShippingMethodRow } from '../../db/database.js'
import type { AuthUser } from '../../plugins/auth.js'
import { isUniqueViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import { centsToAmount, MAX_AMOUNT_CENTS } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { findOwnAddress } from '../addresses/addresses.repository.js'
import type { AddressSnapshot } from '../addresses/addresses.schemas.js'
import { addressInputToSnapshot, addressRowToSnapshot } from '../addresses/addresses.service.js'
import { findShippingMethod, hasActiveShippingMethod } from '../shipping/shipping.repository.js'
import type { ShippingMethodSnapshot } from '../shipping/shipping.schemas.js'
import { shippingCentsFor, shipsTo } from '../shipping/shipping.service.js'
import { findProductById } from '../catalog/products.repository.js'
import { productRowToProduct } from '../catalog/products.service.js'
import { emitEvent, emitStockChange, outboxOf } from '../outbox/dispatcher.js'
import { onOrderStatusChange } from '../payments/payments.service.js'
import * as repo from './orders.repository.js'
import type { ListOrdersQuery, Order, OrderItem, OrderStatus, PlaceOrderInput } from './orders.schemas.js'

type Db = Kysely<Database>

const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000

/** The moves an admin may make; anything else is a 409. */
const allowedMoves: Record<OrderStatus, readonly OrderStatus[]> = {
  pending: ['paid', 'cancelled'],
  paid: ['shipped', 'cancelled'],
  shipped: ['delivered'],
  delivered: [],
  cancelled: [],
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

/** An order as stored, in the shape both the joined read and the checkout transaction have it. */
interface OrderRecord {
  id: number
  user_id: number
  total_cents: number
  status: OrderStatus
  created_at: string
  updated_at: string
  subtotal_cents: number | null
  shipping_cents: number | null
  shipping_address: string | null
  shipping_method: string | null
  note: string | null
}

interface OrderLineRecord {
  id: number
  product_id: number
  quantity: number
  price_cents: number
  name: string | null
  product?: { id: number; name: string; image_url: string } | undefined
}

/** Who ordered, for admin reads: null once the user is deleted. */
type Customer = { id: number; name: string; email: string } | null

/**
 * The one place an order's JSON is assembled. Orders placed the plain way (no checkout body, no shipping: the
 * checkout columns are null) keep exactly their original shape; checkout orders add their totals, snapshots and
 * line names. `customer` is given only for admin reads.
 */
function toOrder(record: OrderRecord, lines: OrderLineRecord[], customer?: Customer): Order {
  const checkout = record.subtotal_cents !== null
  const order: Order = {
    id: record.id,
    userId: record.user_id,
    total: centsToAmount(record.total_cents),
    status: record.status,
    createdAt: record.created_at,
    updatedAt: record.updated_at,
    items: lines.map((line) => {
      const item: OrderItem = {
        id: line.id,
        orderId: record.id,
        productId: line.product_id,
        quantity: line.quantity,
        price: centsToAmount(line.price_cents),
      }
      if (checkout) item.name = line.name
      if (line.product) item.product = { id: line.product.id, name: line.product.name, imageUrl: line.product.image_url }
      return item
    }),
  }
  if (checkout) {
    order.subtotal = centsToAmount(record.subtotal_cents ?? 0)
    order.shippingTotal = centsToAmount(record.shipping_cents ?? 0)
    order.shippingAddress = record.shipping_address === null ? null : (JSON.parse(record.shipping_address) as AddressSnapshot)
    order.shippingMethod = record.shipping_method === null ? null : (JSON.parse(record.shipping_method) as ShippingMethodSnapshot)
    order.note = record.note
  }
  if (customer !== undefined) order.customer = customer
  return order
}

/** Groups the rows of the joined order query into API orders, keeping the rows' order. */
function rowsToOrders(rows: repo.OrderWithItemRow[], withCustomer = false): Order[] {
  const orders: Order[] = []
  let current: { first: repo.OrderWithItemRow; lines: OrderLineRecord[] } | undefined
  const flush = () => {
    if (!current) return
    const row = current.first
    const customer = row.customer_name !== null && row.customer_email !== null ? { id: row.user_id, name: row.customer_name, email: row.customer_email } : null
    orders.push(toOrder(row, current.lines, withCustomer ? customer : undefined))
  }
  for (const row of rows) {
    if (current?.first.id !== row.id) {
      flush()
      current = { first: row, lines: [] }
    }
    if (row.item_id === null || row.product_id === null || row.quantity === null || row.price_cents === null) continue
    current.lines.push({
      id: row.item_id,
      product_id: row.product_id,
      quantity: row.quantity,
      price_cents: row.price_cents,
      name: row.item_name,
      product:
        row.p_id !== null && row.p_name !== null && row.p_image_url !== null ? { id: row.p_id, name: row.p_name, image_url: row.p_image_url } : undefined,
    })
  }
  flush()
  return orders
}

async function loadOrder(db: Parameters<typeof repo.findOrderWithItems>[0], id: number, ownerId?: number, withCustomer = false): Promise<Order> {
  const [order] = rowsToOrders(await repo.findOrderWithItems(db, id, ownerId), withCustomer)
  if (!order) throw new AppError(404, messages.orderNotFound)
  return order
}

/** Whether a key's first order is still the answer: keys older than this name a new order. */
function idempotencyCutoff(): string {
  return new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString()
}

/** The checkout body, as validated by the route's schema (every field optional). */
export type CheckoutInput = PlaceOrderInput

/**
 * Turns the user's cart into a `pending` order in one transaction: the cart is emptied, each line's stock is taken
 * with a conditional update (in product id order, so two buyers never wait on each other in a cycle), unit prices
 * are copied and the order is written. Any failure rolls all of it back. With an idempotency key, a key already used
 * by this user in the last 24 hours returns that order instead (`created: false`), also when requests race.
 * `checkout` carries the address, shipping method and note (see createOrderFromCart for the order of its checks).
 */
export async function placeOrder(
  db: Db,
  userId: number,
  options: PlaceOrderOptions = {},
  checkout: CheckoutInput = {},
): Promise<{ order: Order; created: boolean }> {
  // Body fields come first (422), before a repeated key is answered or anything is read.
  if (checkout.shippingAddressId !== undefined && checkout.shippingAddress !== undefined) throw new ValidationError(messages.addressIdAndInline)
  const key = options.idempotencyKey
  if (key !== undefined) {
    const existing = await repo.findOrderIdByIdempotencyKey(db, userId, key, idempotencyCutoff())
    if (existing !== undefined) return { order: await loadOrder(db, existing), created: false }
  }
  try {
    const order = await retryOnDeadlock(() =>
      db.transaction().execute((trx) => createOrderFromCart(db, trx, userId, key, checkout, options.afterStep ?? (() => undefined))),
    )
    return { order, created: true }
  } catch (error) {
    // Lost a race for the same key: the winner's order is the answer.
    if (key !== undefined && isUniqueViolation(error)) {
      const winner = await repo.findOrderIdByIdempotencyKey(db, userId, key, idempotencyCutoff())
      if (winner !== undefined) return { order: await loadOrder(db, winner), created: false }
    }
    throw error
  }
}

/** The address and method a checkout names (404 when unknown, someone else's or inactive). */
async function resolveCheckoutReferences(trx: Transaction<Database>, userId: number, checkout: CheckoutInput) {
  let address: AddressSnapshot | undefined
  if (checkout.shippingAddressId !== undefined) {
    const row = await findOwnAddress(trx, userId, checkout.shippingAddressId)
    if (!row) throw new AppError(404, messages.addressNotFound)
    address = addressRowToSnapshot(row)
  } else if (checkout.shippingAddress !== undefined) {
    // Used for this order only, not saved to the address book.
    address = addressInputToSnapshot(checkout.shippingAddress)
  }
  let method: ShippingMethodRow | undefined
  if (checkout.shippingMethodId !== undefined) {
    method = await findShippingMethod(trx, checkout.shippingMethodId)
    if (!method || method.active !== 1) throw new AppError(404, messages.shippingMethodNotFound)
  }
  return { address, method }
}

/**
 * Checks in the documented order: the referenced address and method (404), the empty cart (400), address and method
 * required while the shop ships and compatible (422), then stock (409). Everything runs in the transaction, so a
 * failure at any step leaves the cart, the stock and the orders as they were.
 */
async function createOrderFromCart(
  db: Db,
  trx: Transaction<Database>,
  userId: number,
  key: string | undefined,
  checkout: CheckoutInput,
  step: NonNullable<PlaceOrderOptions['afterStep']>,
): Promise<Order> {
  const now = nowIso()
  let orderId: number | undefined
  if (key !== undefined) {
    // The key is claimed first: a racing request with the same key waits here, then fails on the primary key
    // and answers the winner's order, instead of finding the cart already emptied.
    await repo.deleteExpiredIdempotencyKey(trx, userId, key, idempotencyCutoff())
    orderId = (await repo.insertOrder(trx, { user_id: userId, total_cents: 0, status: 'pending', created_at: now, updated_at: now })).id
    await repo.insertIdempotencyKey(trx, { user_id: userId, key, order_id: orderId, created_at: now })
    await step('key-claimed')
  }

  const { address, method } = await resolveCheckoutReferences(trx, userId, checkout)

  const lines = await repo.takeCartLines(trx, userId)
  if (lines.length === 0) throw new AppError(400, messages.cartEmpty)
  lines.sort((a, b) => a.product_id - b.product_id)
  await step('cart-taken')

  // A named method is active, so the shop ships; otherwise one probe tells whether it does.
  const shopShips = method !== undefined || (await hasActiveShippingMethod(trx))
  if (shopShips) {
    if (!address) throw new AppError(422, messages.shippingAddressRequired)
    if (!method) throw new AppError(422, messages.shippingMethodRequired)
    if (!shipsTo(method, address.country)) throw new AppError(422, `${messages.shippingUnavailable} ${address.country}`)
  }

  let subtotalCents = 0
  const reserved = []
  for (const line of lines) {
    const product = await repo.reserveStock(trx, line.product_id, line.quantity)
    if (!product) {
      const found = await repo.findProductName(trx, line.product_id)
      throw found ? new AppError(409, messages.insufficientStockFor(found.name)) : new AppError(404, messages.productNotFound)
    }
    subtotalCents += product.price_cents * line.quantity
    // Prices may have risen since the lines were added; past the maximum the sum would stop being exact.
    if (subtotalCents > MAX_AMOUNT_CENTS) throw new AppError(409, messages.amountTooLarge)
    reserved.push({ product, quantity: line.quantity })
  }
  await step('stock-reserved')

  const shippingCents = method ? shippingCentsFor(method, subtotalCents) : 0
  const totalCents = subtotalCents + shippingCents
  if (totalCents > MAX_AMOUNT_CENTS) throw new AppError(409, messages.amountTooLarge)
  // A checkout order: a body with something in it, or a shop that ships. A plain order keeps the checkout columns null.
  const isCheckout = shopShips || Object.keys(checkout).length > 0
  const columns: repo.CheckoutColumns = isCheckout
    ? {
        subtotal_cents: subtotalCents,
        shipping_cents: shippingCents,
        shipping_address: address ? JSON.stringify(address) : null,
        // The method as it was (its list price); what was charged is shippingTotal.
        shipping_method: method ? JSON.stringify({ id: method.id, name: method.name, price: centsToAmount(method.price_cents) }) : null,
        note: checkout.note ?? null,
      }
    : { subtotal_cents: null, shipping_cents: null, shipping_address: null, shipping_method: null, note: null }

  if (orderId === undefined) {
    orderId = (await repo.insertOrder(trx, { user_id: userId, total_cents: totalCents, status: 'pending', created_at: now, updated_at: now, ...columns })).id
  } else {
    await repo.setOrderTotals(trx, orderId, { total_cents: totalCents, ...columns })
  }
  await step('order-written')

  const id = orderId
  const items = await repo.insertOrderItems(
    trx,
    reserved.map(({ product, quantity }) => ({ order_id: id, product_id: product.id, quantity, price_cents: product.price_cents, name: product.name })),
  )
  await step('items-written')

  // The answer is built from what the transaction already holds: no read-back query.
  const products = new Map(reserved.map(({ product }) => [product.id, product]))
  const record: OrderRecord = { id, user_id: userId, total_cents: totalCents, status: 'pending', created_at: now, updated_at: now, ...columns }
  const orderLines = items.sort((a, b) => a.id - b.id).map((item) => ({ ...item, product: products.get(item.product_id) }))
  const order = toOrder(record, orderLines)
  // Events: order.created, and stock.low for each product this order took to the threshold or below.
  await emitEvent(db, trx, { type: 'order.created', data: order })
  for (const { product, quantity } of reserved) await emitLowStock(db, trx, product.id, product.stock + quantity)
  return order
}

/** stock.low for one product whose stock was `stockBefore` before this transaction changed it (the rule is emitStockChange's). */
async function emitLowStock(db: Db, trx: Transaction<Database>, productId: number, stockBefore: number): Promise<void> {
  if (!outboxOf(db)) return
  const row = await findProductById(trx, productId)
  if (row) await emitStockChange(db, trx, productRowToProduct(row), stockBefore)
}

/**
 * The events of an order's move to `to`, in the move's transaction: order.status_changed always, and order.paid or
 * order.cancelled for those moves. Every path that moves an order calls it (here, Stripe's payment, the expiry).
 */
export async function emitStatusEvents(db: Db, trx: Transaction<Database>, id: number, to: OrderStatus): Promise<void> {
  if (!outboxOf(db)) return
  const order = await loadOrder(trx, id, undefined)
  await emitEvent(db, trx, { type: 'order.status_changed', data: order })
  if (to === 'paid') await emitEvent(db, trx, { type: 'order.paid', data: order })
  if (to === 'cancelled') await emitEvent(db, trx, { type: 'order.cancelled', data: order })
}

/** One order: any order for an admin (with its customer), only their own for a customer (someone else's is "not found"). */
export async function getOrder(db: Db, caller: AuthUser, id: number): Promise<Order> {
  const admin = caller.role === 'admin'
  return loadOrder(db, id, admin ? undefined : caller.id, admin)
}

/** Newest first: the caller's own orders, or everyone's (with their customer) for an admin; `total` counts before paging. */
export async function listOrders(db: Db, caller: AuthUser, query: ListOrdersQuery): Promise<{ orders: Order[]; total: number }> {
  const admin = caller.role === 'admin'
  const filter = { ...(admin ? {} : { userId: caller.id }), ...(query.status ? { status: query.status } : {}) }
  const [rows, total] = await Promise.all([repo.listOrdersWithItems(db, { ...filter, limit: query.limit, offset: query.offset }), repo.countOrders(db, filter)])
  return { orders: rowsToOrders(rows, admin), total }
}

/**
 * Moves an order from `from` to `to` inside `trx`, conditional on the status just read: of two concurrent moves,
 * only one applies (and restocks). Every status change goes through here, so whatever a move must also do
 * (cancelling puts the units back) happens once, in the same transaction.
 */
async function applyTransition(db: Db, trx: Transaction<Database>, id: number, from: OrderStatus, to: OrderStatus): Promise<() => Promise<void>> {
  if (!allowedMoves[from].includes(to)) throw new AppError(409, messages.transitionNotAllowed(from, to))
  // Conditional on the status just read: of two concurrent moves, only one applies (and restocks).
  if (!(await repo.updateOrderStatus(trx, id, from, to, nowIso()))) {
    const now = await repo.findOrderStatus(trx, id)
    throw new AppError(409, messages.transitionNotAllowed(now?.status ?? from, to))
  }
  if (to === 'cancelled') {
    for (const line of await repo.listOrderLines(trx, id)) await repo.releaseStock(trx, line.product_id, line.quantity)
  }
  await emitStatusEvents(db, trx, id, to)
  // Payments: a paid order is refunded before this commits (a failed refund rolls all of it back with a 502);
  // an unpaid one's intent is cancelled after the commit, by the function returned.
  return onOrderStatusChange(db, trx, { orderId: id, from, to })
}

/** Moves an order along the allowed transitions; cancelling puts its units back into stock in the same transaction. */
export async function changeOrderStatus(db: Db, id: number, to: OrderStatus): Promise<Order> {
  let afterCommit: () => Promise<void> = async () => {}
  const order = await db.transaction().execute(async (trx) => {
    const current = await repo.findOrderStatus(trx, id)
    if (!current) throw new AppError(404, messages.orderNotFound)
    afterCommit = await applyTransition(db, trx, id, current.status, to)
    return loadOrder(trx, id)
  })
  await afterCommit()
  return order
}

/** The owner cancels their own `pending` order; the stock comes back. Someone else's order is "not found". */
export async function cancelOwnOrder(db: Db, userId: number, id: number): Promise<Order> {
  let afterCommit: () => Promise<void> = async () => {}
  const order = await db.transaction().execute(async (trx) => {
    const current = await repo.findOrderStatus(trx, id, userId)
    if (!current) throw new AppError(404, messages.orderNotFound)
    if (current.status !== 'pending') throw new AppError(409, messages.transitionNotAllowed(current.status, 'cancelled'))
    afterCommit = await applyTransition(db, trx, id, 'pending', 'cancelled')
    return loadOrder(trx, id)
  })
  await afterCommit()
  return order
}
