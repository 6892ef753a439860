import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { messages } from '../../src/shared/errors.js'
import { openTestDatabase, testConfig } from '../helpers/app.js'
import { makeProduct, onlyVariantOf } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'

// A signed-in customer's unchanged cart view is answered from memory before Fastify (cart-view-cache.ts). Only a
// real listening server goes through that door (app.inject does not), so these tests use HTTP. Each change a view
// shows must show in the very next read: the cart's lines and choices (whoever made them, even straight in the
// database), the address and method it points to, the catalog and the tax rates.

let app: FastifyInstance | undefined
let drop: (() => Promise<void>) | undefined
afterEach(async () => {
  await app?.close()
  await drop?.()
  app = undefined
  drop = undefined
})

async function start(env: Record<string, string> = {}) {
  const database = await openTestDatabase()
  drop = database.drop
  app = await buildApp(testConfig(env), { database: database.handle, logger: false, catalogCache: true })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const a = app
  const admin = await makeUser(a, 'admin')
  const customer = await makeUser(a)
  // A session token (the front door answers only those the auth caches vouch for).
  const login = await a.inject({ method: 'POST', url: '/auth/login', payload: { email: customer.email, password: customer.password } })
  expect(login.statusCode).toBe(200)
  const token = login.json().token as string
  const shirt = await makeProduct(a, { name: 'Camiseta', priceCents: 1999, stock: 10 })
  const book = await makeProduct(a, { name: 'Libro', priceCents: 500, stock: 10 })
  await fillCart(a, customer.id, [{ productId: shirt.id, quantity: 2 }])
  const get = async (headers: Record<string, string> = { authorization: `Bearer ${token}` }) => {
    const response = await fetch(`${base}/cart`, { headers })
    return { status: response.status, headers: response.headers, text: await response.text() }
  }
  const as = (user: TestUser | string) => (method: string, url: string, body?: object) =>
    fetch(base + url, {
      method,
      headers: { ...(typeof user === 'string' ? { authorization: `Bearer ${user}` } : bearer(user)), ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
  return { a, base, admin: as(admin), customer: as(token), customerUser: customer, token, shirt, book, get }
}

/** Reads the view twice more: the second read comes from memory (a hit), with the same bytes. */
async function expectHit(t: Awaited<ReturnType<typeof start>>) {
  const first = await t.get()
  const hits = t.a.cartViews.hits
  const second = await t.get()
  expect(t.a.cartViews.hits).toBe(hits + 1)
  expect(second.text).toBe(first.text)
  return JSON.parse(second.text)
}

describe('GET /cart answered from memory while the cart is unchanged', () => {
  it('a repeated read is a hit: same status, body and headers, its own request id', async () => {
    const t = await start()
    const first = await t.get()
    expect(first.status).toBe(200)
    const hits = t.a.cartViews.hits
    const second = await t.get()
    expect(t.a.cartViews.hits).toBe(hits + 1)
    expect(second.status).toBe(200)
    expect(second.text).toBe(first.text)
    const comparable = (h: Headers) => {
      const all = Object.fromEntries(h)
      delete all.date
      delete all['x-request-id']
      return all
    }
    expect(comparable(second.headers)).toEqual(comparable(first.headers))
    expect(second.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'))
    expect(JSON.parse(second.text).items[0].quantity).toBe(2)
  })

  it('every change to the cart shows in the next read: add, quantity, remove, choices, and a change made in the database', async () => {
    const t = await start()
    await expectHit(t)
    expect((await t.customer('POST', '/cart/add', { productId: t.book.id, quantity: 1 })).status).toBe(201)
    let view = JSON.parse((await t.get()).text)
    expect(view.items.map((i: { productId: number; quantity: number }) => [i.productId, i.quantity])).toEqual([
      [t.shirt.id, 2],
      [t.book.id, 1],
    ])
    view = await expectHit(t)
    const bookLine = view.items[1].id
    expect((await t.customer('PUT', `/cart/item/${bookLine}`, { quantity: 3 })).status).toBe(200)
    expect(JSON.parse((await t.get()).text).items[1].quantity).toBe(3)
    await expectHit(t)
    expect((await t.customer('PATCH', '/cart', { note: 'Llamar antes' })).status).toBe(200)
    expect(JSON.parse((await t.get()).text).note).toBe('Llamar antes')
    await expectHit(t)
    expect((await t.customer('DELETE', `/cart/item/${bookLine}`)).status).toBe(200)
    expect(JSON.parse((await t.get()).text).items).toHaveLength(1)
    await expectHit(t)
    // Behind the service's back: the quantity changed in the database.
    await t.a.db.updateTable('cart_items').set({ quantity: 4 }).where('user_id', '=', t.customerUser.id).execute()
    expect(JSON.parse((await t.get()).text).items[0].quantity).toBe(4)
  })

  it('the address and the method the cart points to, the catalog and the tax rates show in the next read', async () => {
    const t = await start()
    const address = await (
      await t.customer('POST', '/addresses', { fullName: 'Ana Pérez', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' })
    ).json()
    const method = await (await t.admin('POST', '/shipping-methods', { name: 'Estándar', price: 4.9 })).json()
    expect((await t.customer('PATCH', '/cart', { shippingAddressId: address.id, shippingMethodId: method.id })).status).toBe(200)
    await expectHit(t)
    expect((await t.customer('PATCH', `/addresses/${address.id}`, { city: 'Sevilla' })).status).toBe(200)
    expect(JSON.parse((await t.get()).text).shippingAddress.city).toBe('Sevilla')
    await expectHit(t)
    expect((await t.admin('PATCH', `/shipping-methods/${method.id}`, { price: 5.5 })).status).toBe(200)
    expect(JSON.parse((await t.get()).text).shippingMethod.price).toBe(5.5)
    await expectHit(t)
    expect((await t.admin('PUT', `/products/${t.shirt.id}`, { name: 'Camiseta azul' })).status).toBe(200)
    expect(JSON.parse((await t.get()).text).items[0].product.name).toBe('Camiseta azul')
    await expectHit(t)
    const variantId = await onlyVariantOf(t.a, t.shirt.id)
    expect((await t.admin('PATCH', `/variants/${variantId}`, { price: 25 })).status).toBe(200)
    expect(JSON.parse((await t.get()).text).items[0].product.price).toBe(25)
    const before = await expectHit(t)
    expect(before.taxTotal).toBe(0)
    expect((await t.admin('POST', '/tax-rates', { country: 'ES', taxClass: 'standard', rate: 21 })).status).toBe(201)
    expect(JSON.parse((await t.get()).text).taxTotal).toBeGreaterThan(0)
  })

  it('checkout empties the cart: the next read shows it empty', async () => {
    const t = await start()
    await expectHit(t)
    expect((await t.customer('POST', '/orders')).status).toBe(201)
    expect(JSON.parse((await t.get()).text).items).toEqual([])
  })

  it('a cart with a discount code is priced afresh every time (never answered from memory)', async () => {
    const t = await start()
    expect((await t.admin('POST', '/discount-codes', { code: 'DIEZ', type: 'percent', value: 10 })).status).toBe(201)
    expect((await t.customer('POST', '/cart/discount', { code: 'DIEZ' })).status).toBe(200)
    await t.get()
    const hits = t.a.cartViews.hits
    const view = JSON.parse((await t.get()).text)
    expect(view.discount.applicable).toBe(true)
    // The code ran out meanwhile (another customer's order): the next read says so at once.
    await t.a.db.updateTable('discount_codes').set({ usage_limit: 1, usage_count: 1 }).where('code', '=', 'DIEZ').execute()
    expect(JSON.parse((await t.get()).text).discount.applicable).toBe(false)
    expect(t.a.cartViews.hits).toBe(hits)
  })

  it('a token that no longer holds, another user’s token, a guest token: never this cart from memory', async () => {
    const t = await start()
    await expectHit(t)
    const other = await makeUser(t.a)
    const otherLogin = await t.a.inject({ method: 'POST', url: '/auth/login', payload: { email: other.email, password: other.password } })
    const otherView = await t.get({ authorization: `Bearer ${otherLogin.json().token}` })
    expect(JSON.parse(otherView.text).items).toEqual([])
    const guest = await (await fetch(`${t.base}/carts`, { method: 'POST' })).json()
    const guestView = await t.get({ 'x-cart-token': guest.cartToken })
    expect(JSON.parse(guestView.text).items).toEqual([])
    // Logged out: the session ended, the same token is a 401 at once.
    expect((await t.customer('POST', '/auth/logout')).status).toBe(200)
    const after = await t.get()
    expect(after.status).toBe(401)
    expect(JSON.parse(after.text)).toEqual({ error: messages.invalidToken })
  })

  it('a token that expires is a 401 at once, though its cart was answered from memory a moment before', async () => {
    const t = await start({ JWT_EXPIRES_IN: '2s' })
    await expectHit(t)
    await new Promise((resolve) => setTimeout(resolve, 2100))
    const after = await t.get()
    expect(after.status).toBe(401)
  })

  it('a write racing a read never leaves a stale answer: each read after the writes settle shows the last quantity', async () => {
    const t = await start()
    const line = JSON.parse((await t.get()).text).items[0].id
    for (let quantity = 1; quantity <= 6; quantity++) {
      await Promise.all([t.get(), t.customer('PUT', `/cart/item/${line}`, { quantity }), t.get(), t.get()])
      expect(JSON.parse((await t.get()).text).items[0].quantity).toBe(quantity)
      expect(JSON.parse((await t.get()).text).items[0].quantity).toBe(quantity)
    }
    // The version read through the raw SQL path agrees with the service's own.
    const count = await sql<{ n: number }>`select count(*) as n from cart_items`.execute(t.a.db)
    expect(Number(count.rows[0]!.n)).toBe(1)
  })
})
