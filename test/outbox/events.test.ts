import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { ShopEvent } from '../../src/modules/outbox/dispatcher.js'
import { useTestApp } from '../helpers/app.js'
import { createProductViaApi, makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { queuedEmails } from '../helpers/outbox.js'
import { fillCart } from '../helpers/shop.js'

// The shop's events and the e-mails they queue, read as written (the dispatcher is off: nothing is delivered).

const t = useTestApp({ ADMIN_NOTIFY_EMAIL: 'Ops@shop.test, boss@shop.test', LOW_STOCK_THRESHOLD: '5' }, { outbox: { enabled: false } })
const events: ShopEvent[] = []
const ADMINS = ['ops@shop.test', 'boss@shop.test']

beforeAll(() => {
  t.app.outbox.onEvent(async (trx, event) => {
    // Inside the change's transaction: the change is visible here.
    if (event.type === 'order.created') {
      const id = (event.data as { id: number }).id
      expect(await trx.selectFrom('orders').select('id').where('id', '=', id).executeTakeFirst()).toEqual({ id })
    }
    events.push(event)
    return []
  })
})
beforeEach(() => {
  events.length = 0
})

const types = () => events.map((event) => event.type)

async function order(user: TestUser, lines: Array<{ productId: number; quantity: number }>) {
  await fillCart(t.app, user.id, lines)
  const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
  expect(res.statusCode).toBe(201)
  return res.json() as { id: number; status: string; items: unknown[] }
}

const setStatus = (id: number, status: string) => t.app.inject({ method: 'PATCH', url: `/orders/${id}/status`, headers: bearer(t.admin), payload: { status } })
const patchStock = (id: number, stock: number) => t.app.inject({ method: 'PUT', url: `/products/${id}`, headers: bearer(t.admin), payload: { stock } })

describe('order events', () => {
  it('order.created carries the order as the API returns it; the customer and each admin get an e-mail', async () => {
    const user = await makeUser(t.app, 'customer', 'Ana')
    const product = await makeProduct(t.app, { stock: 50, priceCents: 1250 })
    const placed = await order(user, [{ productId: product.id, quantity: 2 }])
    expect(types()).toEqual(['order.created'])
    expect(events[0]?.data).toEqual(placed)
    const mine = await queuedEmails(t.app.db, user.email)
    expect(mine).toEqual([{ template: 'order-received', to: user.email, data: { name: 'Ana', order: placed } }])
    for (const to of ADMINS) {
      expect(await queuedEmails(t.app.db, to)).toContainEqual({ template: 'admin-new-order', to, data: { name: 'Ana', email: user.email, order: placed } })
    }
  })

  it('every move emits order.status_changed; paid, cancelled and delivered also their own, shipped an order.fulfilled; e-mails for paid, shipped, cancelled', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { stock: 50 })
    const placed = await order(user, [{ productId: product.id, quantity: 1 }])
    events.length = 0
    expect((await setStatus(placed.id, 'paid')).statusCode).toBe(200)
    expect(types()).toEqual(['order.status_changed', 'order.paid'])
    expect(events[0]?.data).toMatchObject({ id: placed.id, status: 'paid' })
    expect((await setStatus(placed.id, 'shipped')).statusCode).toBe(200)
    expect((await setStatus(placed.id, 'delivered')).statusCode).toBe(200)
    // The move to shipped records the shipment of every unit (order.fulfilled, emitted as it is recorded).
    expect(types()).toEqual(['order.status_changed', 'order.paid', 'order.fulfilled', 'order.status_changed', 'order.status_changed', 'order.delivered'])
    expect((await queuedEmails(t.app.db, user.email)).map((m) => m.template)).toEqual(['order-received', 'order-paid', 'order-shipped'])

    const other = await order(user, [{ productId: product.id, quantity: 1 }])
    events.length = 0
    expect((await t.app.inject({ method: 'POST', url: `/orders/${other.id}/cancel`, headers: bearer(user) })).statusCode).toBe(200)
    expect(types()).toEqual(['order.status_changed', 'order.cancelled'])
    expect(events[1]?.data).toMatchObject({ id: other.id, status: 'cancelled' })
    expect((await queuedEmails(t.app.db, user.email)).map((m) => m.template)).toEqual([
      'order-received',
      'order-paid',
      'order-shipped',
      'order-received',
      'order-cancelled',
    ])
  })

  it('a refused move emits nothing and queues nothing', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { stock: 50 })
    const placed = await order(user, [{ productId: product.id, quantity: 1 }])
    events.length = 0
    const res = await setStatus(placed.id, 'delivered')
    expect(res.statusCode).toBe(409)
    expect(events).toEqual([])
    expect((await queuedEmails(t.app.db, user.email)).map((m) => m.template)).toEqual(['order-received'])
  })

  it('a failed order (no stock) emits nothing and queues nothing', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { stock: 1 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 2 }])
    const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
    expect(res.statusCode).toBe(409)
    expect(events).toEqual([])
    expect(await queuedEmails(t.app.db, user.email)).toEqual([])
  })
})

describe('stock.low', () => {
  const lowStock = async (productId: number) =>
    (await queuedEmails(t.app.db, 'ops@shop.test')).filter((m) => m.template === 'admin-low-stock' && (m.data.product as { id: number }).id === productId)

  it('fires once when an order takes the stock from above the threshold to at or below, again only after it went back above', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { stock: 7 })
    await order(user, [{ productId: product.id, quantity: 1 }]) // 7 → 6: above
    expect(types()).toEqual(['order.created'])
    await order(user, [{ productId: product.id, quantity: 2 }]) // 6 → 4: crosses
    expect(types()).toEqual(['order.created', 'order.created', 'stock.low'])
    expect(events[2]?.data).toMatchObject({ id: product.id, name: product.name, stock: 4 })
    await order(user, [{ productId: product.id, quantity: 1 }]) // 4 → 3: already low
    expect(types().filter((type) => type === 'stock.low')).toHaveLength(1)
    expect(await lowStock(product.id)).toHaveLength(1)
    expect((await lowStock(product.id))[0]).toMatchObject({ template: 'admin-low-stock', data: { threshold: 5, product: { stock: 4 } } })

    // Back above by the admin (product.updated, no stock.low), then down again: fires again.
    expect((await patchStock(product.id, 10)).statusCode).toBe(200)
    expect(types().slice(-1)).toEqual(['product.updated'])
    await order(user, [{ productId: product.id, quantity: 5 }]) // 10 → 5: at the threshold
    expect(types().filter((type) => type === 'stock.low')).toHaveLength(2)
    expect(await lowStock(product.id)).toHaveLength(2)
  })

  it('fires when the admin sets the stock to the threshold or below; not when it was already there', async () => {
    const product = await makeProduct(t.app, { stock: 20 })
    expect((await patchStock(product.id, 2)).statusCode).toBe(200)
    expect(types()).toEqual(['product.updated', 'stock.low'])
    expect((await patchStock(product.id, 1)).statusCode).toBe(200)
    expect(types()).toEqual(['product.updated', 'stock.low', 'product.updated'])
    expect(await lowStock(product.id)).toHaveLength(1)
  })

  it('does not fire for a product created at or below the threshold, nor when an order cancelled gives stock back', async () => {
    const created = await createProductViaApi(t.app, t.admin, { name: 'Casi agotado', description: 'd', price: '3.50', stock: '2' })
    expect(types()).toEqual(['product.created'])
    expect(events[0]?.data).toEqual(created)
    expect(await lowStock(created.id)).toEqual([])

    const user = await makeUser(t.app)
    const placed = await order(user, [{ productId: created.id, quantity: 1 }]) // 2 → 1
    expect(types()).toEqual(['product.created', 'order.created'])
    await t.app.inject({ method: 'POST', url: `/orders/${placed.id}/cancel`, headers: bearer(user) })
    expect(types().includes('stock.low')).toBe(false)
  })
})

describe('product events', () => {
  it('product.updated carries the product; product.deleted carries {id}; an unknown product emits nothing', async () => {
    const product = await makeProduct(t.app, { stock: 30 })
    const res = await t.app.inject({ method: 'PUT', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { name: 'Nuevo nombre' } })
    expect(res.statusCode).toBe(200)
    expect(events).toEqual([{ type: 'product.updated', data: res.json() }])
    expect((await t.app.inject({ method: 'DELETE', url: `/products/${product.id}`, headers: bearer(t.admin) })).statusCode).toBe(200)
    expect(events[1]).toEqual({ type: 'product.deleted', data: { id: product.id } })
    expect((await t.app.inject({ method: 'DELETE', url: `/products/${product.id}`, headers: bearer(t.admin) })).statusCode).toBe(404)
    expect(events).toHaveLength(2)
  })
})
