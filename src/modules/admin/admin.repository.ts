import { type Kysely, sql } from 'kysely'
import type { Database } from '../../db/database.js'
import type { OrderStatus } from '../orders/orders.schemas.js'

/** One UTC day of orders: `day` is `YYYY-MM-DD`, the first ten characters of `created_at`. */
export interface DayRow {
  day: string
  /** Orders placed that day and not cancelled: waiting for payment (`pending`) or paid for. */
  orders: number
  /** The totals of those whose money was taken (`paid`, `shipped`, `delivered`). */
  revenueCents: number
}

/**
 * The statuses of an order whose money was taken and kept: revenue. Not `pending` (nothing paid yet) and not
 * `cancelled`: a cancelled order was either never paid or refunded when it was cancelled (a paid order's
 * cancellation refunds it), so it is no revenue either way.
 */
export const REVENUE_STATUSES = ['paid', 'shipped', 'delivered'] as const

/**
 * Orders that are not cancelled, created in [from, to) (ISO timestamps), counted per UTC day, with the revenue of
 * those paid for (REVENUE_STATUSES), in SQL. `created_at` is an ISO 8601 UTC string on every dialect, so its first
 * ten characters are the UTC day and a string comparison is a time comparison.
 */
export async function sumOrdersByDay(db: Kysely<Database>, from: string, to: string): Promise<DayRow[]> {
  const day = sql<string>`substr(created_at, 1, 10)`
  const rows = await db
    .selectFrom('orders')
    .select((eb) => [
      day.as('day'),
      eb.fn.countAll().as('orders'),
      eb.fn.sum(eb.case().when('status', 'in', REVENUE_STATUSES).then(eb.ref('total_cents')).else(eb.lit(0)).end()).as('revenue_cents'),
    ])
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .where('status', '<>', 'cancelled')
    .groupBy(day)
    .execute()
  // PostgreSQL answers count and sum of bigint as strings.
  return rows.map((row) => ({ day: row.day, orders: Number(row.orders), revenueCents: Number(row.revenue_cents) }))
}

/** How many orders there are in each status, all time. */
export async function countOrdersByStatus(db: Kysely<Database>): Promise<Array<{ status: OrderStatus; orders: number }>> {
  const rows = await db
    .selectFrom('orders')
    .select(['status', (eb) => eb.fn.countAll().as('orders')])
    .groupBy('status')
    .execute()
  return rows.map((row) => ({ status: row.status, orders: Number(row.orders) }))
}

/** Products with `stock <= threshold`, lowest stock first, then by id. */
export async function findLowStockProducts(db: Kysely<Database>, threshold: number, limit: number) {
  return db
    .selectFrom('products')
    .select(['id', 'name', 'stock', 'image_url'])
    .where('stock', '<=', threshold)
    .orderBy('stock')
    .orderBy('id')
    .limit(limit)
    .execute()
}
