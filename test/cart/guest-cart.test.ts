import { createHash } from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import { mergeGuestCart, sweepExpiredCarts } from '../../src/modules/cart/cart.service.js'
import { placeOrder } from '../../src/modules/orders/orders.service.js'
import { messages } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct, onlyVariantOf, setVariantStockAndPrice } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { cartOf, fillCart, stockOf } from '../helpers/shop.js'

// Carts of guests (`POST /carts`, `X-Cart-Token`), the checkout choices kept on a cart (PATCH /cart), and the guest
// cart's merge into the user's on login and register.

const t = useTestApp()

beforeEach(async () => {
  await t.app.db.deleteFrom('shipping_methods').execute()
})

const TOKEN = /^ct_[A-Za-z0-9_-]{43}$/
const madrid = { fullName: 'Ana Pérez', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' }
const madridSnapshot = { ...madrid, line2: null, region: null, phone: null }

async function newGuestCart(): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: '/carts' })
  expect(res.statusCode).toBe(201)
  return res.json().cartToken
}

function asGuest(token: string, method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: object) {
  return t.app.inject({ method, url, headers: { 'x-cart-token': token }, ...(payload === undefined ? {} : { payload }) })
}

function asUser(user: TestUser, method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: object) {
  return t.app.inject({ method, url, headers: bearer(user), ...(payload === undefined ? {} : { payload }) })
}

async function cartRow(token: string) {
  const hash = createHash('sha256').update(token).digest('hex')
  return t.app.db.selectFrom('carts').selectAll().where('token_hash', '=', hash).executeTakeFirst()
}

async function guestLines(token: string) {
  const cart = await cartRow(token)
  if (!cart) return {}
  const rows = await t.app.db.selectFrom('cart_items').select(['product_id', 'quantity', 'user_id']).where('cart_id', '=', cart.id).execute()
  return Object.fromEntries(rows.map((r) => [r.product_id, r.quantity]))
}

async function addMethod(fields: object): Promise<number> {
  const res = await t.app.inject({ method: 'POST', url: '/shipping-methods', headers: bearer(t.admin), payload: fields })
  expect(res.statusCode).toBe(201)
  return res.json().id
}

describe('POST /carts', () => {
  it('answers a token shown once and its expiry; only the token’s hash is stored', async () => {
    const before = Date.now()
    const res = await t.app.inject({ method: 'POST', url: '/carts' })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(Object.keys(body).sort()).toEqual(['cartToken', 'expiresAt'])
    expect(body.cartToken).toMatch(TOKEN)
    const ttl = Date.parse(body.expiresAt) - before
    expect(ttl).toBeGreaterThanOrEqual(30 * 24 * 3600 * 1000 - 5)
    expect(ttl).toBeLessThan(30 * 24 * 3600 * 1000 + 60_000)
    const row = await cartRow(body.cartToken)
    expect(row).toMatchObject({ user_id: null, expires_at: body.expiresAt })
    expect(JSON.stringify(await t.app.db.selectFrom('carts').selectAll().execute())).not.toContain(body.cartToken)
  })

  it('gives each guest a cart of their own', async () => {
    const [a, b] = [await newGuestCart(), await newGuestCart()]
    expect(a).not.toBe(b)
    const product = await makeProduct(t.app, { stock: 5 })
    expect((await asGuest(a, 'POST', '/cart/add', { productId: product.id, quantity: 2 })).statusCode).toBe(201)
    expect((await asGuest(b, 'GET', '/cart')).json().items).toEqual([])
    expect((await asGuest(a, 'GET', '/cart')).json().items).toHaveLength(1)
  })
})

describe('the cart owner', () => {
  it('a guest cart: add, view, change and remove lines with X-Cart-Token; its lines have no user', async () => {
    const token = await newGuestCart()
    const product = await makeProduct(t.app, { name: 'Taza', priceCents: 1250, stock: 5 })
    const added = await asGuest(token, 'POST', '/cart/add', { productId: product.id, quantity: 2 })
    expect(added.statusCode).toBe(201)
    const cart = await cartRow(token)
    expect(added.json()).toMatchObject({
      cartId: cart!.id,
      userId: null,
      productId: product.id,
      variantId: await onlyVariantOf(t.app, product.id),
      quantity: 2,
    })
    const view = (await asGuest(token, 'GET', '/cart')).json()
    expect(view).toMatchObject({ subtotal: 25, total: 25, email: null, items: [{ productId: product.id, quantity: 2, subtotal: 25 }] })
    const line = added.json().id
    expect((await asGuest(token, 'PUT', `/cart/item/${line}`, { quantity: 3 })).json()).toMatchObject({ id: line, quantity: 3 })
    expect(await guestLines(token)).toEqual({ [product.id]: 3 })
    expect((await asGuest(token, 'DELETE', `/cart/item/${line}`)).json()).toEqual({ message: messages.cartItemRemoved })
    expect(await guestLines(token)).toEqual({})
  })

  it('neither a bearer nor a cart token: 401; an unknown, malformed or expired token: 404 Carrito no encontrado', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/cart' })
    expect(none.statusCode).toBe(401)
    expect(none.json()).toEqual({ error: messages.noUser })
    const token = await newGuestCart()
    const unknown = `ct_${'A'.repeat(43)}`
    for (const bad of [unknown, 'ct_short', 'not-a-token', token.slice(0, -1)]) {
      const res = await asGuest(bad, 'GET', '/cart')
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({ error: 'Carrito no encontrado' })
    }
    await t.app.db
      .updateTable('carts')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', (await cartRow(token))!.id)
      .execute()
    const expired = await asGuest(token, 'POST', '/cart/add', { productId: 1, quantity: 1 })
    expect(expired.statusCode).toBe(404)
    expect(expired.json()).toEqual({ error: 'Carrito no encontrado' })
  })

  it('the owner is checked before the body: an unknown token with a bad body is the 404', async () => {
    const res = await asGuest(`ct_${'B'.repeat(43)}`, 'POST', '/cart/add', { quantity: 0 })
    expect(res.statusCode).toBe(404)
  })

  it('a bearer and a cart token: the bearer’s cart', async () => {
    const user = await makeUser(t.app)
    const token = await newGuestCart()
    const product = await makeProduct(t.app, { stock: 5 })
    const res = await t.app.inject({
      method: 'POST',
      url: '/cart/add',
      headers: { ...bearer(user), 'x-cart-token': token },
      payload: { productId: product.id, quantity: 1 },
    })
    expect(res.statusCode).toBe(201)
    expect(res.json().userId).toBe(user.id)
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 1 })
    expect(await guestLines(token)).toEqual({})
  })

  it('every change moves the guest cart’s expiry on; a refused one does not', async () => {
    const token = await newGuestCart()
    const product = await makeProduct(t.app, { stock: 1 })
    const old = new Date(Date.now() + 60_000).toISOString()
    await t.app.db
      .updateTable('carts')
      .set({ expires_at: old })
      .where('id', '=', (await cartRow(token))!.id)
      .execute()
    expect((await asGuest(token, 'POST', '/cart/add', { productId: product.id, quantity: 5 })).statusCode).toBe(409)
    expect((await cartRow(token))!.expires_at).toBe(old)
    expect((await asGuest(token, 'POST', '/cart/add', { productId: product.id, quantity: 1 })).statusCode).toBe(201)
    expect(Date.parse((await cartRow(token))!.expires_at!)).toBeGreaterThan(Date.now() + 29 * 24 * 3600 * 1000)
  })
})

describe('the sweep of expired guest carts', () => {
  it('removes expired guest carts with their lines, and nothing else', async () => {
    const [expired, alive] = [await newGuestCart(), await newGuestCart()]
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { stock: 5 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
    for (const token of [expired, alive]) await asGuest(token, 'POST', '/cart/add', { productId: product.id, quantity: 1 })
    const expiredId = (await cartRow(expired))!.id
    await t.app.db
      .updateTable('carts')
      .set({ expires_at: new Date(Date.now() - 1).toISOString() })
      .where('id', '=', expiredId)
      .execute()
    expect(await sweepExpiredCarts(t.app.db)).toBeGreaterThanOrEqual(1)
    expect(await cartRow(expired)).toBeUndefined()
    expect(await t.app.db.selectFrom('cart_items').select('id').where('cart_id', '=', expiredId).execute()).toEqual([])
    expect(await guestLines(alive)).toEqual({ [product.id]: 1 })
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 1 })
  })
})

describe('POST /cart/add by variant', () => {
  it('takes variantId alone; another product’s variant with productId is 422; an unknown variant 404', async () => {
    const user = await makeUser(t.app)
    const [a, b] = [await makeProduct(t.app, { stock: 5 }), await makeProduct(t.app, { stock: 5 })]
    const variantA = await onlyVariantOf(t.app, a.id)
    const alone = await asUser(user, 'POST', '/cart/add', { variantId: variantA, quantity: 1 })
    expect(alone.statusCode).toBe(201)
    expect(alone.json()).toMatchObject({ productId: a.id, variantId: variantA })
    const mismatch = await asUser(user, 'POST', '/cart/add', { productId: b.id, variantId: variantA, quantity: 1 })
    expect(mismatch.statusCode).toBe(422)
    expect(mismatch.json()).toEqual({ error: 'La variante no pertenece al producto' })
    const unknown = await asUser(user, 'POST', '/cart/add', { variantId: 2_000_000_000, quantity: 1 })
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toEqual({ error: 'Variante no encontrada' })
    const neither = await asUser(user, 'POST', '/cart/add', { quantity: 1 })
    expect(neither.statusCode).toBe(422)
    expect(neither.json()).toEqual({ error: 'variantId should not be empty' })
    expect(await cartOf(t.app, user.id)).toEqual({ [a.id]: 1 })
  })

  it('a line of a product with options carries its SKU, title and option values', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: 1000, stock: 3 })
    const option = await t.app.inject({
      method: 'POST',
      url: `/products/${product.id}/options`,
      headers: bearer(t.admin),
      payload: { name: 'Talla', values: ['S', 'M'], defaultValue: 'S' },
    })
    expect(option.statusCode).toBe(201)
    const variant = option.json().variants[0]
    await t.app.db.updateTable('product_variants').set({ sku: 'TAZA-S', sku_key: 'taza-s' }).where('id', '=', variant.id).execute()
    const res = await asUser(user, 'POST', '/cart/add', { variantId: variant.id, quantity: 1 })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ sku: 'TAZA-S', variantTitle: 'S', options: [{ name: 'Talla', value: 'S' }] })
    const view = (await asUser(user, 'GET', '/cart')).json()
    expect(view.items[0]).toMatchObject({ sku: 'TAZA-S', variantTitle: 'S', options: [{ name: 'Talla', value: 'S' }] })
  })
})

describe('PATCH /cart', () => {
  it('keeps a guest’s e-mail, inline address, method and note, shows them in the view, and null clears one', async () => {
    const token = await newGuestCart()
    const methodId = await addMethod({ name: 'Estándar', price: 4.9 })
    const res = await asGuest(token, 'PATCH', '/cart', { email: 'Ana@Example.com', shippingAddress: madrid, shippingMethodId: methodId, note: 'Portal 2' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({
      email: 'ana@example.com',
      shippingAddress: madridSnapshot,
      shippingMethod: { id: methodId, name: 'Estándar', price: 4.9 },
      note: 'Portal 2',
      taxCountry: 'ES',
      shippingTotal: 4.9,
      total: 4.9,
    })
    const cleared = await asGuest(token, 'PATCH', '/cart', { note: null, shippingMethodId: null })
    expect(cleared.json()).toMatchObject({ note: null, shippingMethod: null, email: 'ana@example.com', shippingTotal: 0 })
    expect(await cartRow(token)).toMatchObject({ note: null, shipping_method_id: null, email: 'ana@example.com' })
  })

  it('a user names an address of their book; the view shows it, and the tax country follows it', async () => {
    const user = await makeUser(t.app)
    const address = await asUser(user, 'POST', '/addresses', { ...madrid, country: 'PT', city: 'Lisboa' })
    const res = await asUser(user, 'PATCH', '/cart', { shippingAddressId: address.json().id })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ shippingAddress: { city: 'Lisboa', country: 'PT' }, taxCountry: 'PT' })
    // Its address deleted, the cart has none.
    await asUser(user, 'DELETE', `/addresses/${address.json().id}`)
    expect((await asUser(user, 'GET', '/cart')).json()).toMatchObject({ shippingAddress: null, taxCountry: 'ES' })
  })

  it('refuses, changing nothing: e-mail on a user’s cart 409, a book address for a guest or someone else’s 404, an unknown method 404, both address forms 422', async () => {
    const [user, other] = [await makeUser(t.app), await makeUser(t.app)]
    const token = await newGuestCart()
    const othersAddress = (await asUser(other, 'POST', '/addresses', madrid)).json().id
    const inactive = await addMethod({ name: 'Viejo', price: 1, active: false })
    const cases: Array<[ReturnType<typeof asUser>, number, string]> = [
      [asUser(user, 'PATCH', '/cart', { email: 'x@example.com' }), 409, 'El email del pedido es el de tu cuenta'],
      [asGuest(token, 'PATCH', '/cart', { shippingAddressId: othersAddress }), 404, messages.addressNotFound],
      [asUser(user, 'PATCH', '/cart', { shippingAddressId: othersAddress }), 404, messages.addressNotFound],
      [asUser(user, 'PATCH', '/cart', { shippingMethodId: inactive }), 404, messages.shippingMethodNotFound],
      [asUser(user, 'PATCH', '/cart', { shippingAddressId: othersAddress, shippingAddress: madrid }), 422, messages.addressIdAndInline],
      [asUser(user, 'PATCH', '/cart', { email: 'not-an-email' }), 422, 'email must be a valid email'],
      [asUser(user, 'PATCH', '/cart', {}), 422, 'body must contain at least one field'],
    ]
    for (const [request, status, message] of cases) {
      const res = await request
      expect([res.statusCode, res.json()]).toEqual([status, { error: message }])
    }
    // No cart row was made for the user, and the guest's is untouched.
    expect(await t.app.db.selectFrom('carts').select('id').where('user_id', '=', user.id).execute()).toEqual([])
    expect(await cartRow(token)).toMatchObject({ email: null, shipping_address_id: null, shipping_address: null })
  })

  it('a checkout without a body uses the cart’s choices, and clears them afterwards', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: 1000, stock: 5 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 2 }])
    const methodId = await addMethod({ name: 'Estándar', price: 4.9 })
    const address = (await asUser(user, 'POST', '/addresses', madrid)).json().id
    await asUser(user, 'PATCH', '/cart', { shippingAddressId: address, shippingMethodId: methodId, note: 'Llamar' })
    const kept = { shipping_address_id: address, shipping_method_id: methodId, note: 'Llamar' }
    const row = () => t.app.db.selectFrom('carts').selectAll().where('user_id', '=', user.id).executeTakeFirstOrThrow()
    // A refused checkout (short of stock) leaves the choices on the cart.
    await t.app.db.updateTable('product_variants').set({ stock: 1 }).where('product_id', '=', product.id).execute()
    expect((await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user) })).statusCode).toBe(409)
    expect(await row()).toMatchObject(kept)
    await t.app.db.updateTable('product_variants').set({ stock: 5 }).where('product_id', '=', product.id).execute()
    const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ subtotal: 20, shippingTotal: 4.9, total: 24.9, note: 'Llamar', shippingAddress: madridSnapshot })
    const view = (await asUser(user, 'GET', '/cart')).json()
    expect(view).toMatchObject({ items: [], shippingAddress: null, shippingMethod: null, note: null })
    // The next order, from a cart that kept no choice, leaves the row as it was (its updated_at too).
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
    const before = await row()
    expect(before).toMatchObject({ shipping_address_id: null, shipping_method_id: null, note: null, discount_code: null })
    const again = await t.app.inject({
      method: 'POST',
      url: '/orders',
      headers: bearer(user),
      payload: { shippingAddressId: address, shippingMethodId: methodId },
    })
    expect(again.statusCode).toBe(201)
    expect(await row()).toEqual(before)
  })

  it('the body of a checkout wins over the cart’s choices', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: 1000, stock: 5 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
    const cheap = await addMethod({ name: 'Lento', price: 1 })
    const fast = await addMethod({ name: 'Rápido', price: 9 })
    await asUser(user, 'PATCH', '/cart', { shippingAddress: madrid, shippingMethodId: cheap, note: 'del carrito' })
    const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user), payload: { shippingMethodId: fast, note: 'del pedido' } })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ shippingTotal: 9, note: 'del pedido', shippingAddress: madridSnapshot })
  })
})

describe('merging a guest cart on login and register', () => {
  async function login(user: TestUser, token?: string) {
    return t.app.inject({
      method: 'POST',
      url: '/auth/login',
      headers: token ? { 'x-cart-token': token } : {},
      payload: { email: user.email, password: user.password },
    })
  }

  it('login: same-variant quantities add up, capped at stock; a line at 0 is dropped; the user’s choices win; the guest cart is gone', async () => {
    const user = await makeUser(t.app)
    const [shared, capped, soldOut, fresh] = [
      await makeProduct(t.app, { stock: 10 }),
      await makeProduct(t.app, { stock: 3 }),
      await makeProduct(t.app, { stock: 2 }),
      await makeProduct(t.app, { stock: 4 }),
    ]
    await fillCart(t.app, user.id, [{ productId: shared.id, quantity: 1 }])
    const mine = await addMethod({ name: 'Mío', price: 3 })
    const theirs = await addMethod({ name: 'Suyo', price: 5 })
    await asUser(user, 'PATCH', '/cart', { shippingMethodId: mine })
    const token = await newGuestCart()
    for (const [product, quantity] of [
      [shared, 4],
      [capped, 3],
      [soldOut, 2],
      [fresh, 1],
    ] as const) {
      expect((await asGuest(token, 'POST', '/cart/add', { productId: product.id, quantity })).statusCode).toBe(201)
    }
    await asGuest(token, 'PATCH', '/cart', { shippingMethodId: theirs, note: 'del invitado', shippingAddress: madrid })
    const guestCartId = (await cartRow(token))!.id
    await setVariantStockAndPrice(t.app, capped.id, { stock: 2 })
    await setVariantStockAndPrice(t.app, soldOut.id, { stock: 0 })

    const res = await login(user, token)
    expect(res.statusCode).toBe(200)
    expect(await cartOf(t.app, user.id)).toEqual({ [shared.id]: 5, [capped.id]: 2, [fresh.id]: 1 })
    const view = (await asUser(user, 'GET', '/cart')).json()
    expect(view).toMatchObject({ shippingMethod: { id: mine }, note: 'del invitado', shippingAddress: madridSnapshot })
    expect(await cartRow(token)).toBeUndefined()
    expect((await asGuest(token, 'GET', '/cart')).statusCode).toBe(404)
    expect(await t.app.db.selectFrom('cart_items').select('id').where('cart_id', '=', guestCartId).execute()).toEqual([])
  })

  it('register: the guest cart becomes the new user’s', async () => {
    const token = await newGuestCart()
    const product = await makeProduct(t.app, { stock: 5 })
    await asGuest(token, 'POST', '/cart/add', { productId: product.id, quantity: 2 })
    const email = `new-${Date.now()}@example.com`
    const res = await t.app.inject({
      method: 'POST',
      url: '/auth/register',
      headers: { 'x-cart-token': token },
      payload: { name: 'Nueva', email, password: 'secret123' },
    })
    expect(res.statusCode).toBe(201)
    expect(await cartOf(t.app, Number(res.json().user.id))).toEqual({ [product.id]: 2 })
    expect(await cartRow(token)).toBeUndefined()
  })

  it('a merge racing a checkout loses no unit: what the order took and what the cart holds add up to both carts', async () => {
    const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
    const user = await makeUser(t.app)
    const [a, b] = [await makeProduct(t.app, { stock: 50 }), await makeProduct(t.app, { stock: 50 })]
    await fillCart(t.app, user.id, [{ productId: a.id, quantity: 2 }])
    const token = await newGuestCart()
    await asGuest(token, 'POST', '/cart/add', { productId: a.id, quantity: 1 })
    await asGuest(token, 'POST', '/cart/add', { productId: b.id, quantity: 1 })
    // The order has taken the cart's lines and not yet committed when the merge starts.
    const ordering = placeOrder(t.app.services.orders, user.id, { afterStep: async (step) => (step === 'cart-taken' ? sleep(300) : undefined) })
    await sleep(100)
    await Promise.all([ordering, mergeGuestCart(t.app.db, token, user.id)])
    const order = (await ordering).order
    const orderUnits = order.items.reduce((sum, item) => sum + item.quantity, 0)
    const cartUnits = Object.values(await cartOf(t.app, user.id)).reduce((sum, quantity) => sum + quantity, 0)
    expect(orderUnits + cartUnits).toBe(4)
    expect(100 - (await stockOf(t.app, a.id)) - (await stockOf(t.app, b.id))).toBe(orderUnits)
    expect(await cartRow(token)).toBeUndefined()
  })

  it('a stale, unknown or malformed token is ignored: the login answers as usual', async () => {
    const user = await makeUser(t.app)
    for (const token of [`ct_${'C'.repeat(43)}`, 'garbage']) {
      const res = await login(user, token)
      expect(res.statusCode).toBe(200)
    }
    expect(await cartOf(t.app, user.id)).toEqual({})
  })

  it('a refused login merges nothing', async () => {
    const user = await makeUser(t.app)
    const token = await newGuestCart()
    const product = await makeProduct(t.app, { stock: 5 })
    await asGuest(token, 'POST', '/cart/add', { productId: product.id, quantity: 1 })
    const res = await t.app.inject({
      method: 'POST',
      url: '/auth/login',
      headers: { 'x-cart-token': token },
      payload: { email: user.email, password: 'wrong-password' },
    })
    expect(res.statusCode).toBe(401)
    expect(await guestLines(token)).toEqual({ [product.id]: 1 })
    expect(await cartOf(t.app, user.id)).toEqual({})
  })
})
