import type { Insertable, Kysely, Transaction } from 'kysely'
import { prepared } from '../../db/prepared.js'
import type { Database, OrderEventsTable, OrderRow } from '../../db/database.js'
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
}

export type NewOrder = { user_id: number; total_cents: number; status: OrderStatus; created_at: string; updated_at: string } & CheckoutColumns &
  BreakdownColumns

export async function insertOrder(trx: Trx, order: NewOrder): Promise<OrderRow> {
  const [row] = (await insertOrderStatement(trx, order)).rows
  if (!row) throw new Error('insert into orders returned no row')
  return row
}

const insertOrderStatement = prepared((db, order: NewOrder) =>
  db
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
    })
    .returningAll(),
)

export async function setOrderTotals(trx: Trx, orderId: number, totals: { total_cents: number } & Partial<CheckoutColumns & BreakdownColumns>): Promise<void> {
  await trx.updateTable('orders').set(totals).where('id', '=', orderId).execute()
}

export async function insertOrderItems(
  trx: Trx,
  items: Array<{
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
  }>,
) {
  return trx.insertInto('order_items').values(items).returningAll().execute()
}

// ---- idempotency keys ----

export async function findOrderIdByIdempotencyKey(db: Db, userId: number, key: string, notBefore: string) {
  const row = await db
    .selectFrom('idempotency_keys')
    .select('order_id')
    .where('user_id', '=', userId)
    .where('key', '=', key)
    .where('created_at', '>=', notBefore)
    .executeTakeFirst()
  return row?.order_id
}

/** Frees a key whose 24 hours are over, so it can name a new order. */
export async function deleteExpiredIdempotencyKey(trx: Trx, userId: number, key: string, before: string): Promise<void> {
  await trx.deleteFrom('idempotency_keys').where('user_id', '=', userId).where('key', '=', key).where('created_at', '<', before).execute()
}

/** The primary key (user_id, key) decides a race between requests with the same key: the loser gets a unique violation. */
export async function insertIdempotencyKey(trx: Trx, row: { user_id: number; key: string; order_id: number; created_at: string }) {
  await trx.insertInto('idempotency_keys').values(row).execute()
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

/** A page of orders, newest first, each with its lines; the page is cut before the join so `limit` counts orders. */
export async function listOrdersWithItems(
  db: Db,
  filter: { userId?: number; status?: OrderStatus; limit: number; offset: number },
): Promise<OrderWithItemRow[]> {
  const page = db
    .selectFrom('orders')
    .select('id')
    .$if(filter.userId !== undefined, (qb) => qb.where('user_id', '=', filter.userId as number))
    .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status as OrderStatus))
    .orderBy('id', 'desc')
    .limit(filter.limit)
    .offset(filter.offset)
  return selectOrdersWithItems(db).where('o.id', 'in', page).orderBy('o.id', 'desc').orderBy('i.id').execute()
}

/** How many orders match the list's filter, before paging (X-Total-Count). */
export async function countOrders(db: Db, filter: { userId?: number; status?: OrderStatus }): Promise<number> {
  const row = await db
    .selectFrom('orders')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .$if(filter.userId !== undefined, (qb) => qb.where('user_id', '=', filter.userId as number))
    .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status as OrderStatus))
    .executeTakeFirstOrThrow()
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

export async function listOrderLines(trx: Trx, orderId: number) {
  return trx.selectFrom('order_items').select(['product_id', 'variant_id', 'quantity']).where('order_id', '=', orderId).orderBy('product_id').execute()
}

// ---- the timeline ----

export async function insertOrderEvent(trx: Trx, row: Insertable<OrderEventsTable>): Promise<void> {
  await trx.insertInto('order_events').values(row).execute()
}
