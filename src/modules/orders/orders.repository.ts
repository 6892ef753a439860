import { type ExpressionBuilder, type Kysely, type SelectQueryBuilder, sql, type Transaction } from 'kysely'
import { isPostgres } from '../../db/dialect.js'
import { prepared, preparedRows } from '../../db/prepared.js'
import { holdCode } from '../discounts/code-lock.js'
import type { Database, OrderRow } from '../../db/database.js'
import type { FulfillmentStatus } from './fulfillments.schemas.js'
import type { OrderStatus } from './orders.schemas.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

// ---- order creation (inside the order transaction) ----

/** What checkout adds to an order row; all null on an order placed the plain way. */
export interface CheckoutColumns {
  subtotal_cents: number | null
  shipping_cents: number | null
  shipping_address: string | null
  shipping_method: string | null
  note: string | null
}

/** The breakdown every order placed now keeps (the totals function's, at checkout). */
export interface BreakdownColumns {
  currency: string | null
  prices_include_tax: number | null
  tax_country: string | null
  discount_total_cents: number | null
  shipping_discount_cents: number | null
  tax_total_cents: number | null
  discount: string | null
  tax_lines: string | null
  /** The code's redemption (`redemptionColumns` of the discounts' service), or both null. */
  discount_code_id: number | null
  discount_email: string | null
}

export const noBreakdown: BreakdownColumns = {
  currency: null,
  prices_include_tax: null,
  tax_country: null,
  discount_total_cents: null,
  shipping_discount_cents: null,
  tax_total_cents: null,
  discount: null,
  tax_lines: null,
  discount_code_id: null,
  discount_email: null,
}

/**
 * An order row to write: an account order names its user (`user_id`; `guest` and `email` left out), a guest order
 * has `user_id: null`, `guest: true` and the guest's `email` (the table's check refuses any other mix).
 */
export type NewOrder = {
  user_id: number | null
  total_cents: number
  status: OrderStatus
  created_at: string
  updated_at: string
  guest?: boolean
  email?: string | null
} & CheckoutColumns &
  BreakdownColumns

/**
 * Writes the order. One that holds a code's use (`discount_code_id`) takes the code's shared lock with its row, on
 * PostgreSQL (`holdCode`: `redeem` then reads the code in a statement of its own).
 */
export async function insertOrder(trx: Trx, order: NewOrder): Promise<OrderRow> {
  const values = { ...order, guest: order.guest === true ? 1 : 0, email: order.email ?? null }
  const statement = order.discount_code_id != null && isPostgres(trx) ? insertOrderHoldingCodeStatement : insertOrderStatement
  const [row] = (await statement(trx, values)).rows
  if (!row) throw new Error('insert into orders returned no row')
  return row
}

type OrderValues = Omit<NewOrder, 'guest' | 'email'> & { guest: number; email: string | null }

const insertOrderStatement = prepared((db, order: OrderValues) => orderInsert(db, order))

const insertOrderHoldingCodeStatement = prepared((db, order: OrderValues) =>
  orderInsert(db, order).returning(holdCode(order.discount_code_id ?? 0).as('code_held')),
)

function orderInsert(db: Kysely<Database>, order: OrderValues) {
  return db
    .insertInto('orders')
    .values({
      user_id: order.user_id,
      total_cents: order.total_cents,
      status: order.status,
      created_at: order.created_at,
      updated_at: order.updated_at,
      subtotal_cents: order.subtotal_cents,
      shipping_cents: order.shipping_cents,
      shipping_address: order.shipping_address,
      shipping_method: order.shipping_method,
      note: order.note,
      currency: order.currency,
      prices_include_tax: order.prices_include_tax,
      tax_country: order.tax_country,
      discount_total_cents: order.discount_total_cents,
      shipping_discount_cents: order.shipping_discount_cents,
      tax_total_cents: order.tax_total_cents,
      discount: order.discount,
      tax_lines: order.tax_lines,
      discount_code_id: order.discount_code_id,
      discount_email: order.discount_email,
      guest: order.guest,
      email: order.email,
    })
    .returningAll()
}

export async function setOrderTotals(
  trx: Trx,
  orderId: number,
  totals: { total_cents: number; email?: string | null } & Partial<CheckoutColumns & BreakdownColumns>,
): Promise<void> {
  await trx.updateTable('orders').set(totals).where('id', '=', orderId).execute()
}

export async function insertOrderItems(trx: Trx, items: NewOrderItem[]) {
  return (await insertOrderItemsStatement(trx, items)).rows
}

// Compiled once per number of lines, up to an order of 20 (a larger one is built each time).
const insertOrderItemsStatement = preparedRows((db, items: readonly NewOrderItem[]) => db.insertInto('order_items').values(items).returningAll(), 20)

type NewOrderItem = {
  order_id: number
  product_id: number
  variant_id: number
  sku: string | null
  variant_title: string | null
  quantity: number
  price_cents: number
  name: string
  options: string | null
  tax_class: string | null
  tax_rate: number | null
  discount_cents: number
  tax_cents: number
  total_cents: number
}

/**
 * The name and e-mail of the user an account order is placed for (the order's `email`; its e-mails' addressee).
 */
export async function findAccount(trx: Trx, userId: number): Promise<{ name: string; email: string } | undefined> {
  return (await findAccountStatement(trx, { userId })).rows[0]
}

// Read by every checkout of an account: compiled once.
const findAccountStatement = prepared((db, v: { userId: number }) => db.selectFrom('users').select(['name', 'email']).where('id', '=', v.userId))

// ---- idempotency keys ----

/** Whose `Idempotency-Key` it is: a user's, or a guest cart's (the hash of its token, as the cart stores it). */
export type IdempotencyScope = { userId: number } | { cartTokenHash: string }

function scopeColumns(scope: IdempotencyScope): { user_id: number | null; cart_token_hash: string | null } {
  return 'userId' in scope ? { user_id: scope.userId, cart_token_hash: null } : { user_id: null, cart_token_hash: scope.cartTokenHash }
}

function inScope<O>(qb: SelectQueryBuilder<Database, 'idempotency_keys', O>, scope: IdempotencyScope) {
  return 'userId' in scope ? qb.where('user_id', '=', scope.userId) : qb.where('cart_token_hash', '=', scope.cartTokenHash)
}

export async function findOrderIdByIdempotencyKey(db: Db, scope: IdempotencyScope, key: string, notBefore: string) {
  const row = await inScope(db.selectFrom('idempotency_keys').select('order_id'), scope)
    .where('key', '=', key)
    .where('created_at', '>=', notBefore)
    .executeTakeFirst()
  return row?.order_id
}

/** Frees a key whose 24 hours are over, so it can name a new order. */
export async function deleteExpiredIdempotencyKey(trx: Trx, scope: IdempotencyScope, key: string, before: string): Promise<void> {
  const columns = scopeColumns(scope)
  await trx
    .deleteFrom('idempotency_keys')
    .$if(columns.user_id !== null, (qb) => qb.where('user_id', '=', columns.user_id as number))
    .$if(columns.cart_token_hash !== null, (qb) => qb.where('cart_token_hash', '=', columns.cart_token_hash as string))
    .where('key', '=', key)
    .where('created_at', '<', before)
    .execute()
}

/**
 * The unique index of the key's scope, (user_id, key) or (cart_token_hash, key), decides a race between requests
 * with the same key: the loser gets a unique violation.
 */
export async function insertIdempotencyKey(trx: Trx, row: { scope: IdempotencyScope; key: string; order_id: number; created_at: string }) {
  await trx
    .insertInto('idempotency_keys')
    .values({ ...scopeColumns(row.scope), key: row.key, order_id: row.order_id, created_at: row.created_at })
    .execute()
}

// ---- reading orders (one joined query, never one per line) ----

function selectOrdersWithItems(db: Db | Trx) {
  return (
    db
      .selectFrom('orders as o')
      .leftJoin('order_items as i', 'i.order_id', 'o.id')
      .leftJoin('products as p', 'p.id', 'i.product_id')
      // The customer, for admin reads; a deleted user leaves nulls.
      .leftJoin('users as u', 'u.id', 'o.user_id')
      // `payment`, on every order (none yet: the shop's provider, unpaid).
      .leftJoin('payments as pay', 'pay.order_id', 'o.id')
      .select([
        'o.id',
        'o.user_id',
        'o.total_cents',
        'o.status',
        'o.created_at',
        'o.updated_at',
        'o.subtotal_cents',
        'o.shipping_cents',
        'o.shipping_address',
        'o.shipping_method',
        'o.note',
        'o.currency',
        'o.prices_include_tax',
        'o.tax_country',
        'o.discount_total_cents',
        'o.shipping_discount_cents',
        'o.tax_total_cents',
        'o.discount',
        'o.tax_lines',
        'o.guest',
        'o.email',
        'u.name as customer_name',
        'u.email as customer_email',
        'i.id as item_id',
        'i.product_id',
        'i.quantity',
        'i.price_cents',
        'i.name as item_name',
        'i.variant_id',
        'i.sku',
        'i.variant_title',
        'i.options',
        'i.tax_class',
        'i.tax_rate',
        'i.discount_cents',
        'i.tax_cents',
        'i.total_cents as item_total_cents',
        'i.fulfilled_quantity',
        'i.refunded_quantity',
        'i.cancelled_quantity',
        'p.id as p_id',
        'p.name as p_name',
        'p.image_url as p_image_url',
        'pay.provider as pay_provider',
        'pay.status as pay_status',
        'pay.amount_cents as pay_amount_cents',
        'pay.currency as pay_currency',
        'pay.refunded_cents as pay_refunded_cents',
      ])
  )
}

export type OrderWithItemRow = Awaited<ReturnType<ReturnType<typeof selectOrdersWithItems>['execute']>>[number]

/** One order with its lines; with `ownerId`, only when it belongs to that user. */
export async function findOrderWithItems(db: Db | Trx, id: number, ownerId?: number): Promise<OrderWithItemRow[]> {
  return selectOrdersWithItems(db)
    .where('o.id', '=', id)
    .$if(ownerId !== undefined, (qb) => qb.where('o.user_id', '=', ownerId as number))
    .orderBy('i.id')
    .execute()
}

/** What an order list keeps. `email` is lower-case: a guest order's e-mail, or the current e-mail of an account order's user. */
export interface OrderFilter {
  userId?: number
  status?: OrderStatus
  guest?: boolean
  email?: string
  fulfillmentStatus?: FulfillmentStatus
  /** `payment.status` as the API shows it (partially_refunded and refunded derived from what was refunded). */
  paymentStatus?: ShownPaymentStatus
}

type ShownPaymentStatus = 'unpaid' | 'processing' | 'paid' | 'failed' | 'refunded' | 'partially_refunded'

/** The ids of the orders whose payment row shows `status` (an order without a row shows `unpaid`). */
function paymentStatusFilter<O>(q: SelectQueryBuilder<Database, 'orders', O>, status: ShownPaymentStatus): SelectQueryBuilder<Database, 'orders', O> {
  if (status === 'unpaid') {
    return q.where((eb) => eb.not(eb('id', 'in', eb.selectFrom('payments').select('payments.order_id').where('payments.status', '!=', 'unpaid'))))
  }
  return q.where('id', 'in', (eb) => {
    const rows = eb.selectFrom('payments').select('payments.order_id')
    if (status === 'processing' || status === 'failed') return rows.where('payments.status', '=', status)
    if (status === 'paid') return rows.where('payments.status', '=', 'paid').where('payments.refunded_cents', '=', 0)
    if (status === 'partially_refunded') {
      return rows
        .where('payments.status', '=', 'paid')
        .where('payments.refunded_cents', '>', 0)
        .where((w) => w('payments.refunded_cents', '<', w.ref('payments.amount_cents')))
    }
    return rows.where((w) =>
      w.or([
        w('payments.status', '=', 'refunded'),
        w.and([w('payments.status', '=', 'paid'), w('payments.refunded_cents', '>', 0), w('payments.refunded_cents', '>=', w.ref('payments.amount_cents'))]),
      ]),
    )
  })
}

function filtered<O>(qb: SelectQueryBuilder<Database, 'orders', O>, filter: OrderFilter): SelectQueryBuilder<Database, 'orders', O> {
  const { userId, status, guest, email, fulfillmentStatus, paymentStatus } = filter
  // fulfillmentStatus, as order-view.ts derives it from the lines' counters: something shipped, something left.
  const shipped = (eb: ExpressionBuilder<Database, 'orders'>) =>
    eb.exists(eb.selectFrom('order_items as fi').select('fi.id').whereRef('fi.order_id', '=', 'orders.id').where('fi.fulfilled_quantity', '>', 0))
  const left = (eb: ExpressionBuilder<Database, 'orders'>) =>
    eb.exists(
      eb
        .selectFrom('order_items as li')
        .select('li.id')
        .whereRef('li.order_id', '=', 'orders.id')
        .where((e) => e(e('li.fulfilled_quantity', '+', e.ref('li.cancelled_quantity')), '<', e.ref('li.quantity'))),
    )
  return (
    qb
      .$if(paymentStatus !== undefined, (q) => paymentStatusFilter(q, paymentStatus as ShownPaymentStatus))
      .$if(fulfillmentStatus === 'unfulfilled', (q) => q.where((eb) => eb.not(shipped(eb))))
      .$if(fulfillmentStatus === 'partial', (q) => q.where((eb) => eb.and([shipped(eb), left(eb)])))
      .$if(fulfillmentStatus === 'fulfilled', (q) => q.where((eb) => eb.and([shipped(eb), eb.not(left(eb))])))
      .$if(userId !== undefined, (q) => q.where('user_id', '=', userId as number))
      .$if(status !== undefined, (q) => q.where('status', '=', status as OrderStatus))
      .$if(guest !== undefined, (q) => q.where('guest', '=', guest ? 1 : 0))
      // lower(email) is what orders_email_idx holds; users' e-mails are stored lower-case (users.email is unique).
      .$if(email !== undefined, (q) =>
        q.where((eb) =>
          eb.or([
            eb(sql<string>`lower(email)`, '=', email as string),
            eb(
              'user_id',
              'in',
              eb
                .selectFrom('users')
                .select('users.id')
                .where('users.email', '=', email as string),
            ),
          ]),
        ),
      )
  )
}

/** A page of orders, newest first, each with its lines; the page is cut before the join so `limit` counts orders. */
export async function listOrdersWithItems(db: Db, filter: OrderFilter & { limit: number; offset: number }): Promise<OrderWithItemRow[]> {
  const page = filtered(db.selectFrom('orders').select('id'), filter).orderBy('id', 'desc').limit(filter.limit).offset(filter.offset)
  return selectOrdersWithItems(db).where('o.id', 'in', page).orderBy('o.id', 'desc').orderBy('i.id').execute()
}

/** How many orders match the list's filter, before paging (X-Total-Count). */
export async function countOrders(db: Db, filter: OrderFilter): Promise<number> {
  const row = await filtered(
    db.selectFrom('orders').select((eb) => eb.fn.countAll<number | string>().as('n')),
    filter,
  ).executeTakeFirstOrThrow()
  return Number(row.n)
}

// ---- status changes ----

/** The order's status (and owner); with `ownerId`, only when it belongs to that user. */
export async function findOrderStatus(trx: Db | Trx, id: number, ownerId?: number) {
  return trx
    .selectFrom('orders')
    .select(['status', 'user_id'])
    .where('id', '=', id)
    .$if(ownerId !== undefined, (qb) => qb.where('user_id', '=', ownerId as number))
    .executeTakeFirst()
}

/** Moves an order from `from` to `to`; false when its status is no longer `from` (a concurrent change won). */
export async function updateOrderStatus(trx: Trx, id: number, from: OrderStatus, to: OrderStatus, now: string): Promise<boolean> {
  const result = await trx.updateTable('orders').set({ status: to, updated_at: now }).where('id', '=', id).where('status', '=', from).executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/**
 * What a lookup compares: the order's kind and e-mail. Read the same way whether the order exists or not, so a
 * lookup takes about as long either way.
 */
export async function findOrderContact(db: Db | Trx, id: number) {
  return db.selectFrom('orders').select(['id', 'guest', 'email']).where('id', '=', id).executeTakeFirst()
}

export async function listOrderLines(trx: Trx, orderId: number) {
  return trx
    .selectFrom('order_items')
    .select(['product_id', 'variant_id', 'quantity', 'cancelled_quantity'])
    .where('order_id', '=', orderId)
    .orderBy('product_id')
    .execute()
}
