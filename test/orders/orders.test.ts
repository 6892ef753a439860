import { describe, expect, it, vi } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { nowIso } from '../../src/shared/time.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct, setVariantStockAndPrice } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { cartOf, countRows, deleteProduct, fillCart, stockOf, plainBreakdown, plainLine } from '../helpers/shop.js'

const t = useTestApp()

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const statusMessage = 'status must be one of the following values: pending, paid, shipped, delivered, cancelled'

function order(user: TestUser, headers: Record<string, string> = {}, payload?: unknown) {
  return t.app.inject({
    method: 'POST',
    url: '/orders',
    headers: { ...bearer(user), ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  })
}

/** A customer with one line of a fresh product in the cart, ordered. */
async function placedOrder(customer?: TestUser) {
  const user = customer ?? (await makeUser(t.app))
  const product = await makeProduct(t.app, { stock: 10, priceCents: 250 })
  await fillCart(t.app, user.id, [{ productId: product.id, quantity: 2 }])
  const res = await order(user)
  expect(res.statusCode).toBe(201)
  return { user, product, order: res.json() as { id: number; updatedAt: string } }
}

async function setStatus(orderId: number, status: string) {
  await t.app.db
    .updateTable('orders')
    .set({ status: status as 'pending' })
    .where('id', '=', orderId)
    .execute()
}

async function orderRow(orderId: number) {
  return t.app.db.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirstOrThrow()
}

describe('POST /orders', () => {
  it('refuses an empty cart with 400 and writes nothing', async () => {
    const user = await makeUser(t.app)
    const before = await countRows(t.app, 'orders')
    const res = await order(user)
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ error: 'El carrito está vacío' })
    expect(await countRows(t.app, 'orders')).toBe(before)
  })

  it('turns the cart into a pending order: stock taken, prices copied, cart emptied', async () => {
    const user = await makeUser(t.app)
    const lamp = await makeProduct(t.app, { name: 'Lamp', priceCents: 1999, stock: 5 })
    const clip = await makeProduct(t.app, { name: 'Clip', priceCents: 10, stock: 4 })
    await fillCart(t.app, user.id, [
      { productId: lamp.id, quantity: 3 },
      { productId: clip.id, quantity: 1 },
    ])
    const res = await order(user)
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.any(Number),
      userId: user.id,
      email: user.email,
      guest: false,
      total: 60.07,
      status: 'pending',
      createdAt: expect.stringMatching(ISO),
      updatedAt: body.createdAt,
      items: [
        {
          id: expect.any(Number),
          orderId: body.id,
          productId: lamp.id,
          quantity: 3,
          price: 19.99,
          name: 'Lamp',
          ...plainLine(59.97),
          product: { id: lamp.id, name: 'Lamp', imageUrl: expect.any(String) },
        },
        {
          id: expect.any(Number),
          orderId: body.id,
          productId: clip.id,
          quantity: 1,
          price: 0.1,
          name: 'Clip',
          ...plainLine(0.1),
          product: { id: clip.id, name: 'Clip', imageUrl: expect.any(String) },
        },
      ],
      // The same fields in every configuration (field for field): a plain order's checkout fields and payment.
      subtotal: 60.07,
      shippingTotal: 0,
      shippingAddress: null,
      shippingMethod: null,
      note: null,
      ...plainBreakdown,
      payment: { provider: 'manual', status: 'unpaid', amount: 60.07, currency: 'EUR', refundedAmount: 0 },
    })
    expect(await stockOf(t.app, lamp.id)).toBe(2)
    expect(await stockOf(t.app, clip.id)).toBe(3)
    expect(await cartOf(t.app, user.id)).toEqual({})
    const row = await t.app.db.selectFrom('orders').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow()
    expect(row).toMatchObject({ user_id: user.id, total_cents: 6007, status: 'pending' })
    const read = await t.app.inject({ method: 'GET', url: `/orders/${body.id}`, headers: bearer(user) })
    expect(read.json()).toEqual(body)
  })

  it('keeps the unit price of the moment of ordering', async () => {
    const { user, product, order: placed } = await placedOrder()
    await setVariantStockAndPrice(t.app, product.id, { priceCents: 99999 })
    const res = await t.app.inject({ method: 'GET', url: `/orders/${placed.id}`, headers: bearer(user) })
    expect(res.json().items[0].price).toBe(2.5)
    expect(res.json().total).toBe(5)
  })

  it('refuses with 409 naming the product when a line is over the stock, and changes nothing', async () => {
    const user = await makeUser(t.app)
    const ok = await makeProduct(t.app, { name: 'Plenty', stock: 5 })
    const short = await makeProduct(t.app, { name: 'Scarce Mug', stock: 5 })
    await fillCart(t.app, user.id, [
      { productId: ok.id, quantity: 2 },
      { productId: short.id, quantity: 3 },
    ])
    await setVariantStockAndPrice(t.app, short.id, { stock: 2 })
    const before = await countRows(t.app, 'orders')
    const res = await order(user)
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'Stock insuficiente para Scarce Mug' })
    expect(await stockOf(t.app, ok.id)).toBe(5)
    expect(await stockOf(t.app, short.id)).toBe(2)
    expect(await cartOf(t.app, user.id)).toEqual({ [ok.id]: 2, [short.id]: 3 })
    expect(await countRows(t.app, 'orders')).toBe(before)
  })

  it('refuses a body with 422 and changes nothing; an empty object is accepted', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 3 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const bad = await order(user, {}, { items: [1] })
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'property items should not exist' })
    const arr = await order(user, {}, [1])
    expect(arr.statusCode).toBe(422)
    expect(arr.json()).toEqual({ error: 'body should be empty' })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 1 })
    expect(await stockOf(t.app, p.id)).toBe(3)
    const ok = await order(user, {}, {})
    expect(ok.statusCode).toBe(201)
  })

  it.each([
    ['JSON null', 'null'],
    ['an empty JSON body', ''],
  ])('accepts %s as no body: 201 and the order is placed', async (_label, payload) => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { name: 'Bowl', stock: 3, priceCents: 450 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 2 }])
    const before = await countRows(t.app, 'orders')
    const res = await t.app.inject({ method: 'POST', url: '/orders', headers: { ...bearer(user), 'content-type': 'application/json' }, payload })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.any(Number),
      userId: user.id,
      email: user.email,
      guest: false,
      total: 9,
      status: 'pending',
      createdAt: expect.stringMatching(ISO),
      updatedAt: body.createdAt,
      items: [
        {
          id: expect.any(Number),
          orderId: body.id,
          productId: p.id,
          quantity: 2,
          price: 4.5,
          name: 'Bowl',
          ...plainLine(9),
          product: { id: p.id, name: 'Bowl', imageUrl: expect.any(String) },
        },
      ],
      subtotal: 9,
      shippingTotal: 0,
      shippingAddress: null,
      shippingMethod: null,
      note: null,
      ...plainBreakdown,
      payment: { provider: 'manual', status: 'unpaid', amount: 9, currency: 'EUR', refundedAmount: 0 },
    })
    expect(await countRows(t.app, 'orders')).toBe(before + 1)
    expect(await stockOf(t.app, p.id)).toBe(1)
    expect(await cartOf(t.app, user.id)).toEqual({})
  })

  it('requires a token', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/orders' })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: messages.noUser })
  })
})

describe('Idempotency-Key', () => {
  it('answers the first order with 200 for the same key, and creates nothing', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 10 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 2 }])
    const first = await order(user, { 'idempotency-key': 'checkout-1' })
    expect(first.statusCode).toBe(201)
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const orders = await countRows(t.app, 'orders')
    const again = await order(user, { 'idempotency-key': 'checkout-1' })
    expect(again.statusCode).toBe(200)
    expect(again.json()).toEqual(first.json())
    expect(await countRows(t.app, 'orders')).toBe(orders)
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 1 })
    expect(await stockOf(t.app, p.id)).toBe(8)
    const other = await order(user, { 'idempotency-key': 'checkout-2' })
    expect(other.statusCode).toBe(201)
    expect(other.json().id).not.toBe(first.json().id)
  })

  it('is per user: another user’s same key makes their own order', async () => {
    const [a, b] = [await makeUser(t.app), await makeUser(t.app)]
    const p = await makeProduct(t.app, { stock: 10 })
    await fillCart(t.app, a.id, [{ productId: p.id, quantity: 1 }])
    await fillCart(t.app, b.id, [{ productId: p.id, quantity: 1 }])
    const ra = await order(a, { 'idempotency-key': 'same' })
    const rb = await order(b, { 'idempotency-key': 'same' })
    expect([ra.statusCode, rb.statusCode]).toEqual([201, 201])
    expect(rb.json().userId).toBe(b.id)
  })

  it('after 24 hours the key names a new order', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 10 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const first = await order(user, { 'idempotency-key': 'old-key' })
    const old = new Date(Date.now() - 24 * 3600 * 1000 - 1000).toISOString()
    await t.app.db.updateTable('idempotency_keys').set({ created_at: old }).where('user_id', '=', user.id).execute()
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const second = await order(user, { 'idempotency-key': 'old-key' })
    expect(second.statusCode).toBe(201)
    expect(second.json().id).not.toBe(first.json().id)
  })

  it('answers a repeated key with the order as it is now, after an admin moved it to paid', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 10 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 2 }])
    const first = await order(user, { 'idempotency-key': 'pay-then-retry' })
    expect(first.statusCode).toBe(201)
    expect(first.json().status).toBe('pending')
    const paid = await t.app.inject({ method: 'PATCH', url: `/orders/${first.json().id}/status`, headers: bearer(t.admin), payload: { status: 'paid' } })
    expect(paid.statusCode).toBe(200)
    expect(paid.json().status).toBe('paid')
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const orders = await countRows(t.app, 'orders')
    const again = await order(user, { 'idempotency-key': 'pay-then-retry' })
    expect(again.statusCode).toBe(200)
    expect(again.json()).toEqual(paid.json())
    expect(again.json()).toEqual({ ...first.json(), status: 'paid', payment: { ...first.json().payment, status: 'paid' }, updatedAt: paid.json().updatedAt })
    expect(await countRows(t.app, 'orders')).toBe(orders)
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 1 })
    expect(await stockOf(t.app, p.id)).toBe(8)
    expect((await orderRow(first.json().id)).status).toBe('paid')
  })

  it('does not remember a key whose order failed', async () => {
    const user = await makeUser(t.app)
    const empty = await order(user, { 'idempotency-key': 'retry-me' })
    expect(empty.statusCode).toBe(400)
    const p = await makeProduct(t.app, { stock: 1 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const res = await order(user, { 'idempotency-key': 'retry-me' })
    expect(res.statusCode).toBe(201)
  })

  it.each([
    ['x'.repeat(256), 'idempotency-key must be shorter than or equal to 255 characters'],
    ['', 'idempotency-key should not be empty'],
    ['a\tb', 'idempotency-key has an invalid format'],
  ])('refuses the key %j with 422 and changes nothing', async (key, message) => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 3 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const res = await order(user, { 'idempotency-key': key })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 1 })
    expect(await stockOf(t.app, p.id)).toBe(3)
  })

  it('accepts a key of 255 printable characters', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 3 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const res = await order(user, { 'idempotency-key': `${'k'.repeat(250)} ~!@#` })
    expect(res.statusCode).toBe(201)
  })
})

describe('GET /orders and /orders/:id', () => {
  it('a customer sees only their own orders, newest first; an admin sees all', async () => {
    const [a, b] = [await makeUser(t.app), await makeUser(t.app)]
    const a1 = (await placedOrder(a)).order
    const b1 = (await placedOrder(b)).order
    const a2 = (await placedOrder(a)).order
    const mine = await t.app.inject({ method: 'GET', url: '/orders', headers: bearer(a) })
    expect(mine.statusCode).toBe(200)
    expect(mine.json().map((o: { id: number }) => o.id)).toEqual([a2.id, a1.id])
    expect(mine.json()[0].items).toHaveLength(1)
    const all = await t.app.inject({ method: 'GET', url: '/orders', headers: bearer(t.admin) })
    const ids = all.json().map((o: { id: number }) => o.id)
    expect(ids).toEqual(expect.arrayContaining([a1.id, a2.id, b1.id]))
    expect(ids).toEqual([...ids].sort((x: number, y: number) => y - x))
  })

  it('pages with limit and offset and filters by status', async () => {
    const user = await makeUser(t.app)
    const o1 = (await placedOrder(user)).order
    const o2 = (await placedOrder(user)).order
    const o3 = (await placedOrder(user)).order
    await setStatus(o2.id, 'paid')
    const page = await t.app.inject({ method: 'GET', url: '/orders?limit=1&offset=1', headers: bearer(user) })
    expect(page.json().map((o: { id: number }) => o.id)).toEqual([o2.id])
    expect(page.json()[0].items).toHaveLength(1)
    const paid = await t.app.inject({ method: 'GET', url: '/orders?status=paid', headers: bearer(user) })
    expect(paid.json().map((o: { id: number }) => o.id)).toEqual([o2.id])
    const pending = await t.app.inject({ method: 'GET', url: '/orders?status=pending', headers: bearer(user) })
    expect(pending.json().map((o: { id: number }) => o.id)).toEqual([o3.id, o1.id])
    const none = await t.app.inject({ method: 'GET', url: '/orders?status=delivered', headers: bearer(user) })
    expect(none.json()).toEqual([])
  })

  it('answers a page of 100 orders when no limit is given', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 10, priceCents: 250 })
    // 101 orders of one line each, written directly (as placing them would) to keep the test fast.
    const now = nowIso()
    const ids = (
      await t.app.db
        .insertInto('orders')
        .values(Array.from({ length: 101 }, () => ({ user_id: user.id, total_cents: 250, status: 'pending' as const, created_at: now, updated_at: now })))
        .returning('id')
        .execute()
    ).map((r) => r.id)
    await t.app.db
      .insertInto('order_items')
      .values(ids.map((orderId) => ({ order_id: orderId, product_id: p.id, quantity: 1, price_cents: 250 })))
      .execute()
    const newestFirst = [...ids].sort((x, y) => y - x)
    const res = await t.app.inject({ method: 'GET', url: '/orders', headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    const page = res.json() as Array<{ id: number; userId: number; items: unknown[] }>
    expect(page).toHaveLength(100)
    expect(page.map((o) => o.id)).toEqual(newestFirst.slice(0, 100))
    expect(page.every((o) => o.userId === user.id && o.items.length === 1)).toBe(true)
    const rest = await t.app.inject({ method: 'GET', url: '/orders?offset=100', headers: bearer(user) })
    expect(rest.json().map((o: { id: number }) => o.id)).toEqual([newestFirst[100]])
  })

  it('a customer without orders gets an empty list', async () => {
    const user = await makeUser(t.app)
    const res = await t.app.inject({ method: 'GET', url: '/orders', headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual([])
  })

  it.each([
    ['status=lost', statusMessage],
    ['limit=0', 'limit must not be less than 1'],
    ['limit=abc', 'limit must be an integer number'],
    ['offset=-1', 'offset must not be less than 0'],
    ['limit=1001', 'limit must not be greater than 1000'],
  ])('refuses ?%s with 422', async (query, message) => {
    const user = await makeUser(t.app)
    const res = await t.app.inject({ method: 'GET', url: `/orders?${query}`, headers: bearer(user) })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
  })

  it('someone else’s order is answered as missing; an admin may read it', async () => {
    const { order: placed } = await placedOrder()
    const stranger = await makeUser(t.app)
    const res = await t.app.inject({ method: 'GET', url: `/orders/${placed.id}`, headers: bearer(stranger) })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Orden no encontrada' })
    const asAdmin = await t.app.inject({ method: 'GET', url: `/orders/${placed.id}`, headers: bearer(t.admin) })
    expect(asAdmin.statusCode).toBe(200)
    expect(asAdmin.json().id).toBe(placed.id)
  })

  it('answers an unknown order with 404 and a bad id with 422', async () => {
    const user = await makeUser(t.app)
    const unknown = await t.app.inject({ method: 'GET', url: '/orders/999999', headers: bearer(user) })
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toEqual({ error: 'Orden no encontrada' })
    const bad = await t.app.inject({ method: 'GET', url: '/orders/1.5', headers: bearer(user) })
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'id must be an integer number' })
  })

  it('stops showing the nested product once the product is deleted, keeping productId and price', async () => {
    const { user, product, order: placed } = await placedOrder()
    await deleteProduct(t.app, product.id)
    const res = await t.app.inject({ method: 'GET', url: `/orders/${placed.id}`, headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    expect(res.json().items).toEqual([
      { name: expect.any(String), id: expect.any(Number), orderId: placed.id, productId: product.id, quantity: 2, price: 2.5, ...plainLine(5) },
    ])
    const list = await t.app.inject({ method: 'GET', url: '/orders', headers: bearer(user) })
    expect(list.json()[0].items[0]).not.toHaveProperty('product')
  })

  it('requires a token', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/orders' })).statusCode).toBe(401)
    expect((await t.app.inject({ method: 'GET', url: '/orders/1' })).statusCode).toBe(401)
  })
})

describe('authentication on every orders route', () => {
  /** A well-formed JWT with a signature that is not the service's. */
  function forged(user: TestUser): string {
    const [header, payload] = user.token.split('.')
    return `${header}.${payload}.${'A'.repeat(43)}`
  }

  const routes = [
    { method: 'POST', name: 'POST /orders', path: () => '/orders' },
    { method: 'GET', name: 'GET /orders', path: () => '/orders' },
    { method: 'GET', name: 'GET /orders/:id', path: (orderId: number) => `/orders/${orderId}` },
    { method: 'PATCH', name: 'PATCH /orders/:id/status', path: (orderId: number) => `/orders/${orderId}/status`, payload: { status: 'paid' } },
    { method: 'PUT', name: 'PUT /orders/:id/status', path: (orderId: number) => `/orders/${orderId}/status`, payload: { status: 'paid' } },
  ] as const
  const credentials = [
    ['no token', (_user: TestUser): Record<string, string> => ({}), messages.noUser, 'Unauthorized - No user found'],
    ['a garbage token', (_user: TestUser): Record<string, string> => ({ authorization: 'Bearer garbage' }), messages.invalidToken, 'Token inválido o expirado'],
    [
      'a badly signed token',
      (user: TestUser): Record<string, string> => ({ authorization: `Bearer ${forged(user)}` }),
      messages.invalidToken,
      'Token inválido o expirado',
    ],
  ] as const
  const cases = routes.flatMap((route) => credentials.map((credential) => [route.name, credential[0], route, credential] as const))

  it.each(cases)('%s with %s answers 401 and changes nothing', async (_name, _label, route, [, headers, message, literal]) => {
    // The caller has a placed order and a full cart; the forged token is an admin's for the status routes.
    const { user, order: placed } = await placedOrder()
    const p = await makeProduct(t.app, { stock: 5 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 2 }])
    const before = { orders: await countRows(t.app, 'orders'), row: await orderRow(placed.id) }
    const caller = route.method === 'PATCH' || route.method === 'PUT' ? t.admin : user
    const res = await t.app.inject({
      method: route.method,
      url: route.path(placed.id),
      headers: headers(caller),
      ...('payload' in route ? { payload: route.payload } : {}),
    })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: message })
    expect(res.json()).toEqual({ error: literal })
    expect(await countRows(t.app, 'orders')).toBe(before.orders)
    expect(await orderRow(placed.id)).toEqual(before.row)
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 2 })
    expect(await stockOf(t.app, p.id)).toBe(5)
  })
})

describe('PATCH / PUT /orders/:id/status', () => {
  const statuses = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const
  const allowed = new Set(['pending>paid', 'pending>cancelled', 'paid>shipped', 'paid>cancelled', 'shipped>delivered'])
  const cases = statuses.flatMap((from) => statuses.map((to) => [from, to] as const))

  it.each(cases)('%s -> %s follows the documented moves', async (from, to) => {
    const { order: placed, product } = await placedOrder()
    await setStatus(placed.id, from)
    const method = to === 'shipped' || to === 'delivered' ? 'PUT' : 'PATCH'
    const res = await t.app.inject({ method, url: `/orders/${placed.id}/status`, headers: bearer(t.admin), payload: { status: to } })
    const row = await t.app.db.selectFrom('orders').select('status').where('id', '=', placed.id).executeTakeFirstOrThrow()
    if (allowed.has(`${from}>${to}`)) {
      expect(res.statusCode).toBe(200)
      expect(res.json()).toMatchObject({ id: placed.id, status: to, items: [{ productId: product.id, quantity: 2 }] })
      expect(row.status).toBe(to)
      // Cancelling gives the 2 units back; nothing else touches the stock.
      expect(await stockOf(t.app, product.id)).toBe(to === 'cancelled' ? 10 : 8)
    } else {
      expect(res.statusCode).toBe(409)
      expect(res.json()).toEqual({ error: `Transición de estado no permitida: ${from} -> ${to}` })
      expect(row.status).toBe(from)
      expect(await stockOf(t.app, product.id)).toBe(8)
    }
  })

  it('walks an order to shipped and delivered, updating updatedAt', async () => {
    const { order: placed } = await placedOrder()
    // Timestamps have millisecond precision: each change must come after the clock has passed the order's.
    await vi.waitUntil(() => nowIso() > placed.updatedAt, { timeout: 1000, interval: 1 })
    for (const status of ['paid', 'shipped', 'delivered']) {
      const res = await t.app.inject({ method: 'PATCH', url: `/orders/${placed.id}/status`, headers: bearer(t.admin), payload: { status } })
      expect(res.statusCode).toBe(200)
      expect(res.json().status).toBe(status)
      expect(res.json().updatedAt > placed.updatedAt).toBe(true)
    }
  })

  it('cancelling restocks a product, and skips one deleted since', async () => {
    const user = await makeUser(t.app)
    const kept = await makeProduct(t.app, { stock: 4 })
    const gone = await makeProduct(t.app, { stock: 4 })
    await fillCart(t.app, user.id, [
      { productId: kept.id, quantity: 3 },
      { productId: gone.id, quantity: 1 },
    ])
    const placed = (await order(user)).json()
    await deleteProduct(t.app, gone.id)
    const res = await t.app.inject({ method: 'PATCH', url: `/orders/${placed.id}/status`, headers: bearer(t.admin), payload: { status: 'cancelled' } })
    expect(res.statusCode).toBe(200)
    expect(await stockOf(t.app, kept.id)).toBe(4)
    expect(res.json().items).toHaveLength(2)
  })

  it.each([
    [{ status: 'lost' }, statusMessage],
    [{ status: 3 }, statusMessage],
    [{ status: 'PAID' }, statusMessage],
    [{}, 'status should not be empty'],
  ])('refuses %j with 422 and changes nothing', async (body, message) => {
    const { order: placed } = await placedOrder()
    const res = await t.app.inject({ method: 'PATCH', url: `/orders/${placed.id}/status`, headers: bearer(t.admin), payload: body })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    const row = await t.app.db.selectFrom('orders').select('status').where('id', '=', placed.id).executeTakeFirstOrThrow()
    expect(row.status).toBe('pending')
  })

  it.each([
    [{ status: 'lost' }, statusMessage],
    [{ status: 3 }, statusMessage],
    [{ status: 'PAID' }, statusMessage],
    [{}, 'status should not be empty'],
  ])('PUT refuses %j with 422 and changes nothing', async (body, message) => {
    const { order: placed, product } = await placedOrder()
    const before = await orderRow(placed.id)
    const res = await t.app.inject({ method: 'PUT', url: `/orders/${placed.id}/status`, headers: bearer(t.admin), payload: body })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await orderRow(placed.id)).toEqual(before)
    expect(before.status).toBe('pending')
    expect(await stockOf(t.app, product.id)).toBe(8)
  })

  it.each([
    ['PATCH', 'abc'],
    ['PUT', 'abc'],
    ['PATCH', '1.5'],
    ['PUT', '1.5'],
  ])('%s with the id %s answers 422 id must be an integer number', async (method, id) => {
    const { order: placed } = await placedOrder()
    const before = await orderRow(placed.id)
    const res = await t.app.inject({ method: method as 'PUT', url: `/orders/${id}/status`, headers: bearer(t.admin), payload: { status: 'paid' } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'id must be an integer number' })
    expect(await orderRow(placed.id)).toEqual(before)
  })

  it('PUT is for admins only: 403 for a customer (before validation), even on their own order, and nothing changes', async () => {
    const { user, product, order: placed } = await placedOrder()
    const before = await orderRow(placed.id)
    for (const payload of [{ status: 'paid' }, { status: 'cancelled' }, { status: 'bogus' }]) {
      const res = await t.app.inject({ method: 'PUT', url: `/orders/${placed.id}/status`, headers: bearer(user), payload })
      expect(res.statusCode).toBe(403)
      expect(res.json()).toEqual({ error: messages.requiresRoles(['admin']) })
      expect(res.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    }
    expect(await orderRow(placed.id)).toEqual(before)
    expect(before.status).toBe('pending')
    expect(await stockOf(t.app, product.id)).toBe(8)
  })

  it('answers an unknown order with 404 (after validation)', async () => {
    const res = await t.app.inject({ method: 'PUT', url: '/orders/999999/status', headers: bearer(t.admin), payload: { status: 'paid' } })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Orden no encontrada' })
    const invalid = await t.app.inject({ method: 'PUT', url: '/orders/999999/status', headers: bearer(t.admin), payload: { status: 'x' } })
    expect(invalid.statusCode).toBe(422)
  })

  it('is for admins only: 401 without token, 403 for a customer (before validation), even on their own order', async () => {
    const { user, order: placed } = await placedOrder()
    const anon = await t.app.inject({ method: 'PATCH', url: `/orders/${placed.id}/status`, payload: { status: 'paid' } })
    expect(anon.statusCode).toBe(401)
    expect(anon.json()).toEqual({ error: messages.noUser })
    for (const payload of [{ status: 'paid' }, { status: 'bogus' }]) {
      const res = await t.app.inject({ method: 'PATCH', url: `/orders/${placed.id}/status`, headers: bearer(user), payload })
      expect(res.statusCode).toBe(403)
      expect(res.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    }
    const row = await t.app.db.selectFrom('orders').select('status').where('id', '=', placed.id).executeTakeFirstOrThrow()
    expect(row.status).toBe('pending')
  })
})

describe('order totals past the maximum (9,999,999,999,999.99)', () => {
  const MAX_PRICE_CENTS = 9_999_999_999

  it('writes an order up to the maximum exact to the cent', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: MAX_PRICE_CENTS, stock: 100_000 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 99_999 }])
    const res = await order(user)
    expect(res.statusCode).toBe(201)
    expect(res.body).toContain('"total":9999899999000.01')
    const row = await t.app.db.selectFrom('orders').select('total_cents').where('id', '=', res.json().id).executeTakeFirstOrThrow()
    expect(Number(row.total_cents)).toBe(999_989_999_900_001)
  })

  it('refuses a cart whose total is over the maximum with 409 and changes nothing', async () => {
    const user = await makeUser(t.app)
    const first = await makeProduct(t.app, { priceCents: MAX_PRICE_CENTS, stock: 100_000 })
    const second = await makeProduct(t.app, { priceCents: MAX_PRICE_CENTS, stock: 100_000 })
    await fillCart(t.app, user.id, [
      { productId: first.id, quantity: 99_999 },
      { productId: second.id, quantity: 99_999 },
    ])
    const ordersBefore = await countRows(t.app, 'orders')
    const res = await order(user, { 'idempotency-key': 'too-much' })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'El importe supera el máximo permitido (9999999999999.99)' })
    expect(await countRows(t.app, 'orders')).toBe(ordersBefore)
    expect(await stockOf(t.app, first.id)).toBe(100_000)
    expect(await stockOf(t.app, second.id)).toBe(100_000)
    expect(await cartOf(t.app, user.id)).toEqual({ [first.id]: 99_999, [second.id]: 99_999 })
  })
})
