import { describe, expect, it } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { type UsedTestApp, useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'

// The cart view's breakdown (taxes, the code, shipping) and the code's routes: the worked example of the
// documentation, with prices that include tax (the default) and that exclude it.

const madrid = { fullName: 'Ana Pérez', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' }

/** ES 21 % standard and 10 % reduced; 2 × 19.99 standard + 5.00 reduced; code 10 %; shipping 4.90 standard. */
async function workedExample(t: UsedTestApp, code = `DIEZ${Math.random().toString(36).slice(2, 8).toUpperCase()}`) {
  const admin = (method: 'POST' | 'DELETE' | 'PATCH', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: bearer(t.admin), ...(payload ? { payload } : {}) })
  await t.app.db.deleteFrom('tax_rates').execute()
  await t.app.db.deleteFrom('shipping_methods').execute()
  expect((await admin('POST', '/tax-rates', { country: 'ES', taxClass: 'standard', rate: 21 })).statusCode).toBe(201)
  expect((await admin('POST', '/tax-rates', { country: 'ES', taxClass: 'reduced', rate: 10 })).statusCode).toBe(201)
  const method = await admin('POST', '/shipping-methods', { name: 'Estándar', price: 4.9 })
  expect(method.statusCode).toBe(201)
  expect((await admin('POST', '/discount-codes', { code, type: 'percent', value: 10 })).statusCode).toBe(201)
  const user = await makeUser(t.app)
  const shirt = await makeProduct(t.app, { name: 'Camiseta', priceCents: 1999, stock: 10 })
  const book = await makeProduct(t.app, { name: 'Libro', priceCents: 500, stock: 10 })
  await t.app.db.updateTable('products').set({ tax_class: 'reduced' }).where('id', '=', book.id).execute()
  await fillCart(t.app, user.id, [
    { productId: shirt.id, quantity: 2 },
    { productId: book.id, quantity: 1 },
  ])
  const cart = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: bearer(user), ...(payload ? { payload } : {}) })
  expect((await cart('PATCH', '/cart', { shippingAddress: madrid, shippingMethodId: method.json().id })).statusCode).toBe(200)
  const applied = await cart('POST', '/cart/discount', { code: code.toLowerCase() })
  expect(applied.statusCode).toBe(200)
  return { user, code, shirt, book, applied: applied.json(), cart }
}

describe('the cart view with prices that include tax (PRICES_INCLUDE_TAX=true)', () => {
  const t = useTestApp()

  it('is the worked example: D 4.50 split 4.00 / 0.50; taxes 6.24, 0.41, shipping 0.85; total 45.38; tax lines by rate', async () => {
    const { code, applied, cart } = await workedExample(t)
    const view = (await cart('GET', '/cart')).json()
    expect(view).toEqual(applied)
    expect(view).toMatchObject({
      subtotal: 44.98,
      discountTotal: 4.5,
      shippingTotal: 4.9,
      taxTotal: 7.5,
      total: 45.38,
      currency: 'EUR',
      pricesIncludeTax: true,
      taxCountry: 'ES',
      discount: { code, type: 'percent', value: 10, applicable: true, reason: null },
      taxLines: [
        { name: 'IVA 21%', taxClass: 'standard', rate: 21, base: 33.79, amount: 7.09 },
        { name: 'IVA 10%', taxClass: 'reduced', rate: 10, base: 4.09, amount: 0.41 },
      ],
    })
    expect(view.items.map((i: Record<string, number>) => [i.subtotal, i.discount, i.taxRate, i.tax, i.total])).toEqual([
      [39.98, 4, 21, 6.24, 35.98],
      [5, 0.5, 10, 0.41, 4.5],
    ])
  })

  it('a rate changed through the API shows in the next view (the rates are cached between changes)', async () => {
    const { cart } = await workedExample(t)
    expect((await cart('GET', '/cart')).json().taxTotal).toBe(7.5)
    const rate = (await t.app.db.selectFrom('tax_rates').select('id').where('tax_class', '=', 'reduced').executeTakeFirstOrThrow()).id
    const changed = await t.app.inject({ method: 'PATCH', url: `/tax-rates/${rate}`, headers: bearer(t.admin), payload: { rate: 4 } })
    expect(changed.statusCode).toBe(200)
    const view = (await cart('GET', '/cart')).json()
    expect(view.taxLines).toEqual([
      { name: 'IVA 21%', taxClass: 'standard', rate: 21, base: 33.79, amount: 7.09 },
      { name: 'IVA 4%', taxClass: 'reduced', rate: 4, base: 4.33, amount: 0.17 },
    ])
    const removed = await t.app.inject({ method: 'DELETE', url: `/tax-rates/${rate}`, headers: bearer(t.admin) })
    expect(removed.statusCode).toBe(200)
    expect((await cart('GET', '/cart')).json().taxLines).toHaveLength(1)
  })

  it('DELETE /cart/discount takes the code off; a code that stops applying stays, with applicable false and the reason', async () => {
    const { code, cart } = await workedExample(t)
    await t.app.db.updateTable('discount_codes').set({ active: 0 }).where('code', '=', code).execute()
    const stale = (await cart('GET', '/cart')).json()
    expect(stale.discount).toEqual({ code, type: 'percent', value: 10, applicable: false, reason: messages.discountCodeInvalid })
    expect(stale).toMatchObject({ discountTotal: 0, subtotal: 44.98, total: 49.88 })
    const removed = await cart('DELETE', '/cart/discount')
    expect(removed.statusCode).toBe(200)
    expect(removed.json()).toMatchObject({ discount: null, discountTotal: 0, total: 49.88 })
  })

  it('POST /cart/discount answers the first failed rule and keeps the cart’s code as it was', async () => {
    const { code, cart } = await workedExample(t)
    const admin = (payload: object) => t.app.inject({ method: 'POST', url: '/discount-codes', headers: bearer(t.admin), payload })
    const future = `LUEGO${Date.now()}`
    await admin({ code: future, type: 'fixed', value: 5, startsAt: '2099-01-01T00:00:00Z' })
    const minimum = `MINIMO${Date.now()}`
    await admin({ code: minimum, type: 'fixed', value: 5, minSubtotal: 50 })
    for (const [body, status, message] of [
      [{ code: 'NOEXISTE' }, 404, 'Código de descuento no válido'],
      [{ code: future }, 409, 'El código de descuento aún no es válido'],
      [{ code: minimum }, 409, 'El pedido mínimo para este código es 50.00 EUR'],
      [{}, 422, 'code should not be empty'],
    ] as const) {
      const res = await cart('POST', '/cart/discount', body)
      expect([res.statusCode, res.json()]).toEqual([status, { error: message }])
    }
    expect((await cart('GET', '/cart')).json().discount).toMatchObject({ code, applicable: true })
  })

  it('POST /cart/discount finds the code in any case, with lines or none (on PostgreSQL read with the lines, or alone)', async () => {
    const { code, cart } = await workedExample(t)
    expect((await cart('DELETE', '/cart/discount')).statusCode).toBe(200)
    expect((await cart('POST', '/cart/discount', { code: code.toLowerCase() })).json()).toMatchObject({
      discount: { code, applicable: true },
      discountTotal: 4.5,
    })
    const empty = await makeUser(t.app)
    const apply = (text: string) => t.app.inject({ method: 'POST', url: '/cart/discount', headers: bearer(empty), payload: { code: text } })
    for (const [text, status, message] of [
      ['NOEXISTE', 404, messages.discountCodeInvalid],
      [code.toLowerCase(), 409, messages.discountCodeNotApplicable],
    ] as const) {
      const res = await apply(text)
      expect([res.statusCode, res.json()]).toEqual([status, { error: message }])
    }
    expect((await t.app.db.selectFrom('carts').select('discount_code').where('user_id', '=', empty.id).executeTakeFirst())?.discount_code ?? null).toBeNull()
  })

  it('a guest cart takes a code too; a new code replaces the old one', async () => {
    const { code } = await workedExample(t)
    const token = (await t.app.inject({ method: 'POST', url: '/carts' })).json().cartToken
    const product = await makeProduct(t.app, { priceCents: 1000, stock: 5 })
    const guest = (method: 'POST' | 'GET', url: string, payload?: object) =>
      t.app.inject({ method, url, headers: { 'x-cart-token': token }, ...(payload ? { payload } : {}) })
    await guest('POST', '/cart/add', { productId: product.id, quantity: 1 })
    expect((await guest('POST', '/cart/discount', { code })).json()).toMatchObject({ discountTotal: 1, discount: { code } })
    const other = `OTRO${Date.now()}`
    await t.app.inject({ method: 'POST', url: '/discount-codes', headers: bearer(t.admin), payload: { code: other, type: 'fixed', value: 3 } })
    expect((await guest('POST', '/cart/discount', { code: other })).json()).toMatchObject({ discountTotal: 3, discount: { code: other, type: 'fixed' } })
  })
})

describe('the cart view with prices that exclude tax (PRICES_INCLUDE_TAX=false)', () => {
  const t = useTestApp({ PRICES_INCLUDE_TAX: 'false' })

  it('is the worked example: taxes 7.56, 0.45, shipping 1.03; total 54.42', async () => {
    const { cart } = await workedExample(t)
    const view = (await cart('GET', '/cart')).json()
    expect(view).toMatchObject({ pricesIncludeTax: false, subtotal: 44.98, discountTotal: 4.5, shippingTotal: 4.9, taxTotal: 9.04, total: 54.42 })
    expect(view.items.map((i: Record<string, number>) => [i.tax, i.total])).toEqual([
      [7.56, 43.54],
      [0.45, 4.95],
    ])
  })
})

describe('the tax country', () => {
  const t = useTestApp({ SHOP_COUNTRY: 'PT' })

  it('is SHOP_COUNTRY without an address, the address’s country with one; no rate there: no tax', async () => {
    const user: TestUser = await makeUser(t.app)
    await t.app.db.deleteFrom('tax_rates').execute()
    await t.app.inject({ method: 'POST', url: '/tax-rates', headers: bearer(t.admin), payload: { country: 'PT', taxClass: 'standard', rate: 23 } })
    const product = await makeProduct(t.app, { priceCents: 1230, stock: 5 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
    const before = (await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })).json()
    expect(before).toMatchObject({ taxCountry: 'PT', taxTotal: 2.3, total: 12.3, taxLines: [{ name: 'IVA 23%', rate: 23, base: 10, amount: 2.3 }] })
    const after = await t.app.inject({ method: 'PATCH', url: '/cart', headers: bearer(user), payload: { shippingAddress: madrid } })
    expect(after.json()).toMatchObject({ taxCountry: 'ES', taxTotal: 0, total: 12.3, taxLines: [] })
  })
})
