import { describe, expect, it } from 'vitest'
import { placeOrder } from '../../src/modules/orders/orders.service.js'
import { messages } from '../../src/shared/errors.js'
import { dialect, useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { countRows, fillCart, stockOf } from '../helpers/shop.js'

// Checkout with the full breakdown: taxes and a code kept on the order, the code's use counted (exactly once under
// concurrency) and given back on a cancel; guest checkout with X-Cart-Token.

const t = useTestApp()

const madrid = { fullName: 'Ana Pérez', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' }
let sequence = 0

async function newCode(fields: object = {}) {
  sequence += 1
  const code = `EU${sequence}X${Date.now() % 100000}`
  const res = await t.app.inject({ method: 'POST', url: '/discount-codes', headers: bearer(t.admin), payload: { code, type: 'percent', value: 10, ...fields } })
  expect(res.statusCode).toBe(201)
  return res.json() as { id: number; code: string; updatedAt: string }
}

async function setRates() {
  await t.app.db.deleteFrom('tax_rates').execute()
  await t.app.db.deleteFrom('shipping_methods').execute()
  await t.app.inject({ method: 'POST', url: '/tax-rates', headers: bearer(t.admin), payload: { country: 'ES', taxClass: 'standard', rate: 21 } })
}

/** The code's `usageCount` as the admin reads it. */
async function usageCount(id: number): Promise<number> {
  const res = await t.app.inject({ method: 'GET', url: `/discount-codes/${id}`, headers: bearer(t.admin) })
  expect(res.statusCode).toBe(200)
  return (res.json() as { usageCount: number }).usageCount
}

function applyCode(user: TestUser, code: string) {
  return t.app.inject({ method: 'POST', url: '/cart/discount', headers: bearer(user), payload: { code } })
}

describe('checkout with taxes and a code', () => {
  it('keeps the breakdown the cart showed, counts the code’s use with a redemption, and gives it back when the pending order is cancelled', async () => {
    await setRates()
    const code = await newCode()
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { name: 'Taza', priceCents: 1210, stock: 5 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 2 }])
    expect((await applyCode(user, code.code)).statusCode).toBe(200)
    const view = (await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })).json()
    const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
    expect(res.statusCode).toBe(201)
    const order = res.json()
    expect(order).toMatchObject({
      subtotal: 24.2,
      discountTotal: 2.42,
      shippingDiscount: 0,
      taxTotal: 3.78,
      total: 21.78,
      currency: 'EUR',
      pricesIncludeTax: true,
      taxCountry: 'ES',
      discount: { code: code.code, type: 'percent', value: 10 },
      taxLines: [{ name: 'IVA 21%', taxClass: 'standard', rate: 21, base: 18, amount: 3.78 }],
      items: [{ quantity: 2, price: 12.1, discount: 2.42, taxClass: 'standard', taxRate: 21, tax: 3.78, total: 21.78 }],
    })
    // What the cart showed is what the order charges.
    expect([view.total, view.taxTotal, view.discountTotal]).toEqual([order.total, order.taxTotal, order.discountTotal])
    expect(await usageCount(code.id)).toBe(1)
    // A code without limits is counted by its orders: the order wrote nothing to the code's row.
    expect(await t.app.db.selectFrom('discount_codes').select(['usage_count', 'updated_at']).where('id', '=', code.id).executeTakeFirstOrThrow()).toEqual({
      usage_count: 0,
      updated_at: code.updatedAt,
    })
    // The order is the code's redemption: it holds the use, with its customer then and its discount.
    const redemption = await t.app.db
      .selectFrom('orders')
      .select(['discount_code_id', 'user_id', 'discount_email', 'discount_total_cents'])
      .where('id', '=', order.id)
      .executeTakeFirstOrThrow()
    expect(redemption).toEqual({ discount_code_id: code.id, user_id: user.id, discount_email: user.email, discount_total_cents: 242 })
    // The cart's code went with the order.
    expect((await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })).json().discount).toBeNull()

    const cancelled = await t.app.inject({ method: 'POST', url: `/orders/${order.id}/cancel`, headers: bearer(user) })
    expect(cancelled.statusCode).toBe(200)
    expect(await usageCount(code.id)).toBe(0)
    // It no longer holds the use; `discount` still says which code priced it.
    const after = await t.app.db.selectFrom('orders').select(['discount_code_id', 'discount']).where('id', '=', order.id).executeTakeFirstOrThrow()
    expect(after.discount_code_id).toBeNull()
    expect(JSON.parse(after.discount ?? 'null')).toMatchObject({ code: code.code, type: 'percent' })
    // Its snapshot does not move when the rate changes afterwards.
    await t.app.db.updateTable('tax_rates').set({ rate: 1000 }).execute()
    expect((await t.app.inject({ method: 'GET', url: `/orders/${order.id}`, headers: bearer(user) })).json()).toMatchObject({ taxTotal: 3.78, total: 21.78 })
  })

  it('a code that stopped applying refuses the checkout with its message, changing nothing', async () => {
    await setRates()
    const code = await newCode({ usageLimit: 1 })
    const [first, second] = [await makeUser(t.app), await makeUser(t.app)]
    const product = await makeProduct(t.app, { priceCents: 1000, stock: 5 })
    for (const user of [first, second]) {
      await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
      expect((await applyCode(user, code.code)).statusCode).toBe(200)
    }
    expect((await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(first) })).statusCode).toBe(201)
    const ordersBefore = await countRows(t.app, 'orders')
    const refused = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(second) })
    expect(refused.statusCode).toBe(409)
    expect(refused.json()).toEqual({ error: messages.discountCodeUsedUp })
    expect(await countRows(t.app, 'orders')).toBe(ordersBefore)
    expect(await stockOf(t.app, product.id)).toBe(4)
    const view = (await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(second) })).json()
    expect(view).toMatchObject({ items: [{ quantity: 1 }], discount: { code: code.code, applicable: false, reason: messages.discountCodeUsedUp } })
  })

  it('checks the code after the products on sale and before stock, changing nothing', async () => {
    await setRates()
    const code = await newCode({ usageLimit: 1 })
    const user = await makeUser(t.app)
    // Stock is taken by product id: the other product's first, then the short one is refused.
    const other = await makeProduct(t.app, { name: 'Otra', priceCents: 1000, stock: 5 })
    const short = await makeProduct(t.app, { name: 'Escasa', priceCents: 1000, stock: 5 })
    await fillCart(t.app, user.id, [
      { productId: other.id, quantity: 1 },
      { productId: short.id, quantity: 3 },
    ])
    expect((await applyCode(user, code.code)).statusCode).toBe(200)
    const order = () => t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
    const ordersBefore = await countRows(t.app, 'orders')
    const nothingChanged = async () => {
      expect(await countRows(t.app, 'orders')).toBe(ordersBefore)
      expect([await stockOf(t.app, other.id), await stockOf(t.app, short.id)]).toEqual([5, 2])
      expect((await t.app.db.selectFrom('discount_codes').select('usage_count').where('id', '=', code.id).executeTakeFirstOrThrow()).usage_count).toBe(1)
      expect((await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })).json().items).toHaveLength(2)
    }
    // Short of stock and the code used up meanwhile: the code answers.
    await t.app.db.updateTable('product_variants').set({ stock: 2 }).where('product_id', '=', short.id).execute()
    await t.app.db.updateTable('products').set({ stock: 2 }).where('id', '=', short.id).execute()
    await t.app.db.updateTable('discount_codes').set({ usage_count: 1 }).where('id', '=', code.id).execute()
    let res = await order()
    expect([res.statusCode, res.json()]).toEqual([409, { error: messages.discountCodeUsedUp }])
    await nothingChanged()
    // Off sale as well: the product answers first.
    await t.app.db.updateTable('products').set({ status: 'draft' }).where('id', '=', short.id).execute()
    res = await order()
    expect([res.statusCode, res.json()]).toEqual([409, { error: messages.productUnavailable('Escasa') }])
    await t.app.db.updateTable('products').set({ status: 'active' }).where('id', '=', short.id).execute()
    // The code usable again: stock answers.
    await t.app.db.updateTable('discount_codes').set({ usage_count: 0 }).where('id', '=', code.id).execute()
    res = await order()
    expect([res.statusCode, res.json()]).toEqual([409, { error: messages.insufficientStockFor('Escasa') }])
    await t.app.db.updateTable('discount_codes').set({ usage_count: 1 }).where('id', '=', code.id).execute()
    await nothingChanged()
    // Switched off, or gone, since it was applied: 404 (the row is read again with the cart at checkout).
    await t.app.db.updateTable('product_variants').set({ stock: 5 }).where('product_id', '=', short.id).execute()
    await t.app.db.updateTable('products').set({ stock: 5 }).where('id', '=', short.id).execute()
    await t.app.db.updateTable('discount_codes').set({ active: 0 }).where('id', '=', code.id).execute()
    res = await order()
    expect([res.statusCode, res.json()]).toEqual([404, { error: messages.discountCodeInvalid }])
    await t.app.db
      .updateTable('discount_codes')
      .set({ code: `${code.code}-RENAMED` })
      .where('id', '=', code.id)
      .execute()
    await t.app.db.updateTable('discount_codes').set({ active: 1 }).where('id', '=', code.id).execute()
    res = await order()
    expect([res.statusCode, res.json()]).toEqual([404, { error: messages.discountCodeInvalid }])
    expect(await countRows(t.app, 'orders')).toBe(ordersBefore)
  })

  it('20 concurrent checkouts on a code with usageLimit 1 give exactly one order with the code; the others its 409 and nothing changed', async () => {
    const code = await newCode({ usageLimit: 1 })
    const product = await makeProduct(t.app, { priceCents: 1000, stock: 100 })
    const users: TestUser[] = []
    for (let i = 0; i < 20; i++) {
      const user = await makeUser(t.app)
      await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
      expect((await applyCode(user, code.code)).statusCode).toBe(200)
      users.push(user)
    }
    const results = await Promise.allSettled(users.map((user) => placeOrder(t.app.services.orders, user.id)))
    const placed = results.filter((r) => r.status === 'fulfilled')
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    expect(placed).toHaveLength(1)
    expect(refused.map((r) => (r.reason as Error).message)).toEqual(Array(19).fill(messages.discountCodeUsedUp))
    expect((await t.app.db.selectFrom('discount_codes').select('usage_count').where('id', '=', code.id).executeTakeFirstOrThrow()).usage_count).toBe(1)
    expect(await t.app.db.selectFrom('orders').select('id').where('discount_code_id', '=', code.id).execute()).toHaveLength(1)
    expect(await stockOf(t.app, product.id)).toBe(99)
  })

  it('the per-customer limit holds under concurrency: one customer’s 5 racing checkouts (two carts: the account and a guest with the same e-mail) give one', async () => {
    const code = await newCode({ perCustomerLimit: 1 })
    const product = await makeProduct(t.app, { priceCents: 1000, stock: 100 })
    const user = await makeUser(t.app)
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
    expect((await applyCode(user, code.code)).statusCode).toBe(200)
    const guests: Array<{ cartId: number; cartTokenHash: string }> = []
    for (let i = 0; i < 4; i++) {
      const token = (await t.app.inject({ method: 'POST', url: '/carts' })).json().cartToken
      const headers = { 'x-cart-token': token }
      await t.app.inject({ method: 'POST', url: '/cart/add', headers, payload: { productId: product.id, quantity: 1 } })
      await t.app.inject({ method: 'PATCH', url: '/cart', headers, payload: { email: user.email.toUpperCase() } })
      // The guest passes the check when applying (its e-mail has no use yet).
      expect((await t.app.inject({ method: 'POST', url: '/cart/discount', headers, payload: { code: code.code } })).statusCode).toBe(200)
      const { createHash } = await import('node:crypto')
      const hash = createHash('sha256').update(token).digest('hex')
      const cart = await t.app.db.selectFrom('carts').select('id').where('token_hash', '=', hash).executeTakeFirstOrThrow()
      guests.push({ cartId: cart.id, cartTokenHash: hash })
    }
    const results = await Promise.allSettled([placeOrder(t.app.services.orders, user.id), ...guests.map((guest) => placeOrder(t.app.services.orders, guest))])
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    for (const r of results) if (r.status === 'rejected') expect((r.reason as Error).message).toBe(messages.discountCodeCustomerLimit)
    expect(await t.app.db.selectFrom('orders').select('id').where('discount_code_id', '=', code.id).execute()).toHaveLength(1)
  })
})

describe.skipIf(dialect !== 'postgres')('a code deleted while its order is placed (PostgreSQL)', () => {
  it('answers the code’s 404 and changes nothing: no order, no use, no stock moved, the cart kept', async () => {
    const code = await newCode()
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: 1000, stock: 5 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
    expect((await applyCode(user, code.code)).statusCode).toBe(200)
    const ordersBefore = await countRows(t.app, 'orders')
    // Checkout has read the cart's code and taken the stock; the code, still unused, is deleted and committed on
    // another connection before the order row names it.
    const attempt = placeOrder(t.app.services.orders, user.id, {
      afterStep: async (step) => {
        if (step === 'stock-reserved') await t.app.db.deleteFrom('discount_codes').where('id', '=', code.id).execute()
      },
    })
    await expect(attempt).rejects.toMatchObject({ statusCode: 404, message: messages.discountCodeInvalid })
    expect(await countRows(t.app, 'orders')).toBe(ordersBefore)
    expect(await stockOf(t.app, product.id)).toBe(5)
    expect((await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })).json().items).toHaveLength(1)
  })
})

describe('guest checkout', () => {
  async function guestCart() {
    const token = (await t.app.inject({ method: 'POST', url: '/carts' })).json().cartToken as string
    const headers = { 'x-cart-token': token }
    return { token, headers }
  }

  it('orders the guest cart: userId null, guest true, the cart’s e-mail, an orderToken that opens the order; the cart is gone', async () => {
    await t.app.db.deleteFrom('shipping_methods').execute()
    const { headers } = await guestCart()
    const product = await makeProduct(t.app, { name: 'Vela', priceCents: 800, stock: 3 })
    await t.app.inject({ method: 'POST', url: '/cart/add', headers, payload: { productId: product.id, quantity: 2 } })
    await t.app.inject({ method: 'PATCH', url: '/cart', headers, payload: { email: 'Invitada@Example.com', shippingAddress: madrid } })
    const res = await t.app.inject({ method: 'POST', url: '/orders', headers: { ...headers, 'idempotency-key': 'guest-1' } })
    expect(res.statusCode).toBe(201)
    const order = res.json()
    expect(order).toMatchObject({ userId: null, guest: true, email: 'invitada@example.com', total: 16, status: 'pending', shippingAddress: { city: 'Madrid' } })
    expect(order.orderToken).toMatch(new RegExp(`^${order.id}\\.\\d+\\.[A-Za-z0-9_-]+$`))
    expect(await stockOf(t.app, product.id)).toBe(1)
    const read = await t.app.inject({ method: 'GET', url: `/orders/${order.id}`, headers: { 'x-order-token': order.orderToken } })
    expect(read.statusCode).toBe(200)
    expect(read.json()).toMatchObject({ id: order.id, guest: true })
    // The cart went with the order: its token now opens nothing; the key answers the same order and token.
    expect((await t.app.inject({ method: 'GET', url: '/cart', headers })).statusCode).toBe(404)
    const row = await t.app.db.selectFrom('orders').select(['user_id', 'guest', 'email']).where('id', '=', order.id).executeTakeFirstOrThrow()
    expect(row).toEqual({ user_id: null, guest: 1, email: 'invitada@example.com' })
  })

  it('the body’s e-mail wins; without one: 422 El email es obligatorio after the empty-cart check, changing nothing', async () => {
    const { headers } = await guestCart()
    const empty = await t.app.inject({ method: 'POST', url: '/orders', headers })
    expect([empty.statusCode, empty.json()]).toEqual([400, { error: messages.cartEmpty }])
    const product = await makeProduct(t.app, { priceCents: 500, stock: 3 })
    await t.app.inject({ method: 'POST', url: '/cart/add', headers, payload: { productId: product.id, quantity: 1 } })
    const ordersBefore = await countRows(t.app, 'orders')
    const missing = await t.app.inject({ method: 'POST', url: '/orders', headers })
    expect([missing.statusCode, missing.json()]).toEqual([422, { error: 'El email es obligatorio' }])
    expect(await countRows(t.app, 'orders')).toBe(ordersBefore)
    expect(await stockOf(t.app, product.id)).toBe(3)
    const placed = await t.app.inject({ method: 'POST', url: '/orders', headers, payload: { email: 'cuerpo@example.com' } })
    expect(placed.statusCode).toBe(201)
    expect(placed.json().email).toBe('cuerpo@example.com')
  })

  it('with a bearer, email is 422 property email should not exist; without a bearer or a cart token 401; an unknown token 404', async () => {
    const user = await makeUser(t.app)
    const withBearer = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user), payload: { email: 'x@example.com' } })
    expect([withBearer.statusCode, withBearer.json()]).toEqual([422, { error: 'property email should not exist' }])
    const none = await t.app.inject({ method: 'POST', url: '/orders' })
    expect([none.statusCode, none.json()]).toEqual([401, { error: messages.noUser }])
    const unknown = await t.app.inject({ method: 'POST', url: '/orders', headers: { 'x-cart-token': `ct_${'Z'.repeat(43)}` } })
    expect([unknown.statusCode, unknown.json()]).toEqual([404, { error: 'Carrito no encontrado' }])
  })
})

describe('guest checkout switched off (GUEST_CHECKOUT=false)', () => {
  const off = useTestApp({ GUEST_CHECKOUT: 'false' })

  it('POST /carts and a guest’s POST /orders answer 403 La compra como invitado está desactivada', async () => {
    const carts = await off.app.inject({ method: 'POST', url: '/carts' })
    expect([carts.statusCode, carts.json()]).toEqual([403, { error: 'La compra como invitado está desactivada' }])
    expect(await off.app.db.selectFrom('carts').select('id').where('token_hash', 'is not', null).execute()).toEqual([])
    const order = await off.app.inject({ method: 'POST', url: '/orders', headers: { 'x-cart-token': `ct_${'Z'.repeat(43)}` } })
    expect([order.statusCode, order.json()]).toEqual([403, { error: 'La compra como invitado está desactivada' }])
  })
})
