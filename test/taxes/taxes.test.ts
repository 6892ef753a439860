import { beforeEach, describe, expect, it } from 'vitest'
import { taxRatesFor } from '../../src/modules/taxes/taxes.service.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, type TestUser } from '../helpers/factories.js'

// The tax classes and rates: every route's status, body and message, and the rows afterwards; and the rates the
// totals are given for a country and region.

const shop = useTestApp()
const SEEDED = ['standard', 'reduced', 'super_reduced', 'zero']
const SEEDED_NAMES = ['General', 'Reducido', 'Superreducido', 'Tipo cero']
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UNAUTHORIZED = { error: 'Unauthorized - No user found' }
const FORBIDDEN = { error: 'Forbidden - Requires one of the following roles: admin' }

beforeEach(async () => {
  const db = shop.app.db
  await db.deleteFrom('tax_rates').execute()
  await db.deleteFrom('shipping_methods').execute()
  await db.updateTable('products').set({ tax_class: 'standard' }).execute()
  await db.updateTable('product_variants').set({ tax_class: null }).execute()
  await db.deleteFrom('tax_classes').where('code', 'not in', SEEDED).execute()
  // A test may have deleted or renamed a seeded class: back as the migration left them.
  await db.deleteFrom('tax_classes').execute()
  const now = new Date().toISOString()
  await db
    .insertInto('tax_classes')
    .values(SEEDED.map((code, i) => ({ code, name: SEEDED_NAMES[i]!, created_at: now, updated_at: now })))
    .execute()
})

function call(user: TestUser | undefined, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  return shop.app.inject({ method, url, headers: user ? bearer(user) : {}, ...(payload === undefined ? {} : { payload }) })
}

const classRows = () => shop.app.db.selectFrom('tax_classes').select(['code', 'name']).orderBy('id').execute()
const rateRows = () => shop.app.db.selectFrom('tax_rates').select(['country', 'region', 'region_key', 'tax_class', 'rate', 'name']).orderBy('id').execute()

async function createRate(payload: object) {
  const res = await call(shop.admin, 'POST', '/tax-rates', payload)
  expect(res.statusCode, res.body).toBe(201)
  return res.json()
}

describe('tax classes', () => {
  it('GET lists the seeded classes, in order (admins)', async () => {
    const res = await call(shop.admin, 'GET', '/tax-classes')
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.map((c: { code: string; name: string }) => [c.code, c.name])).toEqual([
      ['standard', 'General'],
      ['reduced', 'Reducido'],
      ['super_reduced', 'Superreducido'],
      ['zero', 'Tipo cero'],
    ])
    expect(body[0]).toEqual({
      id: expect.any(Number),
      code: 'standard',
      name: 'General',
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    })
  })

  it('every route is for admins: 401 without a token, 403 for a customer, nothing changed', async () => {
    const routes = [
      ['GET', '/tax-classes', undefined],
      ['POST', '/tax-classes', { code: 'luxury', name: 'Lujo' }],
      ['PATCH', '/tax-classes/reduced', { name: 'Otro' }],
      ['DELETE', '/tax-classes/zero', undefined],
      ['GET', '/tax-rates', undefined],
      ['POST', '/tax-rates', { country: 'ES', taxClass: 'standard', rate: 21 }],
      ['PATCH', '/tax-rates/1', { rate: 10 }],
      ['DELETE', '/tax-rates/1', undefined],
    ] as const
    for (const [method, url, payload] of routes) {
      const anonymous = await call(undefined, method, url, payload)
      expect([anonymous.statusCode, anonymous.json()], `${method} ${url}`).toEqual([401, UNAUTHORIZED])
      const customer = await call(shop.customer, method, url, payload)
      expect([customer.statusCode, customer.json()], `${method} ${url}`).toEqual([403, FORBIDDEN])
    }
    expect((await classRows()).map((c) => c.code)).toEqual(SEEDED)
    expect((await classRows())[1]!.name).toBe('Reducido')
    expect(await rateRows()).toEqual([])
  })

  it('POST adds a class (201)', async () => {
    const res = await call(shop.admin, 'POST', '/tax-classes', { code: 'luxury_2', name: 'Lujo' })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({ id: expect.any(Number), code: 'luxury_2', name: 'Lujo', createdAt: expect.stringMatching(ISO), updatedAt: body.createdAt })
    expect((await classRows()).at(-1)).toEqual({ code: 'luxury_2', name: 'Lujo' })
  })

  it('POST refuses a taken code with 409 La clase de impuesto ya existe', async () => {
    const res = await call(shop.admin, 'POST', '/tax-classes', { code: 'reduced', name: 'Otra' })
    expect([res.statusCode, res.json()]).toEqual([409, { error: 'La clase de impuesto ya existe' }])
    expect(await classRows()).toHaveLength(4)
    expect((await classRows())[1]).toEqual({ code: 'reduced', name: 'Reducido' })
  })

  it.each([
    [{ name: 'X' }, 'code should not be empty'],
    [{ code: '', name: 'X' }, 'code should not be empty'],
    [{ code: 'Lujo', name: 'X' }, 'code has an invalid format'],
    [{ code: 'a-b', name: 'X' }, 'code has an invalid format'],
    [{ code: 'a'.repeat(31), name: 'X' }, 'code must be shorter than or equal to 30 characters'],
    [{ code: 'luxury' }, 'name should not be empty'],
    [{ code: 'luxury', name: '' }, 'name should not be empty'],
  ])('POST %j → 422 %s, nothing written', async (payload, message) => {
    const res = await call(shop.admin, 'POST', '/tax-classes', payload)
    expect([res.statusCode, res.json()]).toEqual([422, { error: message }])
    expect((await classRows()).map((c) => c.code)).toEqual(SEEDED)
  })

  it('PATCH renames a class; its code never changes (a `code` sent is ignored, as any unknown field)', async () => {
    const res = await call(shop.admin, 'PATCH', '/tax-classes/reduced', { name: 'IVA reducido' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ code: 'reduced', name: 'IVA reducido', updatedAt: expect.stringMatching(ISO) })
    const ignored = await call(shop.admin, 'PATCH', '/tax-classes/reduced', { code: 'other', name: 'Reducido' })
    expect([ignored.statusCode, ignored.json().code]).toEqual([200, 'reduced'])
    const missing = await call(shop.admin, 'PATCH', '/tax-classes/reduced', { code: 'other' })
    expect([missing.statusCode, missing.json()]).toEqual([422, { error: 'name should not be empty' }])
    expect((await classRows()).map((c) => c.code)).toEqual(SEEDED)
    expect((await classRows())[1]).toEqual({ code: 'reduced', name: 'Reducido' })
  })

  it('PATCH and DELETE of an unknown class: 404 Clase de impuesto no encontrada (after validation)', async () => {
    for (const [method, payload] of [
      ['PATCH', { name: 'X' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await call(shop.admin, method, '/tax-classes/luxury', payload)
      expect([res.statusCode, res.json()]).toEqual([404, { error: 'Clase de impuesto no encontrada' }])
    }
    const invalid = await call(shop.admin, 'PATCH', '/tax-classes/luxury', { name: '' })
    expect([invalid.statusCode, invalid.json()]).toEqual([422, { error: 'name should not be empty' }])
  })

  it('DELETE removes an unused class', async () => {
    const res = await call(shop.admin, 'DELETE', '/tax-classes/zero')
    expect([res.statusCode, res.json()]).toEqual([200, { message: 'Clase de impuesto eliminada' }])
    expect((await classRows()).map((c) => c.code)).toEqual(['standard', 'reduced', 'super_reduced'])
  })

  it('DELETE refuses standard, and a class a rate, a product, a variant or a shipping method names: 409 La clase de impuesto está en uso', async () => {
    const inUse = { error: 'La clase de impuesto está en uso' }
    const refuse = async (code: string) => {
      const res = await call(shop.admin, 'DELETE', `/tax-classes/${code}`)
      expect([res.statusCode, res.json()], code).toEqual([409, inUse])
    }
    await refuse('standard')
    await createRate({ country: 'ES', taxClass: 'reduced', rate: 10 })
    await refuse('reduced')
    const product = await makeProduct(shop.app)
    await shop.app.db.updateTable('products').set({ tax_class: 'super_reduced' }).where('id', '=', product.id).execute()
    await refuse('super_reduced')
    await shop.app.db.updateTable('products').set({ tax_class: 'standard' }).execute()
    await shop.app.db.updateTable('product_variants').set({ tax_class: 'super_reduced' }).where('product_id', '=', product.id).execute()
    await refuse('super_reduced')
    expect((await call(shop.admin, 'POST', '/shipping-methods', { name: 'Envío', price: 4.9, taxClass: 'zero' })).statusCode).toBe(201)
    await refuse('zero')
    expect((await classRows()).map((c) => c.code)).toEqual(SEEDED)
  })

  it('DELETE takes no body', async () => {
    const res = await shop.app.inject({ method: 'DELETE', url: '/tax-classes/zero', headers: bearer(shop.admin), payload: { force: true } })
    expect(res.statusCode).toBe(422)
    expect((await classRows()).map((c) => c.code)).toEqual(SEEDED)
  })
})

describe('tax rates', () => {
  it('POST adds a rate (201): name IVA <rate>% by default, rate in percent with 2 decimals', async () => {
    const res = await call(shop.admin, 'POST', '/tax-rates', { country: 'ES', taxClass: 'standard', rate: 21 })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.any(Number),
      country: 'ES',
      region: null,
      taxClass: 'standard',
      rate: 21,
      name: 'IVA 21%',
      createdAt: expect.stringMatching(ISO),
      updatedAt: body.createdAt,
    })
    expect(await createRate({ country: 'FR', taxClass: 'reduced', rate: '5.50' })).toMatchObject({ rate: 5.5, name: 'IVA 5.5%' })
    expect(await createRate({ country: 'ES', region: 'Canarias', taxClass: 'standard', rate: 7, name: 'IGIC 7%' })).toMatchObject({
      region: 'Canarias',
      rate: 7,
      name: 'IGIC 7%',
    })
    expect(await createRate({ country: 'ES', taxClass: 'zero', rate: 0, name: null })).toMatchObject({ rate: 0, name: 'IVA 0%' })
    expect(await rateRows()).toEqual([
      { country: 'ES', region: null, region_key: '', tax_class: 'standard', rate: 2100, name: 'IVA 21%' },
      { country: 'FR', region: null, region_key: '', tax_class: 'reduced', rate: 550, name: 'IVA 5.5%' },
      { country: 'ES', region: 'Canarias', region_key: 'canarias', tax_class: 'standard', rate: 700, name: 'IGIC 7%' },
      { country: 'ES', region: null, region_key: '', tax_class: 'zero', rate: 0, name: 'IVA 0%' },
    ])
  })

  it('one rate per country, region (ignoring case) and class: 409 Ya existe un tipo para ese país, región y clase', async () => {
    await createRate({ country: 'ES', taxClass: 'standard', rate: 21 })
    await createRate({ country: 'ES', region: 'Canarias', taxClass: 'standard', rate: 7 })
    for (const payload of [
      { country: 'ES', taxClass: 'standard', rate: 10 },
      { country: 'ES', region: 'CANARIAS', taxClass: 'standard', rate: 3 },
    ]) {
      const res = await call(shop.admin, 'POST', '/tax-rates', payload)
      expect([res.statusCode, res.json()]).toEqual([409, { error: 'Ya existe un tipo para ese país, región y clase' }])
    }
    expect((await rateRows()).map((r) => r.rate)).toEqual([2100, 700])
  })

  it.each([
    [{ taxClass: 'standard', rate: 21 }, 'country should not be empty'],
    [{ country: 'XX', taxClass: 'standard', rate: 21 }, 'country must be a valid ISO 3166-1 alpha-2 code'],
    [{ country: 'ES', rate: 21 }, 'taxClass should not be empty'],
    [{ country: 'ES', taxClass: 'standard' }, 'rate should not be empty'],
    [{ country: 'ES', taxClass: 'standard', rate: '' }, 'rate should not be empty'],
    [{ country: 'ES', taxClass: 'standard', rate: -1 }, 'rate must not be less than 0'],
    [{ country: 'ES', taxClass: 'standard', rate: 100.01 }, 'rate must not be greater than 100'],
    [{ country: 'ES', taxClass: 'standard', rate: 21.005 }, 'rate must be a number conforming to the specified constraints'],
    [{ country: 'ES', taxClass: 'standard', rate: 'abc' }, 'rate must be a number conforming to the specified constraints'],
    [{ country: 'ES', region: '', taxClass: 'standard', rate: 21 }, 'region should not be empty'],
    [{ country: 'ES', taxClass: 'standard', rate: 21, name: '' }, 'name should not be empty'],
    [{ country: 'ES', taxClass: 'luxury', rate: 21 }, 'La clase de impuesto no existe'],
  ])('POST %j → 422 %s, nothing written', async (payload, message) => {
    const res = await call(shop.admin, 'POST', '/tax-rates', payload)
    expect([res.statusCode, res.json()]).toEqual([422, { error: message }])
    expect(await rateRows()).toEqual([])
  })

  it('100 is the highest rate, 0 the lowest', async () => {
    expect(await createRate({ country: 'ES', taxClass: 'standard', rate: 100 })).toMatchObject({ rate: 100, name: 'IVA 100%' })
    expect(await createRate({ country: 'PT', taxClass: 'standard', rate: '0.01' })).toMatchObject({ rate: 0.01, name: 'IVA 0.01%' })
  })

  it('GET lists the rates by country, class and region, filtered by ?country and ?taxClass', async () => {
    const pt = await createRate({ country: 'PT', taxClass: 'standard', rate: 23 })
    const esReduced = await createRate({ country: 'ES', taxClass: 'reduced', rate: 10 })
    const canarias = await createRate({ country: 'ES', region: 'Canarias', taxClass: 'standard', rate: 7 })
    const es = await createRate({ country: 'ES', taxClass: 'standard', rate: 21 })
    const list = async (query: string) => {
      const res = await call(shop.admin, 'GET', `/tax-rates${query}`)
      expect(res.statusCode).toBe(200)
      return res.json()
    }
    expect(await list('')).toEqual([esReduced, es, canarias, pt])
    expect(await list('?country=ES')).toEqual([esReduced, es, canarias])
    expect(await list('?taxClass=standard')).toEqual([es, canarias, pt])
    expect(await list('?country=ES&taxClass=standard')).toEqual([es, canarias])
    expect(await list('?country=FR')).toEqual([])
    const bad = await call(shop.admin, 'GET', '/tax-rates?country=XX')
    expect([bad.statusCode, bad.json()]).toEqual([422, { error: 'country must be a valid ISO 3166-1 alpha-2 code' }])
    // A parameter the list does not define is refused, as on every list.
    for (const url of ['/tax-rates?region=Canarias', '/tax-classes?code=standard']) {
      const unknown = await call(shop.admin, 'GET', url)
      expect([unknown.statusCode, unknown.json()], url).toEqual([422, { error: `property ${url.includes('region') ? 'region' : 'code'} should not exist` }])
    }
  })

  it('PATCH changes any field; a default name follows the rate, a given one stays, null sets the default back', async () => {
    const rate = await createRate({ country: 'ES', taxClass: 'standard', rate: 21 })
    const patch = async (payload: object) => {
      const res = await call(shop.admin, 'PATCH', `/tax-rates/${rate.id}`, payload)
      expect(res.statusCode, res.body).toBe(200)
      return res.json()
    }
    expect(await patch({ rate: '10' })).toEqual({ ...rate, rate: 10, name: 'IVA 10%', updatedAt: expect.stringMatching(ISO) })
    expect(await patch({ name: 'IVA general' })).toMatchObject({ rate: 10, name: 'IVA general' })
    expect(await patch({ rate: 21 })).toMatchObject({ rate: 21, name: 'IVA general' })
    expect(await patch({ name: null })).toMatchObject({ rate: 21, name: 'IVA 21%' })
    expect(await patch({ country: 'PT', region: 'Madeira', taxClass: 'reduced' })).toMatchObject({ country: 'PT', region: 'Madeira', taxClass: 'reduced' })
    expect(await patch({ region: null })).toMatchObject({ region: null })
    expect(await rateRows()).toEqual([{ country: 'PT', region: null, region_key: '', tax_class: 'reduced', rate: 2100, name: 'IVA 21%' }])
  })

  it('PATCH: 422 (the class included) before 404 Tipo de impuesto no encontrado, 409 for a taken key; nothing changed', async () => {
    const es = await createRate({ country: 'ES', taxClass: 'standard', rate: 21 })
    const pt = await createRate({ country: 'PT', taxClass: 'standard', rate: 23 })
    const cases = [
      [`/tax-rates/${es.id}`, { taxClass: 'luxury' }, 422, 'La clase de impuesto no existe'],
      ['/tax-rates/999999', { taxClass: 'luxury' }, 422, 'La clase de impuesto no existe'],
      [`/tax-rates/${es.id}`, { rate: 101 }, 422, 'rate must not be greater than 100'],
      [`/tax-rates/${es.id}`, {}, 422, 'body must contain at least one field'],
      ['/tax-rates/999999', { rate: 5 }, 404, 'Tipo de impuesto no encontrado'],
      [`/tax-rates/${pt.id}`, { country: 'ES' }, 409, 'Ya existe un tipo para ese país, región y clase'],
    ] as const
    for (const [url, payload, status, message] of cases) {
      const res = await call(shop.admin, 'PATCH', url, payload)
      expect([res.statusCode, res.json()], JSON.stringify(payload)).toEqual([status, { error: message }])
    }
    expect((await rateRows()).map((r) => [r.country, r.rate])).toEqual([
      ['ES', 2100],
      ['PT', 2300],
    ])
  })

  it('DELETE removes a rate; unknown → 404', async () => {
    const rate = await createRate({ country: 'ES', taxClass: 'standard', rate: 21 })
    const res = await call(shop.admin, 'DELETE', `/tax-rates/${rate.id}`)
    expect([res.statusCode, res.json()]).toEqual([200, { message: 'Tipo de impuesto eliminado' }])
    expect(await rateRows()).toEqual([])
    const again = await call(shop.admin, 'DELETE', `/tax-rates/${rate.id}`)
    expect([again.statusCode, again.json()]).toEqual([404, { error: 'Tipo de impuesto no encontrado' }])
    const bad = await call(shop.admin, 'DELETE', '/tax-rates/abc')
    expect([bad.statusCode, bad.json()]).toEqual([422, { error: 'id must be an integer number' }])
  })
})

describe('taxRatesFor: the rates the totals are given', () => {
  it('a region’s rate beats the country’s; a class without a rate gets null; another country’s never applies', async () => {
    await createRate({ country: 'ES', taxClass: 'standard', rate: 21 })
    await createRate({ country: 'ES', region: 'Canarias', taxClass: 'standard', rate: 7, name: 'IGIC 7%' })
    await createRate({ country: 'ES', taxClass: 'reduced', rate: 10 })
    await createRate({ country: 'PT', taxClass: 'zero', rate: 6 })
    const classes = ['standard', 'reduced', 'zero']
    const asObject = (map: Map<string, unknown>) => Object.fromEntries(map)
    expect(asObject(await taxRatesFor(shop.app.db, { country: 'ES' }, classes))).toEqual({
      standard: { taxClass: 'standard', rate: 2100, name: 'IVA 21%' },
      reduced: { taxClass: 'reduced', rate: 1000, name: 'IVA 10%' },
      zero: null,
    })
    for (const region of ['Canarias', ' canarias ']) {
      expect(asObject(await taxRatesFor(shop.app.db, { country: 'ES', region }, classes))).toEqual({
        standard: { taxClass: 'standard', rate: 700, name: 'IGIC 7%' },
        reduced: { taxClass: 'reduced', rate: 1000, name: 'IVA 10%' },
        zero: null,
      })
    }
    expect(asObject(await taxRatesFor(shop.app.db, { country: 'ES', region: 'Madrid' }, ['standard']))).toEqual({
      standard: { taxClass: 'standard', rate: 2100, name: 'IVA 21%' },
    })
    expect(asObject(await taxRatesFor(shop.app.db, { country: 'FR' }, classes))).toEqual({ standard: null, reduced: null, zero: null })
    expect((await taxRatesFor(shop.app.db, { country: 'ES' }, [])).size).toBe(0)
  })
})
