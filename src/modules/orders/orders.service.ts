import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import type { AuthUser } from '../../plugins/auth.js'
import { isUniqueViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import { centsToAmount, MAX_AMOUNT_CENTS } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { onOrderStatusChange } from '../payments/payments.service.js'
import * as repo from './orders.repository.js'
import type { ListOrdersQuery, Order, OrderItem, OrderStatus } from './orders.schemas.js'

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

/** Groups the rows of the joined order query into API orders, keeping the rows' order. */
function rowsToOrders(rows: repo.OrderWithItemRow[]): Order[] {
  const orders: Order[] = []
  let current: Order | undefined
  for (const row of rows) {
    if (current?.id !== row.id) {
      current = {
        id: row.id,
        userId: row.user_id,
        total: centsToAmount(row.total_cents),
        status: row.status,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
        items: [],
      }
      orders.push(current)
    }
    if (row.item_id === null || row.product_id === null || row.quantity === null || row.price_cents === null) continue
    const item: OrderItem = {
      id: row.item_id,
      orderId: row.id,
      productId: row.product_id,
      quantity: row.quantity,
      price: centsToAmount(row.price_cents),
    }
    if (row.p_id !== null && row.p_name !== null && row.p_image_url !== null) {
      item.product = { id: row.p_id, name: row.p_name, imageUrl: row.p_image_url }
    }
    current.items.push(item)
  }
  return orders
}

async function loadOrder(db: Parameters<typeof repo.findOrderWithItems>[0], id: number, ownerId?: number): Promise<Order> {
  const [order] = rowsToOrders(await repo.findOrderWithItems(db, id, ownerId))
  if (!order) throw new AppError(404, messages.orderNotFound)
  return order
}

/** Whether a key's first order is still the answer: keys older than this name a new order. */
function idempotencyCutoff(): string {
  return new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString()
}

/**
 * Turns the user's cart into a `pending` order in one transaction: the cart is emptied, each line's stock is taken
 * with a conditional update (in product id order, so two buyers never wait on each other in a cycle), unit prices
 * are copied and the order is written. Any failure rolls all of it back. With an idempotency key, a key already used
 * by this user in the last 24 hours returns that order instead (`created: false`), also when requests race.
 */
export async function placeOrder(db: Db, userId: number, options: PlaceOrderOptions = {}): Promise<{ order: Order; created: boolean }> {
  const key = options.idempotencyKey
  if (key !== undefined) {
    const existing = await repo.findOrderIdByIdempotencyKey(db, userId, key, idempotencyCutoff())
    if (existing !== undefined) return { order: await loadOrder(db, existing), created: false }
  }
  try {
    const order = await retryOnDeadlock(() => db.transaction().execute((trx) => createOrderFromCart(trx, userId, key, options.afterStep ?? (() => undefined))))
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

async function createOrderFromCart(
  trx: Transaction<Database>,
  userId: number,
  key: string | undefined,
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

  const lines = await repo.takeCartLines(trx, userId)
  if (lines.length === 0) throw new AppError(400, messages.cartEmpty)
  lines.sort((a, b) => a.product_id - b.product_id)
  await step('cart-taken')

  let totalCents = 0
  const reserved = []
  for (const line of lines) {
    const product = await repo.reserveStock(trx, line.product_id, line.quantity)
    if (!product) {
      const found = await repo.findProductName(trx, line.product_id)
      throw found ? new AppError(409, messages.insufficientStockFor(found.name)) : new AppError(404, messages.productNotFound)
    }
    totalCents += product.price_cents * line.quantity
    // Prices may have risen since the lines were added; past the maximum the sum would stop being exact.
    if (totalCents > MAX_AMOUNT_CENTS) throw new AppError(409, messages.amountTooLarge)
    reserved.push({ product, quantity: line.quantity })
  }
  await step('stock-reserved')

  if (orderId === undefined) {
    orderId = (await repo.insertOrder(trx, { user_id: userId, total_cents: totalCents, status: 'pending', created_at: now, updated_at: now })).id
  } else {
    await repo.setOrderTotal(trx, orderId, totalCents)
  }
  await step('order-written')

  const id = orderId
  const items = await repo.insertOrderItems(
    trx,
    reserved.map(({ product, quantity }) => ({ order_id: id, product_id: product.id, quantity, price_cents: product.price_cents })),
  )
  await step('items-written')

  // The answer is built from what the transaction already holds: no read-back query.
  const products = new Map(reserved.map(({ product }) => [product.id, product]))
  return {
    id,
    userId,
    total: centsToAmount(totalCents),
    status: 'pending',
    createdAt: now,
    updatedAt: now,
    items: items
      .sort((a, b) => a.id - b.id)
      .map((item) => {
        const product = products.get(item.product_id)
        return {
          id: item.id,
          orderId: item.order_id,
          productId: item.product_id,
          quantity: item.quantity,
          price: centsToAmount(item.price_cents),
          ...(product ? { product: { id: product.id, name: product.name, imageUrl: product.image_url } } : {}),
        }
      }),
  }
}

/** One order: any order for an admin, only their own for a customer (someone else's is "not found"). */
export async function getOrder(db: Db, caller: AuthUser, id: number): Promise<Order> {
  return loadOrder(db, id, caller.role === 'admin' ? undefined : caller.id)
}

/** Newest first: the caller's own orders, or everyone's for an admin. */
export async function listOrders(db: Db, caller: AuthUser, query: ListOrdersQuery): Promise<Order[]> {
  const rows = await repo.listOrdersWithItems(db, {
    ...(caller.role === 'admin' ? {} : { userId: caller.id }),
    ...(query.status ? { status: query.status } : {}),
    limit: query.limit,
    offset: query.offset,
  })
  return rowsToOrders(rows)
}

/** Moves an order along the allowed transitions; cancelling puts its units back into stock in the same transaction. */
export async function changeOrderStatus(db: Db, id: number, to: OrderStatus): Promise<Order> {
  let afterCommit: () => Promise<void> = async () => {}
  const order = await db.transaction().execute(async (trx) => {
    const current = await repo.findOrderStatus(trx, id)
    if (!current) throw new AppError(404, messages.orderNotFound)
    const from = current.status
    if (!allowedMoves[from].includes(to)) throw new AppError(409, messages.transitionNotAllowed(from, to))
    // Conditional on the status just read: of two concurrent moves, only one applies (and restocks).
    if (!(await repo.updateOrderStatus(trx, id, from, to, nowIso()))) {
      const now = await repo.findOrderStatus(trx, id)
      throw new AppError(409, messages.transitionNotAllowed(now?.status ?? from, to))
    }
    if (to === 'cancelled') {
      for (const line of await repo.listOrderLines(trx, id)) await repo.releaseStock(trx, line.product_id, line.quantity)
    }
    // Payments: a paid order is refunded before this commits (a failed refund rolls all of it back with a 502);
    // an unpaid one's intent is cancelled after.
    afterCommit = await onOrderStatusChange(db, trx, { orderId: id, from, to })
    return loadOrder(trx, id)
  })
  await afterCommit()
  return order
}
