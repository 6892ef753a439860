import { describe, expect, it } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct, onlyVariantOf, setVariantStockAndPrice } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { cartOf, deleteProduct, fillCart, stockOf } from '../helpers/shop.js'

const t = useTestApp()

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** A cart with nothing in it and no choice made: every breakdown field zero or null. */
const emptyCart = {
  items: [],
  subtotal: 0,
  discountTotal: 0,
  shippingTotal: 0,
  taxTotal: 0,
  total: 0,
  currency: 'EUR',
  pricesIncludeTax: true,
  taxCountry: 'ES',
  email: null,
  shippingAddress: null,
  shippingMethod: null,
  note: null,
  discount: null,
  taxLines: [],
}

/** A line of the cart view, for a product of one variant without tax, code or shipping. */
function viewLine(line: { subtotal: number } & Record<string, unknown>) {
  return { variantTitle: null, sku: null, options: [], available: true, discount: 0, taxRate: 0, tax: 0, total: line.subtotal, ...line }
}

async function add(user: TestUser, body: unknown) {
  return t.app.inject({ method: 'POST', url: '/cart/add', headers: bearer(user), payload: body as object })
}

describe('GET /cart', () => {
  it('answers an empty cart for a user who never used one', async () => {
    const user = await makeUser(t.app)
    const res = await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual(emptyCart)
  })

  it('shows each line with its product and subtotal, and the total, exact to the cent', async () => {
    const user = await makeUser(t.app)
    const cheap = await makeProduct(t.app, { name: 'Clip', priceCents: 10, stock: 100 })
    const pricey = await makeProduct(t.app, { name: 'Lamp', priceCents: 1999, stock: 100 })
    const odd = await makeProduct(t.app, { name: 'Cup', priceCents: 20, stock: 100 })
    await fillCart(t.app, user.id, [
      { productId: cheap.id, quantity: 3 },
      { productId: pricey.id, quantity: 3 },
      { productId: odd.id, quantity: 1 },
    ])
    const res = await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.items).toHaveLength(3)
    expect(body.items[0]).toEqual(
      viewLine({
        id: expect.any(Number),
        productId: cheap.id,
        variantId: expect.any(Number),
        quantity: 3,
        subtotal: 0.3,
        product: { id: cheap.id, name: 'Clip', price: 0.1, imageUrl: expect.stringMatching(/^http:\/\//) },
      }),
    )
    expect(body.items[1].subtotal).toBe(59.97)
    expect(body.items[2].subtotal).toBe(0.2)
    // 0.30 + 59.97 + 0.20, without float drift
    expect(body.total).toBe(60.47)
    expect(res.body).toContain('"total":60.47')
  })

  it('shows product.price and subtotal at the product’s current price after the price changed', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { name: 'Kettle', priceCents: 1000, stock: 10 })
    const q = await makeProduct(t.app, { name: 'Mat', priceCents: 300, stock: 10 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 3 }])
    await fillCart(t.app, user.id, [{ productId: q.id, quantity: 1 }])
    const before = await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })
    expect(before.json().items[0]).toMatchObject({ productId: p.id, subtotal: 30, product: { price: 10 } })
    expect(before.json().total).toBe(33)
    // An admin changes the price after the line was added.
    await setVariantStockAndPrice(t.app, p.id, { priceCents: 1255 })
    const res = await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      ...emptyCart,
      items: [
        viewLine({
          id: expect.any(Number),
          productId: p.id,
          variantId: expect.any(Number),
          quantity: 3,
          subtotal: 37.65,
          product: { id: p.id, name: 'Kettle', price: 12.55, imageUrl: expect.stringMatching(/^http:\/\//) },
        }),
        viewLine({
          id: expect.any(Number),
          productId: q.id,
          variantId: expect.any(Number),
          quantity: 1,
          subtotal: 3,
          product: { id: q.id, name: 'Mat', price: 3, imageUrl: expect.stringMatching(/^http:\/\//) },
        }),
      ],
      subtotal: 40.65,
      total: 40.65,
    })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 3, [q.id]: 1 })
  })

  it('never shows another user’s lines', async () => {
    const [a, b] = [await makeUser(t.app), await makeUser(t.app)]
    const p = await makeProduct(t.app)
    await fillCart(t.app, a.id, [{ productId: p.id, quantity: 2 }])
    const res = await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(b) })
    expect(res.json()).toEqual(emptyCart)
  })

  it('drops the line of a product that was deleted', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app)
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    await deleteProduct(t.app, p.id)
    const res = await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })
    expect(res.json()).toEqual(emptyCart)
  })

  it('requires a token', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/cart' })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: messages.noUser })
  })
})

describe('POST /cart/add', () => {
  it('makes a new line with 201', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 5 })
    const res = await add(user, { productId: p.id, quantity: 2 })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toEqual({
      id: expect.any(Number),
      cartId: expect.any(Number),
      userId: user.id,
      productId: p.id,
      variantId: await onlyVariantOf(t.app, p.id),
      sku: null,
      variantTitle: null,
      options: [],
      quantity: 2,
      createdAt: expect.stringMatching(ISO),
    })
    const cart = await t.app.db.selectFrom('carts').select(['id', 'user_id']).where('id', '=', res.json().cartId).executeTakeFirstOrThrow()
    expect(cart.user_id).toBe(user.id)
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 2 })
    expect(await stockOf(t.app, p.id)).toBe(5)
  })

  it('combines quantities for a product already in the cart, with 200 and the same line', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 5 })
    const first = await add(user, { productId: p.id, quantity: 2 })
    const second = await add(user, { productId: p.id, quantity: 3 })
    expect(second.statusCode).toBe(200)
    expect(second.json()).toEqual({ ...first.json(), quantity: 5 })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 5 })
  })

  it('refuses a new line over the stock with 409 Stock insuficiente', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 2 })
    const res = await add(user, { productId: p.id, quantity: 3 })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'Stock insuficiente' })
    expect(await cartOf(t.app, user.id)).toEqual({})
  })

  it('refuses a product without stock', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 0 })
    const res = await add(user, { productId: p.id, quantity: 1 })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'Stock insuficiente' })
  })

  it('refuses to combine past the stock and keeps the line as it was', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 5 })
    await add(user, { productId: p.id, quantity: 4 })
    const res = await add(user, { productId: p.id, quantity: 2 })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'Stock insuficiente' })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 4 })
    const exact = await add(user, { productId: p.id, quantity: 1 })
    expect(exact.statusCode).toBe(200)
    expect(exact.json().quantity).toBe(5)
  })

  it('answers 404 Producto no encontrado for an unknown product', async () => {
    const user = await makeUser(t.app)
    const res = await add(user, { productId: 999999, quantity: 1 })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Producto no encontrado' })
    expect(await cartOf(t.app, user.id)).toEqual({})
  })

  it.each([
    [{ quantity: 1 }, 'variantId should not be empty'],
    [{ productId: 1 }, 'quantity should not be empty'],
    [{ productId: '1', quantity: 1 }, 'productId must be an integer number'],
    [{ productId: 1.5, quantity: 1 }, 'productId must be an integer number'],
    [{ productId: null, quantity: 1 }, 'productId must be an integer number'],
    [{ productId: 0, quantity: 1 }, 'productId must not be less than 1'],
    [{ productId: 1, quantity: '2' }, 'quantity must be an integer number'],
    [{ productId: 1, quantity: 2.5 }, 'quantity must be an integer number'],
    [{ productId: 1, quantity: 0 }, 'quantity must not be less than 1'],
    [{ productId: 1, quantity: -3 }, 'quantity must not be less than 1'],
    [{ productId: 1, quantity: 2147483648 }, 'quantity must not be greater than 2147483647'],
    [[1, 2], 'body must be an object'],
  ])('refuses %j with 422 %s and changes nothing', async (body, message) => {
    const user = await makeUser(t.app)
    await makeProduct(t.app)
    const res = await add(user, body)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await cartOf(t.app, user.id)).toEqual({})
  })

  it('refuses a productId over 2147483647 with 422 and changes nothing', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 5 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const res = await add(user, { productId: 2147483648, quantity: 1 })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'productId must not be greater than 2147483647' })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 1 })
    expect(await stockOf(t.app, p.id)).toBe(5)
  })

  it('refuses malformed JSON with 400 and changes nothing', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 5 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const res = await t.app.inject({
      method: 'POST',
      url: '/cart/add',
      headers: { ...bearer(user), 'content-type': 'application/json' },
      payload: `{"productId": ${p.id}, "quantity": 2,`,
    })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ error: messages.malformedJson })
    expect(res.json()).toEqual({ error: 'El cuerpo de la petición no es JSON válido' })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 1 })
    expect(await stockOf(t.app, p.id)).toBe(5)
  })

  it('refuses a missing body with 422', async () => {
    const user = await makeUser(t.app)
    const res = await t.app.inject({ method: 'POST', url: '/cart/add', headers: bearer(user) })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'body must be an object' })
  })

  it('checks the token before the body', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/cart/add', payload: { productId: 'x' } })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: messages.noUser })
  })

  it('20 concurrent adds of one product end as one line with the summed quantity', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 1000 })
    const quantities = Array.from({ length: 20 }, (_, i) => i + 1)
    const results = await Promise.all(quantities.map((quantity) => add(user, { productId: p.id, quantity })))
    expect(results.every((r) => r.statusCode === 200 || r.statusCode === 201)).toBe(true)
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(1)
    const ids = new Set(results.map((r) => r.json().id))
    expect(ids.size).toBe(1)
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 210 })
  })

  it('concurrent adds never push a line over the stock', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 10 })
    const results = await Promise.all(Array.from({ length: 20 }, () => add(user, { productId: p.id, quantity: 1 })))
    expect(results.filter((r) => r.statusCode === 409)).toHaveLength(10)
    expect(results.filter((r) => r.statusCode === 409).every((r) => r.json().error === 'Stock insuficiente')).toBe(true)
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 10 })
  })
})

describe('PUT /cart/item/:id', () => {
  async function lineFor(user: TestUser, stock = 5, quantity = 1) {
    const p = await makeProduct(t.app, { stock })
    const res = await add(user, { productId: p.id, quantity })
    return { product: p, line: res.json() as { id: number; variantId: number; createdAt: string } }
  }

  it('changes the quantity and answers the cart item', async () => {
    const user = await makeUser(t.app)
    const { product, line } = await lineFor(user)
    const res = await t.app.inject({ method: 'PUT', url: `/cart/item/${line.id}`, headers: bearer(user), payload: { quantity: 5 } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ...line, quantity: 5 })
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 5 })
  })

  it('may lower the quantity', async () => {
    const user = await makeUser(t.app)
    const { product, line } = await lineFor(user, 5, 4)
    const res = await t.app.inject({ method: 'PUT', url: `/cart/item/${line.id}`, headers: bearer(user), payload: { quantity: 1 } })
    expect(res.statusCode).toBe(200)
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 1 })
  })

  it('refuses a quantity over the stock with 409 and keeps the line', async () => {
    const user = await makeUser(t.app)
    const { product, line } = await lineFor(user, 5, 2)
    const res = await t.app.inject({ method: 'PUT', url: `/cart/item/${line.id}`, headers: bearer(user), payload: { quantity: 6 } })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'Stock insuficiente' })
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 2 })
  })

  it('answers another user’s line as missing and leaves it alone', async () => {
    const [owner, other] = [await makeUser(t.app), await makeUser(t.app)]
    const { product, line } = await lineFor(owner, 5, 2)
    const res = await t.app.inject({ method: 'PUT', url: `/cart/item/${line.id}`, headers: bearer(other), payload: { quantity: 3 } })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Item del carrito no encontrado' })
    expect(await cartOf(t.app, owner.id)).toEqual({ [product.id]: 2 })
  })

  it('answers an unknown line with 404', async () => {
    const user = await makeUser(t.app)
    const res = await t.app.inject({ method: 'PUT', url: '/cart/item/999999', headers: bearer(user), payload: { quantity: 1 } })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Item del carrito no encontrado' })
  })

  it.each([
    [{}, 'quantity should not be empty'],
    [{ quantity: 0 }, 'quantity must not be less than 1'],
    [{ quantity: -1 }, 'quantity must not be less than 1'],
    [{ quantity: '3' }, 'quantity must be an integer number'],
    [{ quantity: 1.5 }, 'quantity must be an integer number'],
  ])('refuses %j with 422 %s', async (body, message) => {
    const user = await makeUser(t.app)
    const { product, line } = await lineFor(user, 5, 2)
    const res = await t.app.inject({ method: 'PUT', url: `/cart/item/${line.id}`, headers: bearer(user), payload: body })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 2 })
  })

  it('validates before looking the line up (422 before 404)', async () => {
    const user = await makeUser(t.app)
    const res = await t.app.inject({ method: 'PUT', url: '/cart/item/999999', headers: bearer(user), payload: { quantity: 0 } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'quantity must not be less than 1' })
    expect(await cartOf(t.app, user.id)).toEqual({})
  })

  it('validates before looking up another user’s line too (422 before 404), and leaves it alone', async () => {
    const [owner, other] = [await makeUser(t.app), await makeUser(t.app)]
    const { product, line } = await lineFor(owner, 5, 2)
    const res = await t.app.inject({ method: 'PUT', url: `/cart/item/${line.id}`, headers: bearer(other), payload: { quantity: 0 } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'quantity must not be less than 1' })
    expect(await cartOf(t.app, owner.id)).toEqual({ [product.id]: 2 })
    expect(await cartOf(t.app, other.id)).toEqual({})
  })

  it('refuses a quantity over 2147483647 with 422 and keeps the line and the stock', async () => {
    const user = await makeUser(t.app)
    const { product, line } = await lineFor(user, 5, 2)
    const res = await t.app.inject({ method: 'PUT', url: `/cart/item/${line.id}`, headers: bearer(user), payload: { quantity: 2147483648 } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'quantity must not be greater than 2147483647' })
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 2 })
    expect(await stockOf(t.app, product.id)).toBe(5)
  })

  it('refuses a non-integer id with 422', async () => {
    const user = await makeUser(t.app)
    const res = await t.app.inject({ method: 'PUT', url: '/cart/item/abc', headers: bearer(user), payload: { quantity: 1 } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'id must be an integer number' })
  })
})

describe('DELETE /cart/item/:id', () => {
  it('removes the caller’s line', async () => {
    const user = await makeUser(t.app)
    const [p, q] = [await makeProduct(t.app), await makeProduct(t.app)]
    const line = (await add(user, { productId: p.id, quantity: 1 })).json()
    await add(user, { productId: q.id, quantity: 2 })
    const res = await t.app.inject({ method: 'DELETE', url: `/cart/item/${line.id}`, headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: messages.cartItemRemoved })
    expect(await cartOf(t.app, user.id)).toEqual({ [q.id]: 2 })
    const again = await t.app.inject({ method: 'DELETE', url: `/cart/item/${line.id}`, headers: bearer(user) })
    expect(again.statusCode).toBe(404)
    expect(again.json()).toEqual({ error: 'Item del carrito no encontrado' })
  })

  it('answers another user’s line as missing and keeps it', async () => {
    const [owner, other] = [await makeUser(t.app), await makeUser(t.app)]
    const p = await makeProduct(t.app)
    const line = (await add(owner, { productId: p.id, quantity: 1 })).json()
    const res = await t.app.inject({ method: 'DELETE', url: `/cart/item/${line.id}`, headers: bearer(other) })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Item del carrito no encontrado' })
    expect(await cartOf(t.app, owner.id)).toEqual({ [p.id]: 1 })
  })

  it.each([
    ['abc', 'id must be an integer number'],
    ['1.5', 'id must be an integer number'],
    ['2147483648', 'id must not be greater than 2147483647'],
  ])('refuses the id %s with 422 %s and removes nothing', async (id, message) => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app)
    await add(user, { productId: p.id, quantity: 1 })
    const res = await t.app.inject({ method: 'DELETE', url: `/cart/item/${id}`, headers: bearer(user) })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 1 })
  })

  it('refuses a body with 422 and keeps the line', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app)
    const line = (await add(user, { productId: p.id, quantity: 1 })).json()
    const res = await t.app.inject({ method: 'DELETE', url: `/cart/item/${line.id}`, headers: bearer(user), payload: { quantity: 1 } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'property quantity should not exist' })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 1 })
  })
})

describe('DELETE /cart/clear', () => {
  it('empties only the caller’s cart', async () => {
    const [user, other] = [await makeUser(t.app), await makeUser(t.app)]
    const [p, q] = [await makeProduct(t.app), await makeProduct(t.app)]
    await fillCart(t.app, user.id, [
      { productId: p.id, quantity: 1 },
      { productId: q.id, quantity: 2 },
    ])
    await fillCart(t.app, other.id, [{ productId: p.id, quantity: 3 }])
    const res = await t.app.inject({ method: 'DELETE', url: '/cart/clear', headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: messages.cartCleared })
    expect(await cartOf(t.app, user.id)).toEqual({})
    expect(await cartOf(t.app, other.id)).toEqual({ [p.id]: 3 })
    expect(await stockOf(t.app, p.id)).toBe(p.stock)
  })

  it('is fine on an empty cart', async () => {
    const user = await makeUser(t.app)
    const res = await t.app.inject({ method: 'DELETE', url: '/cart/clear', headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: messages.cartCleared })
  })

  it('accepts an empty JSON object but refuses any other body', async () => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app)
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 1 }])
    const bad = await t.app.inject({ method: 'DELETE', url: '/cart/clear', headers: { ...bearer(user), 'content-type': 'application/json' }, payload: '"all"' })
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'body should be empty' })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 1 })
    const ok = await t.app.inject({ method: 'DELETE', url: '/cart/clear', headers: bearer(user), payload: {} })
    expect(ok.statusCode).toBe(200)
    expect(await cartOf(t.app, user.id)).toEqual({})
  })

  it.each([
    [{ all: true }, 'property all should not exist'],
    [{ productId: 1, quantity: 1 }, 'property productId should not exist'],
  ])('refuses the body %j with 422 %s and keeps the cart', async (body, message) => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app)
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 2 }])
    const res = await t.app.inject({ method: 'DELETE', url: '/cart/clear', headers: bearer(user), payload: body })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 2 })
  })

  it.each([
    ['JSON null', 'null'],
    ['an empty JSON body', ''],
  ])('accepts %s as no body and empties the cart', async (_label, payload) => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app)
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 2 }])
    const res = await t.app.inject({ method: 'DELETE', url: '/cart/clear', headers: { ...bearer(user), 'content-type': 'application/json' }, payload })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: messages.cartCleared })
    expect(await cartOf(t.app, user.id)).toEqual({})
    expect(await stockOf(t.app, p.id)).toBe(p.stock)
  })

  it('requires a token', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/cart/clear' })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: messages.noUser })
  })
})

describe('authentication on every cart route', () => {
  /** A well-formed JWT with a signature that is not the service's. */
  function forged(user: TestUser): string {
    const [header, payload] = user.token.split('.')
    return `${header}.${payload}.${'A'.repeat(43)}`
  }

  const routes = [
    { method: 'GET', path: () => '/cart' },
    { method: 'POST', path: () => '/cart/add', payload: (productId: number) => ({ productId, quantity: 1 }) },
    { method: 'PUT', path: (lineId: number) => `/cart/item/${lineId}`, payload: () => ({ quantity: 3 }) },
    { method: 'DELETE', path: (lineId: number) => `/cart/item/${lineId}` },
    { method: 'DELETE', path: () => '/cart/clear' },
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
  const cases = routes.flatMap((route) =>
    credentials.map((credential) => [`${route.method} ${route.path(0).replace(/0$/, ':id')}`, credential[0], route, credential] as const),
  )

  it.each(cases)('%s with %s answers 401 and changes nothing', async (_name, _label, route, [, headers, message, literal]) => {
    const user = await makeUser(t.app)
    const p = await makeProduct(t.app, { stock: 5 })
    const q = await makeProduct(t.app, { stock: 5 })
    await fillCart(t.app, user.id, [{ productId: p.id, quantity: 2 }])
    const line = await t.app.db.selectFrom('cart_items').select('id').where('user_id', '=', user.id).executeTakeFirstOrThrow()
    const res = await t.app.inject({
      method: route.method,
      url: route.path(line.id),
      headers: headers(user),
      ...('payload' in route ? { payload: route.payload(q.id) } : {}),
    })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: message })
    expect(res.json()).toEqual({ error: literal })
    expect(await cartOf(t.app, user.id)).toEqual({ [p.id]: 2 })
    expect(await stockOf(t.app, p.id)).toBe(5)
    expect(await stockOf(t.app, q.id)).toBe(5)
  })
})

describe('amounts past the maximum (9,999,999,999,999.99)', () => {
  // The highest price a product may have, with a stock that is no limit here.
  const MAX_PRICE_CENTS = 9_999_999_999
  const STOCK = 2_147_483_647

  it('keeps a line up to the maximum exact to the cent, in the line and the total', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: MAX_PRICE_CENTS, stock: STOCK })
    expect((await add(user, { productId: product.id, quantity: 99_999 })).statusCode).toBe(201)
    const res = await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(user) })
    // 99,999 × 99,999,999.99 = 9,999,899,999,000.01: written as that exact JSON number.
    expect(res.body).toContain('"subtotal":9999899999000.01')
    expect(res.body).toContain('"total":9999899999000.01')
  })

  it('refuses a new line over the maximum with 409 and writes nothing', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: MAX_PRICE_CENTS, stock: STOCK })
    const res = await add(user, { productId: product.id, quantity: 100_001 })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: messages.amountTooLarge })
    expect(res.json()).toEqual({ error: 'El importe supera el máximo permitido (9999999999999.99)' })
    expect(await cartOf(t.app, user.id)).toEqual({})
  })

  it('refuses to combine past the maximum and keeps the line; up to it is fine', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: MAX_PRICE_CENTS, stock: STOCK })
    await add(user, { productId: product.id, quantity: 99_999 })
    const over = await add(user, { productId: product.id, quantity: 2 })
    expect(over.statusCode).toBe(409)
    expect(over.json()).toEqual({ error: messages.amountTooLarge })
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 99_999 })
    const upTo = await add(user, { productId: product.id, quantity: 1 })
    expect(upTo.statusCode).toBe(200)
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 100_000 })
  })

  it('still answers Stock insuficiente when the stock is what is short', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: MAX_PRICE_CENTS, stock: 200_000 })
    const res = await add(user, { productId: product.id, quantity: 300_000 })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: messages.insufficientStock })
  })

  it('refuses to set a quantity over the maximum with PUT and keeps the line', async () => {
    const user = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: MAX_PRICE_CENTS, stock: STOCK })
    const line = (await add(user, { productId: product.id, quantity: 5 })).json() as { id: number }
    const res = await t.app.inject({ method: 'PUT', url: `/cart/item/${line.id}`, headers: bearer(user), payload: { quantity: 100_001 } })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: messages.amountTooLarge })
    expect(await cartOf(t.app, user.id)).toEqual({ [product.id]: 5 })
    const overStock = await t.app.inject({ method: 'PUT', url: `/cart/item/${line.id}`, headers: bearer(user), payload: { quantity: STOCK } })
    expect(overStock.json()).toEqual({ error: messages.amountTooLarge })
    const cheap = await makeProduct(t.app, { priceCents: 100, stock: 10 })
    const cheapLine = (await add(user, { productId: cheap.id, quantity: 1 })).json() as { id: number }
    const short = await t.app.inject({ method: 'PUT', url: `/cart/item/${cheapLine.id}`, headers: bearer(user), payload: { quantity: 11 } })
    expect(short.statusCode).toBe(409)
    expect(short.json()).toEqual({ error: messages.insufficientStock })
  })
})
