import { beforeEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { ConfigError, loadConfig } from '../../src/config.js'
import { connectDatabase } from '../../src/db/connect.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import type { OrdersTable } from '../../src/db/database.js'
import { messages } from '../../src/shared/errors.js'
import { dialect, testConfig, useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { freezableRelay, timed } from '../helpers/outage.js'
import { createPgSchema, testDatabaseUrl } from '../helpers/pg-schema.js'

const DAY_MS = 86_400_000
type Status = OrdersTable['status']

/** Midnight UTC of today, as the service reads it. */
function todayStart(): number {
  const now = new Date()
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
}
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

interface StatsBody {
  days: number
  currency: string
  series: Array<{ date: string; orders: number; revenue: number }>
  totals: { orders: number; revenue: number }
  ordersToShip: number
  ordersByStatus: Record<Status, number>
  lowStock: Array<{ id: number; name: string; stock: number; imageUrl: string }>
  lowStockThreshold: number
}

describe('GET /admin/api/stats', () => {
  const shop = useTestApp()
  beforeEach(async () => {
    await shop.app.db.deleteFrom('orders').execute()
    await shop.app.db.deleteFrom('products').execute()
  })

  async function insertOrder(createdAtMs: number, totalCents: number, status: Status = 'paid'): Promise<number> {
    const createdAt = new Date(createdAtMs).toISOString()
    const row = await shop.app.db
      .insertInto('orders')
      .values({ user_id: shop.customer.id, total_cents: totalCents, status, created_at: createdAt, updated_at: createdAt })
      .returning('id')
      .executeTakeFirstOrThrow()
    return row.id
  }

  async function stats(query = ''): Promise<StatsBody> {
    const res = await shop.app.inject({ url: `/admin/api/stats${query}`, headers: bearer(shop.admin) })
    expect(res.statusCode, res.body).toBe(200)
    return res.json() as StatsBody
  }

  it('answers 30 zero-filled UTC days ending today, oldest first, on an empty shop', async () => {
    const body = await stats()
    const today = todayStart()
    expect(body).toEqual({
      days: 30,
      currency: 'EUR',
      series: Array.from({ length: 30 }, (_, i) => ({ date: dayOf(today - (29 - i) * DAY_MS), orders: 0, revenue: 0 })),
      totals: { orders: 0, revenue: 0 },
      ordersToShip: 0,
      ordersByStatus: { pending: 0, paid: 0, shipped: 0, delivered: 0, cancelled: 0 },
      lowStock: [],
      lowStockThreshold: 5,
    })
  })

  it('counts as revenue only the orders paid for: a pending and a cancelled order add nothing, a paid one does', async () => {
    const today = todayStart()
    const day = async () => (await stats('?days=1')).series[0]
    await insertOrder(today + 1000, 12_345, 'pending')
    expect(await day()).toEqual({ date: dayOf(today), orders: 1, revenue: 0 })
    await insertOrder(today + 2000, 50_000, 'cancelled')
    expect(await day()).toEqual({ date: dayOf(today), orders: 1, revenue: 0 })
    const paid = await insertOrder(today + 3000, 2_550, 'paid')
    expect(await day()).toEqual({ date: dayOf(today), orders: 2, revenue: 25.5 })
    // Shipped and delivered orders were paid for too.
    await insertOrder(today + 4000, 100, 'shipped')
    await insertOrder(today + 5000, 1, 'delivered')
    expect(await day()).toEqual({ date: dayOf(today), orders: 4, revenue: 26.51 })
    // A paid order that is cancelled is refunded: it leaves both the orders and the revenue.
    await shop.app.db.updateTable('orders').set({ status: 'cancelled' }).where('id', '=', paid).execute()
    const body = await stats('?days=1')
    expect(body.series).toEqual([{ date: dayOf(today), orders: 3, revenue: 1.01 }])
    expect(body.totals).toEqual({ orders: 3, revenue: 1.01 })
    expect(body.ordersByStatus).toEqual({ pending: 1, paid: 0, shipped: 1, delivered: 1, cancelled: 2 })
  })

  it('counts the orders of each day that are not cancelled, and sums the revenue of those paid for, with exact money', async () => {
    const today = todayStart()
    await insertOrder(today + 1000, 1999, 'paid')
    await insertOrder(today + 2000, 1, 'shipped')
    await insertOrder(today + 3000, 50_000, 'cancelled')
    await insertOrder(today - 2 * DAY_MS + 5, 10, 'delivered')
    await insertOrder(today - 2 * DAY_MS + 6, 20, 'pending')
    await insertOrder(today - 2 * DAY_MS + 7, 999, 'cancelled')
    // Long before the window: counted by status only.
    await insertOrder(today - 400 * DAY_MS, 7777, 'paid')

    const body = await stats('?days=3')
    expect(body.series).toEqual([
      // The pending order is counted, but it is no revenue until it is paid.
      { date: dayOf(today - 2 * DAY_MS), orders: 2, revenue: 0.1 },
      { date: dayOf(today - DAY_MS), orders: 0, revenue: 0 },
      { date: dayOf(today), orders: 2, revenue: 20 },
    ])
    expect(body.totals).toEqual({ orders: 4, revenue: 20.1 })
    expect(body.ordersByStatus).toEqual({ pending: 1, paid: 2, shipped: 1, delivered: 1, cancelled: 2 })
    expect(body.ordersToShip).toBe(2)
  })

  it('keeps large amounts exact', async () => {
    const today = todayStart()
    await insertOrder(today, 999_999_999_999_999, 'paid')
    await insertOrder(today + 1, 1, 'paid')
    const body = await stats('?days=1')
    expect(body.series).toEqual([{ date: dayOf(today), orders: 2, revenue: 10_000_000_000_000 }])
    expect(body.totals.revenue).toBe(10_000_000_000_000)
  })

  it('includes the first instant of the oldest day and of today, and nothing before or after the window', async () => {
    const today = todayStart()
    const oldest = today - 6 * DAY_MS
    await insertOrder(oldest - 1, 100) // the last millisecond of the day before the window
    await insertOrder(oldest, 200) // the first millisecond of the window
    await insertOrder(today - 1, 300) // the last millisecond of yesterday
    await insertOrder(today, 400) // the first millisecond of today
    await insertOrder(today + DAY_MS, 500) // tomorrow (a clock ahead of ours): not in any day shown

    const body = await stats('?days=7')
    expect(body.series).toHaveLength(7)
    expect(body.series[0]).toEqual({ date: dayOf(oldest), orders: 1, revenue: 2 })
    expect(body.series[5]).toEqual({ date: dayOf(today - DAY_MS), orders: 1, revenue: 3 })
    expect(body.series[6]).toEqual({ date: dayOf(today), orders: 1, revenue: 4 })
    expect(body.totals).toEqual({ orders: 3, revenue: 9 })
    expect(body.ordersByStatus.paid).toBe(5)

    const one = await stats('?days=1')
    expect(one.series).toEqual([{ date: dayOf(today), orders: 1, revenue: 4 }])
    const year = await stats('?days=365')
    expect(year.series).toHaveLength(365)
    expect(year.series[0]?.date).toBe(dayOf(today - 364 * DAY_MS))
    expect(year.totals).toEqual({ orders: 4, revenue: 10 })
  })

  it('lists products at or below the threshold, lowest stock first then by id, at most 20', async () => {
    const [a, b, c, d] = [
      await makeProduct(shop.app, { stock: 3, name: 'Three A' }),
      await makeProduct(shop.app, { stock: 0, name: 'Zero' }),
      await makeProduct(shop.app, { stock: 5, name: 'Five' }),
      await makeProduct(shop.app, { stock: 3, name: 'Three B' }),
    ]
    await makeProduct(shop.app, { stock: 6, name: 'Six' })
    const body = await stats()
    expect(body.lowStock).toEqual([b, a, d, c].map((p) => ({ id: p!.id, name: p!.name, stock: p!.stock, imageUrl: p!.imageUrl })))

    for (let i = 0; i < 25; i += 1) await makeProduct(shop.app, { stock: 1 })
    const many = await stats()
    expect(many.lowStock).toHaveLength(20)
    expect(many.lowStock[0]?.id).toBe(b!.id)
    expect(many.lowStock.slice(1).every((p) => p.stock === 1)).toBe(true)
  })

  it('answers 401 without a token and 403 to a customer', async () => {
    const anon = await shop.app.inject({ url: '/admin/api/stats' })
    expect([anon.statusCode, anon.json()]).toEqual([401, { error: messages.noUser }])
    const bad = await shop.app.inject({ url: '/admin/api/stats', headers: { authorization: 'Bearer nope' } })
    expect([bad.statusCode, bad.json()]).toEqual([401, { error: messages.invalidToken }])
    const res = await shop.app.inject({ url: '/admin/api/stats', headers: bearer(shop.customer) })
    expect([res.statusCode, res.json()]).toEqual([403, { error: messages.requiresRoles(['admin']) }])
  })

  it.each([
    ['?days=0', 'days must not be less than 1'],
    ['?days=366', 'days must not be greater than 365'],
    ['?days=abc', 'days must be an integer number'],
    ['?days=1.5', 'days must be an integer number'],
    ['?days=', 'days must be an integer number'],
  ])('answers 422 to %s', async (query, message) => {
    const res = await shop.app.inject({ url: `/admin/api/stats${query}`, headers: bearer(shop.admin) })
    expect([res.statusCode, res.json()]).toEqual([422, { error: message }])
  })
})

describe('LOW_STOCK_THRESHOLD', () => {
  const base = { NODE_ENV: 'test', JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-000', DATA_DIR: '/tmp/shop-config-test' }

  it('is 5 by default and any integer from 0', () => {
    expect(loadConfig(base).lowStockThreshold).toBe(5)
    expect(loadConfig({ ...base, LOW_STOCK_THRESHOLD: '0' }).lowStockThreshold).toBe(0)
    expect(loadConfig({ ...base, LOW_STOCK_THRESHOLD: '12' }).lowStockThreshold).toBe(12)
  })

  it.each(['-1', 'five', '2.5', '2147483648'])('refuses %s', (raw) => {
    expect(() => loadConfig({ ...base, LOW_STOCK_THRESHOLD: raw })).toThrow(ConfigError)
    try {
      loadConfig({ ...base, LOW_STOCK_THRESHOLD: raw })
    } catch (error) {
      expect((error as ConfigError).problems).toEqual([`LOW_STOCK_THRESHOLD must be an integer between 0 and 2147483647 (got "${raw}")`])
    }
  })

  describe('on a shop with LOW_STOCK_THRESHOLD=0', () => {
    const shop = useTestApp({ LOW_STOCK_THRESHOLD: '0' })

    it('decides which products the stats call low on stock', async () => {
      const empty = await makeProduct(shop.app, { stock: 0 })
      await makeProduct(shop.app, { stock: 1 })
      const res = await shop.app.inject({ url: '/admin/api/stats', headers: bearer(shop.admin) })
      expect(res.statusCode).toBe(200)
      expect(res.json()).toMatchObject({ lowStockThreshold: 0, lowStock: [{ id: empty.id, stock: 0 }] })
    })
  })
})

describe.skipIf(dialect !== 'postgres')('GET /admin/api/stats when PostgreSQL goes silent', () => {
  it('answers 503 within the statement timeout, and answers again once the database does', async () => {
    const url = new URL(testDatabaseUrl())
    const schema = await createPgSchema(url.toString(), 'adminstats')
    // Migrated first with the usual timeouts: a busy machine may take longer than the short one below.
    const direct = connectDatabase(url.toString(), { schema: schema.name, poolSize: 1 })
    await migrateToLatest(direct.db, schema.name)
    await direct.db.destroy()
    const relay = await freezableRelay(Number(url.port || 5432), url.hostname)
    url.host = `127.0.0.1:${relay.port}`
    const timeouts = { connectTimeoutMs: 1000, statementTimeoutMs: 300 }
    const handle = connectDatabase(url.toString(), { schema: schema.name, poolSize: 2, timeouts })
    const app = await buildApp(testConfig({ PG_CONNECT_TIMEOUT_MS: '1000', PG_STATEMENT_TIMEOUT_MS: '300' }), { database: handle, logger: false })
    try {
      await app.ready()
      const admin = await makeUser(app, 'admin')
      expect((await app.inject({ url: '/admin/api/stats', headers: bearer(admin) })).statusCode).toBe(200)

      relay.freeze(true)
      const { value: res } = await timed(() => app.inject({ url: '/admin/api/stats', headers: bearer(admin) }), 10_000)
      expect([res.statusCode, res.json()]).toEqual([503, { error: messages.notReady }])

      relay.freeze(false)
      const status = async () => (await app.inject({ url: '/admin/api/stats', headers: bearer(admin) })).statusCode
      await expect.poll(status, { timeout: 10_000, interval: 100 }).toBe(200)
    } finally {
      await app.close()
      await relay.close()
      await schema.drop()
    }
  })
})
