import { beforeEach, describe, expect, it } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { bearer, type TestUser } from '../helpers/factories.js'

const shop = useTestApp()
beforeEach(async () => {
  await shop.app.db.deleteFrom('shipping_methods').execute()
})

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

function call(user: TestUser | undefined, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  return shop.app.inject({ method, url, headers: user ? bearer(user) : {}, ...(payload === undefined ? {} : { payload }) })
}

async function create(payload: object) {
  const res = await call(shop.admin, 'POST', '/shipping-methods', payload)
  expect(res.statusCode).toBe(201)
  return res.json()
}

async function methodRows() {
  return shop.app.db.selectFrom('shipping_methods').selectAll().orderBy('id').execute()
}

describe('POST /shipping-methods', () => {
  it('creates a method with the defaults: every country, never free, active, tax class standard', async () => {
    const res = await call(shop.admin, 'POST', '/shipping-methods', { name: 'Standard', price: 4.9 })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.any(Number),
      name: 'Standard',
      price: 4.9,
      countries: [],
      freeOver: null,
      active: true,
      taxClass: 'standard',
      createdAt: expect.stringMatching(ISO),
      updatedAt: body.createdAt,
    })
    expect((await methodRows()).map((row) => row.tax_class)).toEqual(['standard'])
  })

  it('takes a tax class; an unknown one is 422 La clase de impuesto no existe, and nothing is written', async () => {
    const body = await create({ name: 'Reduced', price: 3, taxClass: 'reduced' })
    expect(body.taxClass).toBe('reduced')
    const res = await call(shop.admin, 'POST', '/shipping-methods', { name: 'Unknown', price: 3, taxClass: 'luxury' })
    expect([res.statusCode, res.json()]).toEqual([422, { error: messages.taxClassUnknown }])
    expect(messages.taxClassUnknown).toBe('La clase de impuesto no existe')
    expect((await methodRows()).map((row) => [row.name, row.tax_class])).toEqual([['Reduced', 'reduced']])
  })

  it('takes countries, freeOver, active, and prices as decimal strings', async () => {
    const body = await create({ name: 'Express', price: '12.50', countries: ['ES', 'PT'], freeOver: '100', active: false })
    expect(body).toMatchObject({ name: 'Express', price: 12.5, countries: ['ES', 'PT'], freeOver: 100, active: false })
    const [row] = await methodRows()
    expect(row).toMatchObject({ price_cents: 1250, free_over_cents: 10000, active: 0 })
  })

  it.each([
    [{ price: 1 }, 'name should not be empty'],
    [{ name: '', price: 1 }, 'name should not be empty'],
    [{ name: 'A' }, 'price should not be empty'],
    [{ name: 'A', price: -1 }, 'price must not be less than 0'],
    [{ name: 'A', price: 1.999 }, 'price must be a number conforming to the specified constraints'],
    [{ name: 'A', price: 'abc' }, 'price must be a number conforming to the specified constraints'],
    [{ name: 'A', price: 1, countries: ['ES', 'es'] }, messages.invalidCountry],
    [{ name: 'A', price: 1, countries: ['ZZ'] }, messages.invalidCountry],
    [{ name: 'A', price: 1, countries: 'ES' }, 'countries must be an array'],
    [{ name: 'A', price: 1, freeOver: -5 }, 'freeOver must not be less than 0'],
    [{ name: 'A', price: 1, active: 'yes' }, 'active must be a boolean value'],
  ])('refuses %j with 422 and writes nothing', async (payload, message) => {
    const res = await call(shop.admin, 'POST', '/shipping-methods', payload)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await methodRows()).toEqual([])
  })

  it('is for admins: 401 without a token, 403 for a customer (before validation), nothing written', async () => {
    expect((await call(undefined, 'POST', '/shipping-methods', { name: 'A', price: 1 })).json()).toEqual({ error: messages.noUser })
    const res = await call(shop.customer, 'POST', '/shipping-methods', { name: '', price: -1 })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    expect(await methodRows()).toEqual([])
  })
})

describe('GET /shipping-methods', () => {
  it('is public: the active methods, those shipping to ?country when given', async () => {
    const everywhere = await create({ name: 'World', price: 20 })
    const iberia = await create({ name: 'Iberia', price: 5, countries: ['ES', 'PT'] })
    await create({ name: 'Off', price: 1, active: false })
    const all = await call(undefined, 'GET', '/shipping-methods')
    expect(all.statusCode).toBe(200)
    expect(all.json()).toEqual([iberia, everywhere])
    expect((await call(undefined, 'GET', '/shipping-methods?country=PT')).json()).toEqual([iberia, everywhere])
    expect((await call(undefined, 'GET', '/shipping-methods?country=FR')).json()).toEqual([everywhere])
  })

  it.each(['es', 'ESP', 'ZZ', ''])('refuses ?country=%s with 422', async (country) => {
    const res = await call(undefined, 'GET', `/shipping-methods?country=${country}`)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: messages.invalidCountry })
  })

  it('?all=true lists inactive methods too, for admins only', async () => {
    const on = await create({ name: 'On', price: 2 })
    const off = await create({ name: 'Off', price: 1, active: false })
    expect((await call(shop.admin, 'GET', '/shipping-methods?all=true')).json()).toEqual([off, on])
    expect((await call(shop.admin, 'GET', '/shipping-methods?all=false')).json()).toEqual([on])
    const anon = await call(undefined, 'GET', '/shipping-methods?all=true')
    expect(anon.statusCode).toBe(401)
    expect(anon.json()).toEqual({ error: messages.noUser })
    const asCustomer = await call(shop.customer, 'GET', '/shipping-methods?all=true')
    expect(asCustomer.statusCode).toBe(403)
    expect(asCustomer.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
  })
})

describe('PATCH / DELETE /shipping-methods/:id', () => {
  it('changes the given fields; freeOver may be cleared with null', async () => {
    const method = await create({ name: 'Std', price: 3, freeOver: 50 })
    const res = await call(shop.admin, 'PATCH', `/shipping-methods/${method.id}`, { price: '3.5', freeOver: null, countries: ['FR'], active: false })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ...method, price: 3.5, freeOver: null, countries: ['FR'], active: false, updatedAt: expect.stringMatching(ISO) })
  })

  it('changes the tax class; an unknown class is 422 (before the 404) and changes nothing', async () => {
    const method = await create({ name: 'Std', price: 3 })
    const res = await call(shop.admin, 'PATCH', `/shipping-methods/${method.id}`, { taxClass: 'zero' })
    expect([res.statusCode, res.json().taxClass]).toEqual([200, 'zero'])
    for (const url of [`/shipping-methods/${method.id}`, '/shipping-methods/999999']) {
      const refused = await call(shop.admin, 'PATCH', url, { name: 'Renamed', taxClass: 'luxury' })
      expect([refused.statusCode, refused.json()]).toEqual([422, { error: 'La clase de impuesto no existe' }])
    }
    expect((await methodRows()).map((row) => [row.name, row.tax_class])).toEqual([['Std', 'zero']])
  })

  it('answers an unknown method with 404 Método de envío no encontrado (after validation)', async () => {
    for (const method of ['PATCH', 'DELETE'] as const) {
      const res = await call(shop.admin, method, '/shipping-methods/999999', method === 'PATCH' ? { name: 'X' } : undefined)
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({ error: 'Método de envío no encontrado' })
    }
    const invalid = await call(shop.admin, 'PATCH', '/shipping-methods/999999', { price: -1 })
    expect(invalid.statusCode).toBe(422)
    expect(invalid.json()).toEqual({ error: 'price must not be less than 0' })
  })

  it('refuses bad fields with 422 and changes nothing', async () => {
    const method = await create({ name: 'Std', price: 3 })
    for (const [payload, message] of [
      [{ countries: ['xx'] }, messages.invalidCountry],
      [{ price: 1.234 }, 'price must be a number conforming to the specified constraints'],
      [{}, 'body must contain at least one field'],
    ] as const) {
      const res = await call(shop.admin, 'PATCH', `/shipping-methods/${method.id}`, payload)
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error: message })
    }
    expect((await call(shop.admin, 'GET', '/shipping-methods?all=true')).json()).toEqual([method])
  })

  it('deletes a method (admin only)', async () => {
    const method = await create({ name: 'Std', price: 3 })
    expect((await call(shop.customer, 'DELETE', `/shipping-methods/${method.id}`)).statusCode).toBe(403)
    const res = await call(shop.admin, 'DELETE', `/shipping-methods/${method.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: 'Método de envío eliminado' })
    expect(await methodRows()).toEqual([])
  })
})
