import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { centsToAmount } from '../../shared/money.js'
import { orderStatuses } from '../orders/orders.schemas.js'
import { countOrdersByStatus, findLowStockProducts, sumOrdersByDay } from './admin.repository.js'
import type { Stats } from './admin.schemas.js'

/** The dashboard lists at most this many products low on stock. */
export const LOW_STOCK_LIMIT = 20

const DAY_MS = 86_400_000

/** `YYYY-MM-DD` of a UTC instant. */
function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}

export interface StatsOptions {
  days: number
  currency: string
  lowStockThreshold: number
  /** The instant "today" is read from; now by default (tests pass a fixed one). */
  now?: Date
}

/**
 * The overview of GET /admin/api/stats: orders and revenue of the last `days` UTC days (today last, every day
 * present), the orders waiting to be shipped, the count per status, and the products low on stock. Three
 * queries, each aggregated by the database.
 */
export async function getStats(db: Kysely<Database>, options: StatsOptions): Promise<Stats> {
  const now = options.now ?? new Date()
  const todayStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
  const firstDayStart = todayStart - (options.days - 1) * DAY_MS
  const from = new Date(firstDayStart).toISOString()
  const to = new Date(todayStart + DAY_MS).toISOString()

  const [dayRows, statusRows, lowStockRows] = await Promise.all([
    sumOrdersByDay(db, from, to),
    countOrdersByStatus(db),
    findLowStockProducts(db, options.lowStockThreshold, LOW_STOCK_LIMIT),
  ])

  const byDay = new Map(dayRows.map((row) => [row.day, row]))
  let totalOrders = 0
  let totalCents = 0
  const series = Array.from({ length: options.days }, (_, index) => {
    const date = utcDay(firstDayStart + index * DAY_MS)
    const row = byDay.get(date)
    const orders = row?.orders ?? 0
    const cents = row?.revenueCents ?? 0
    totalOrders += orders
    totalCents += cents
    return { date, orders, revenue: centsToAmount(cents) }
  })

  const ordersByStatus = Object.fromEntries(orderStatuses.map((status) => [status, 0])) as Record<(typeof orderStatuses)[number], number>
  for (const row of statusRows) ordersByStatus[row.status] = row.orders

  return {
    days: options.days,
    currency: options.currency,
    series,
    totals: { orders: totalOrders, revenue: centsToAmount(totalCents) },
    ordersToShip: ordersByStatus.paid,
    ordersByStatus,
    lowStock: lowStockRows.map((row) => ({ id: row.id, name: row.name, stock: row.stock, imageUrl: row.image_url })),
    lowStockThreshold: options.lowStockThreshold,
  }
}
