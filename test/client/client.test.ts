import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { createShopClient, isProblem } from '@shop-api/client'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type Address, purchase } from '../../clients/typescript/examples/purchase-flow.js'
import { openApiDocument, renderTypes, schemaFile } from '../../scripts/openapi-types.js'
import { messages } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, uniqueEmail } from '../helpers/factories.js'

// The typed client for storefront developers (clients/typescript): its types are generated from /openapi.json
// and committed, and its README's example (examples/purchase-flow.ts) runs the purchase flow with it, on a shop
// without shipping methods and on one with them.

describe('the typed client', () => {
  // Every purchase registers and logs in from 127.0.0.1: more than login's 10 attempts per 15 minutes.
  const service = useTestApp({ AUTH_RATE_LIMIT_MAX: '100' })
  let base = ''

  beforeAll(async () => {
    await service.app.listen({ port: 0, host: '127.0.0.1' })
    base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`
  })
  afterAll(() => {
    vi.restoreAllMocks()
  })

  it('is generated from the document the service serves today (npm run openapi:types) (slow: openapi-typescript and prettier over the whole document)', async () => {
    const committed = readFileSync(schemaFile, 'utf8')
    const current = await renderTypes(await openApiDocument())
    // On failure: a route's schema changed without `npm run openapi:types`; run it and commit schema.d.ts.
    expect(committed === current, 'clients/typescript/schema.d.ts is out of date: run `npm run openapi:types`').toBe(true)
  })

  it('runs the README purchase flow: an order placed, the stock down, the cart empty', async () => {
    vi.spyOn(console, 'log').mockImplementation(() => {})
    const cheap = await makeProduct(service.app, { name: 'Pencil', priceCents: 150, stock: 4 })
    await makeProduct(service.app, { name: 'Sold out', priceCents: 100, stock: 0 })
    const customer = { name: 'Ana', email: uniqueEmail('client'), password: 'a-long-password-1' }

    const { product, order } = await purchase(base, customer)
    expect(product.id).toBe(cheap.id)
    expect(order).toMatchObject({ status: 'pending', total: 1.5, items: [{ productId: cheap.id, quantity: 1, price: 1.5 }] })
    const row = await service.app.db.selectFrom('products').select('stock').where('id', '=', cheap.id).executeTakeFirstOrThrow()
    expect(row.stock).toBe(3)

    // A returning customer (register answers 409: the e-mail is in use) signs in and buys again.
    const again = await purchase(base, customer)
    expect(again.order.id).not.toBe(order.id)
    const orders = await service.app.db.selectFrom('orders').select(['id', 'user_id']).where('id', 'in', [order.id, again.order.id]).execute()
    expect(orders).toHaveLength(2)
    expect(new Set(orders.map((o) => o.user_id)).size).toBe(1)
    const after = await service.app.db.selectFrom('products').select('stock').where('id', '=', cheap.id).executeTakeFirstOrThrow()
    expect(after.stock).toBe(2)
    const cart = await service.app.db.selectFrom('cart_items').selectAll().where('user_id', '=', orders[0]!.user_id).execute()
    expect(cart).toEqual([])
  })

  it('runs the purchase flow on a shop that ships: an address and a method that ships there, chosen by the flow', async () => {
    vi.spyOn(console, 'log').mockImplementation(() => {})
    const product = await makeProduct(service.app, { name: 'Ruler', priceCents: 50, stock: 3 })
    const shipping = (method: object) => service.app.inject({ method: 'POST', url: '/shipping-methods', headers: bearer(service.admin), payload: method })
    // The cheapest method first, and one that does not ship to Spain: the flow must take the one that does.
    expect((await shipping({ name: 'Islands', price: 2.5, countries: ['PT'] })).statusCode).toBe(201)
    const peninsular = (await shipping({ name: 'Peninsular', price: 4.9, countries: ['ES', 'PT'] })).json() as { id: number }
    try {
      const customer = { name: 'Ana', email: uniqueEmail('client-ships'), password: 'a-long-password-1' }
      const { order } = await purchase(base, customer)
      expect(order).toMatchObject({
        status: 'pending',
        items: [{ productId: product.id, quantity: 1, price: 0.5 }],
        subtotal: 0.5,
        shippingTotal: 4.9,
        total: 5.4,
        shippingMethod: { id: peninsular.id, name: 'Peninsular', price: 4.9 },
        shippingAddress: { fullName: 'Ana Pérez', city: 'Madrid', postalCode: '28013', country: 'ES' },
      })

      // A shop that ships, but not to the customer's country: the flow says so instead of ordering.
      const elsewhere = { name: 'Bo', email: uniqueEmail('client-ships-fr'), password: 'a-long-password-1' }
      const paris: Address = { fullName: 'Bo', line1: '1 rue de Rivoli', city: 'Paris', postalCode: '75001', country: 'FR' }
      await expect(purchase(base, elsewhere, paris)).rejects.toThrow('the shop ships, but not to FR')
    } finally {
      await service.app.db.deleteFrom('shipping_methods').execute()
    }
  })

  it("sends the token the function gives at each request, and none while it gives none, and passes on the service's errors", async () => {
    let token: string | undefined
    const shop = createShopClient({ baseUrl: base, token: () => token })
    const anonymous = await shop.GET('/cart')
    expect(anonymous.response.status).toBe(401)
    expect(anonymous.error).toEqual({
      type: '/problems/unauthorized',
      title: 'Authentication required',
      status: 401,
      detail: messages.noUser,
      code: 'unauthorized',
    })

    const email = uniqueEmail('client-token')
    expect((await shop.POST('/auth/register', { body: { name: 'Bo', email, password: 'a-long-password-2' } })).response.status).toBe(201)
    const login = await shop.POST('/auth/login', { body: { email, password: 'a-long-password-2' } })
    token = login.data?.token
    const cart = await shop.GET('/cart')
    expect(cart.response.status).toBe(200)
    expect(cart.data).toMatchObject({ items: [], total: 0 })

    const wrong = await shop.POST('/auth/login', { body: { email, password: 'not-the-password' } })
    expect(wrong.response.status).toBe(401)
    expect(wrong.data).toBeUndefined()
    expect(isProblem(wrong.error) && wrong.error.code).toBe('invalid_credentials')
  })

  it('asks for problem details: the code and the field of an error, and its Accept unless the request sets one', async () => {
    const sent: (string | null)[] = []
    const fetchAndNote = (request: Request) => {
      sent.push(request.headers.get('accept'))
      return fetch(request)
    }
    const shop = createShopClient({ baseUrl: base, fetch: fetchAndNote })
    const invalid = await shop.POST('/auth/register', { body: { name: 'Cy', email: 'not-an-email', password: 'a-long-password-3' } })
    expect(invalid.response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8')
    expect(isProblem(invalid.error)).toBe(true)
    if (!isProblem(invalid.error)) return
    expect([invalid.error.status, invalid.error.code, invalid.error.field, invalid.error.detail]).toEqual([
      422,
      'validation_failed',
      'email',
      messages.invalidEmail,
    ])

    // A request that sets its own Accept gets the plain body, which isProblem tells apart.
    const plain = await shop.GET('/products/{id}', { params: { path: { id: '999999' } }, headers: { Accept: 'application/json' } })
    expect(plain.error).toEqual({ error: messages.productNotFound })
    expect(isProblem(plain.error)).toBe(false)
    expect(sent).toEqual(['application/json, application/problem+json', 'application/json'])
  })
})
