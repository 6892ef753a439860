import { beforeEach, describe, expect, it } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { release } from '../../src/modules/discounts/discounts.service.js'
import { useTestApp } from '../helpers/app.js'
import { redeemOrder } from '../helpers/discounts.js'
import { makeCategory, makeProduct } from '../helpers/catalog.js'
import { bearer, type TestUser } from '../helpers/factories.js'

const shop = useTestApp()
beforeEach(async () => {
  await shop.app.db.deleteFrom('orders').execute()
  await shop.app.db.deleteFrom('discount_codes').execute()
})

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const FORBIDDEN = 'Forbidden - Requires one of the following roles: admin'

function call(user: TestUser | undefined, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  return shop.app.inject({ method, url, headers: user ? bearer(user) : {}, ...(payload === undefined ? {} : { payload }) })
}

async function create(payload: object) {
  const res = await call(shop.admin, 'POST', '/discount-codes', payload)
  expect(res.statusCode, res.body).toBe(201)
  return res.json()
}

async function codeRows() {
  return shop.app.db.selectFrom('discount_codes').selectAll().orderBy('id').execute()
}

async function makeOrder(userId = shop.customer.id): Promise<number> {
  const now = new Date().toISOString()
  const row = await shop.app.db
    .insertInto('orders')
    .values({ user_id: userId, total_cents: 1000, status: 'pending', created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

describe('POST /discount-codes', () => {
  it('creates a percent code with the defaults: no limits, no dates, every product, active', async () => {
    const res = await call(shop.admin, 'POST', '/discount-codes', { code: 'Summer-10', type: 'percent', value: 12.5 })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.any(Number),
      code: 'Summer-10',
      type: 'percent',
      value: 12.5,
      minSubtotal: null,
      startsAt: null,
      endsAt: null,
      usageLimit: null,
      perCustomerLimit: null,
      usageCount: 0,
      productIds: [],
      categoryIds: [],
      active: true,
      createdAt: expect.stringMatching(ISO),
      updatedAt: body.createdAt,
    })
    const [row] = await codeRows()
    expect(row).toMatchObject({ code: 'Summer-10', type: 'percent', value: 1250, min_subtotal_cents: null, usage_count: 0, product_ids: '[]', active: 1 })
  })

  it('stores a fixed value in cents, every field given, times in UTC', async () => {
    const product = await makeProduct(shop.app, { name: 'Mug' })
    const category = await makeCategory(shop.app)
    const body = await create({
      code: 'FIVE_OFF',
      type: 'fixed',
      value: '5.90',
      minSubtotal: '50',
      startsAt: '2026-12-01T01:00:00+01:00',
      endsAt: '2027-01-01T00:00:00Z',
      usageLimit: 100,
      perCustomerLimit: 1,
      productIds: [product.id],
      categoryIds: [category.id],
      active: false,
    })
    expect(body).toMatchObject({
      code: 'FIVE_OFF',
      type: 'fixed',
      value: 5.9,
      minSubtotal: 50,
      startsAt: '2026-12-01T00:00:00.000Z',
      endsAt: '2027-01-01T00:00:00.000Z',
      usageLimit: 100,
      perCustomerLimit: 1,
      productIds: [product.id],
      categoryIds: [category.id],
      active: false,
    })
    const [row] = await codeRows()
    expect(row).toMatchObject({ value: 590, min_subtotal_cents: 5000, usage_limit: 100, per_customer_limit: 1, active: 0 })
  })

  it('ignores read-only fields (usageCount), as every body drops unknown ones', async () => {
    expect(await create({ code: 'READONLY', type: 'fixed', value: 1, usageCount: 3, id: 7 })).toMatchObject({ usageCount: 0, id: expect.any(Number) })
    expect((await codeRows())[0]).toMatchObject({ usage_count: 0 })
  })

  it('takes free_shipping without a value (null)', async () => {
    expect(await create({ code: 'SHIPFREE', type: 'free_shipping' })).toMatchObject({ type: 'free_shipping', value: null })
    expect(await create({ code: 'SHIPFREE2', type: 'free_shipping', value: null })).toMatchObject({ value: null })
  })

  it('refuses a code taken in any case with 409 El código de descuento ya existe', async () => {
    await create({ code: 'WELCOME', type: 'percent', value: 10 })
    const res = await call(shop.admin, 'POST', '/discount-codes', { code: 'welcome', type: 'fixed', value: 1 })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'El código de descuento ya existe' })
    expect(await codeRows()).toHaveLength(1)
  })

  it.each([
    [{ type: 'percent', value: 10 }, 'code should not be empty'],
    [{ code: 'AB', type: 'percent', value: 10 }, 'code must be longer than or equal to 3 characters'],
    [{ code: 'A'.repeat(51), type: 'percent', value: 10 }, 'code must be shorter than or equal to 50 characters'],
    [{ code: 'NO SPACE', type: 'percent', value: 10 }, 'code has an invalid format'],
    [{ code: 'ÑANDÚ', type: 'percent', value: 10 }, 'code has an invalid format'],
    [{ code: 'ABC', value: 10 }, 'type should not be empty'],
    [{ code: 'ABC', type: 'gift', value: 10 }, 'type must be one of the following values: percent, fixed, free_shipping'],
    [{ code: 'ABC', type: 'percent' }, 'value should not be empty'],
    [{ code: 'ABC', type: 'fixed', value: null }, 'value should not be empty'],
    [{ code: 'ABC', type: 'fixed', value: '' }, 'value should not be empty'],
    [{ code: 'ABC', type: 'percent', value: 0 }, 'value must not be less than 0.01'],
    [{ code: 'ABC', type: 'percent', value: 100.01 }, 'value must not be greater than 100'],
    [{ code: 'ABC', type: 'percent', value: 10.555 }, 'value must be a number conforming to the specified constraints'],
    [{ code: 'ABC', type: 'fixed', value: 0 }, 'value must be a positive number'],
    [{ code: 'ABC', type: 'fixed', value: -5 }, 'value must be a positive number'],
    [{ code: 'ABC', type: 'fixed', value: 'abc' }, 'value must be a number conforming to the specified constraints'],
    [{ code: 'ABC', type: 'fixed', value: 100000000 }, 'value must not be greater than 99999999.99'],
    [{ code: 'ABC', type: 'free_shipping', value: 5 }, 'value must be empty'],
    [{ code: 'ABC', type: 'fixed', value: 1, minSubtotal: -1 }, 'minSubtotal must not be less than 0'],
    [{ code: 'ABC', type: 'fixed', value: 1, startsAt: 'tomorrow' }, 'startsAt must be a valid ISO 8601 date string'],
    [{ code: 'ABC', type: 'fixed', value: 1, endsAt: '2026-13-01T00:00:00Z' }, 'endsAt must be a valid ISO 8601 date string'],
    [{ code: 'ABC', type: 'fixed', value: 1, startsAt: '2027-01-01T00:00:00Z', endsAt: '2027-01-01T00:00:00Z' }, 'endsAt must be after startsAt'],
    [{ code: 'ABC', type: 'fixed', value: 1, startsAt: '2027-01-02T00:00:00Z', endsAt: '2027-01-01T00:00:00Z' }, 'endsAt must be after startsAt'],
    [{ code: 'ABC', type: 'fixed', value: 1, usageLimit: 0 }, 'usageLimit must not be less than 1'],
    [{ code: 'ABC', type: 'fixed', value: 1, perCustomerLimit: 1.5 }, 'perCustomerLimit must be a valid integer or null'],
    [{ code: 'ABC', type: 'fixed', value: 1, productIds: [1, 1] }, "All productIds's elements must be unique"],
    [{ code: 'ABC', type: 'fixed', value: 1, productIds: 'all' }, 'productIds must be an array'],
    [{ code: 'ABC', type: 'fixed', value: 1, productIds: [999999] }, 'El producto no existe'],
    [{ code: 'ABC', type: 'fixed', value: 1, categoryIds: [999999] }, 'La categoría no existe'],
    [{ code: 'ABC', type: 'fixed', value: 1, active: 'yes' }, 'active must be a boolean value'],
  ])('refuses %j with 422 and writes nothing', async (payload, message) => {
    const res = await call(shop.admin, 'POST', '/discount-codes', payload)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await codeRows()).toEqual([])
  })

  it('is for admins: 401 without a token, 403 for a customer (before validation), nothing written', async () => {
    const anon = await call(undefined, 'POST', '/discount-codes', { code: 'ABC', type: 'fixed', value: 1 })
    expect(anon.statusCode).toBe(401)
    expect(anon.json()).toEqual({ error: messages.noUser })
    const res = await call(shop.customer, 'POST', '/discount-codes', { code: 'A' })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: FORBIDDEN })
    expect(await codeRows()).toEqual([])
  })
})

describe('GET /discount-codes', () => {
  it('lists codes newest first, filtered by ?q (part of the code, any case) and ?active, paged with X-Total-Count and Link', async () => {
    const a = await create({ code: 'SUMMER10', type: 'percent', value: 10 })
    const b = await create({ code: 'WINTER', type: 'fixed', value: 5, active: false })
    const c = await create({ code: 'summer-ship', type: 'free_shipping' })

    const all = await call(shop.admin, 'GET', '/discount-codes')
    expect(all.statusCode).toBe(200)
    expect(all.json()).toEqual([c, b, a])
    expect(all.headers['x-total-count']).toBe('3')
    expect(all.headers.link).toBeUndefined()

    const summer = await call(shop.admin, 'GET', '/discount-codes?q=SuMmEr')
    expect(summer.json()).toEqual([c, a])
    expect(summer.headers['x-total-count']).toBe('2')
    expect((await call(shop.admin, 'GET', '/discount-codes?active=false')).json()).toEqual([b])
    expect((await call(shop.admin, 'GET', '/discount-codes?active=true&q=summer')).json()).toEqual([c, a])
    // `_` and `%` are no wildcards.
    expect((await call(shop.admin, 'GET', '/discount-codes?q=r_s')).json()).toEqual([])
    expect((await call(shop.admin, 'GET', '/discount-codes?q=%25')).json()).toEqual([])

    const page = await call(shop.admin, 'GET', '/discount-codes?limit=1&offset=1&q=e')
    expect(page.json()).toEqual([b])
    expect(page.headers['x-total-count']).toBe('3')
    expect(page.headers.link).toBe(
      '<http://shop.test/discount-codes?limit=1&offset=2&q=e>; rel="next", <http://shop.test/discount-codes?limit=1&offset=0&q=e>; rel="prev"',
    )
  })

  it.each([
    ['limit=0', 'limit must not be less than 1'],
    ['limit=1001', 'limit must not be greater than 1000'],
    ['offset=-1', 'offset must not be less than 0'],
    ['active=maybe', 'active must be a boolean value'],
    ['sort=code', 'property sort should not exist'],
  ])('refuses ?%s with 422', async (query, message) => {
    const res = await call(shop.admin, 'GET', `/discount-codes?${query}`)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
  })

  it('is for admins', async () => {
    expect((await call(undefined, 'GET', '/discount-codes')).statusCode).toBe(401)
    const res = await call(shop.customer, 'GET', '/discount-codes')
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: FORBIDDEN })
  })
})

describe('GET /discount-codes/:id', () => {
  it('answers the code, 404 Código de descuento no encontrado for an unknown one, 422 for a bad id', async () => {
    const code = await create({ code: 'ONE', type: 'percent', value: 1 })
    const res = await call(shop.admin, 'GET', `/discount-codes/${code.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual(code)
    const missing = await call(shop.admin, 'GET', '/discount-codes/999999')
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toEqual({ error: 'Código de descuento no encontrado' })
    const bad = await call(shop.admin, 'GET', '/discount-codes/abc')
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'id must be an integer number' })
  })

  it('is for admins', async () => {
    const code = await create({ code: 'ONE', type: 'percent', value: 1 })
    expect((await call(undefined, 'GET', `/discount-codes/${code.id}`)).json()).toEqual({ error: messages.noUser })
    expect((await call(shop.customer, 'GET', `/discount-codes/${code.id}`)).json()).toEqual({ error: FORBIDDEN })
  })
})

describe('PATCH /discount-codes/:id', () => {
  it('changes the given fields; nullable ones clear with null', async () => {
    const product = await makeProduct(shop.app)
    const code = await create({ code: 'EDIT', type: 'fixed', value: 5, minSubtotal: 20, usageLimit: 3, endsAt: '2030-01-01T00:00:00Z' })
    const res = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, {
      value: '7.5',
      minSubtotal: null,
      usageLimit: null,
      perCustomerLimit: 2,
      endsAt: null,
      productIds: [product.id],
      active: false,
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      ...code,
      value: 7.5,
      minSubtotal: null,
      usageLimit: null,
      perCustomerLimit: 2,
      endsAt: null,
      productIds: [product.id],
      active: false,
      updatedAt: expect.stringMatching(ISO),
    })
    const [row] = await codeRows()
    expect(row).toMatchObject({ value: 750, min_subtotal_cents: null, usage_limit: null, per_customer_limit: 2, ends_at: null, active: 0 })
  })

  it('a new type needs its value (free_shipping drops it); the same type keeps its value', async () => {
    const code = await create({ code: 'MORPH', type: 'fixed', value: 5 })
    const noValue = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { type: 'percent' })
    expect(noValue.statusCode).toBe(422)
    expect(noValue.json()).toEqual({ error: 'value should not be empty' })
    expect((await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { type: 'fixed' })).json()).toMatchObject({ type: 'fixed', value: 5 })
    expect((await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { type: 'percent', value: 15 })).json()).toMatchObject({ type: 'percent', value: 15 })
    const tooMuch = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { value: 150 })
    expect(tooMuch.json()).toEqual({ error: 'value must not be greater than 100' })
    expect((await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { type: 'free_shipping' })).json()).toMatchObject({
      type: 'free_shipping',
      value: null,
    })
    const valued = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { value: 3 })
    expect(valued.json()).toEqual({ error: 'value must be empty' })
    expect((await codeRows())[0]).toMatchObject({ type: 'free_shipping', value: null })
  })

  it('checks endsAt against the stored startsAt, and startsAt against the stored endsAt', async () => {
    const code = await create({ code: 'DATES', type: 'fixed', value: 1, startsAt: '2027-01-01T00:00:00Z' })
    const before = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { endsAt: '2026-12-31T23:59:59Z' })
    expect(before.statusCode).toBe(422)
    expect(before.json()).toEqual({ error: 'endsAt must be after startsAt' })
    const ok = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { endsAt: '2027-02-01T00:00:00Z' })
    expect(ok.json()).toMatchObject({ startsAt: '2027-01-01T00:00:00.000Z', endsAt: '2027-02-01T00:00:00.000Z' })
    const later = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { startsAt: '2027-03-01T00:00:00Z' })
    expect(later.json()).toEqual({ error: 'endsAt must be after startsAt' })
    expect((await codeRows())[0]).toMatchObject({ starts_at: '2027-01-01T00:00:00.000Z', ends_at: '2027-02-01T00:00:00.000Z' })
  })

  it('refuses `code` with 422 property code should not exist, and an empty body', async () => {
    const code = await create({ code: 'FIXED', type: 'fixed', value: 1 })
    const res = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { code: 'OTHER' })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'property code should not exist' })
    const empty = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, {})
    expect(empty.json()).toEqual({ error: 'body must contain at least one field' })
    expect((await codeRows())[0]).toMatchObject({ code: 'FIXED', updated_at: code.updatedAt })
  })

  it('keeps ids of products and categories deleted since, but refuses new unknown ones', async () => {
    const kept = await makeProduct(shop.app)
    const gone = await makeProduct(shop.app)
    const category = await makeCategory(shop.app)
    const code = await create({ code: 'LISTS', type: 'percent', value: 10, productIds: [kept.id, gone.id], categoryIds: [category.id] })
    await shop.app.db.deleteFrom('products').where('id', '=', gone.id).execute()
    await shop.app.db.deleteFrom('categories').where('id', '=', category.id).execute()
    expect((await call(shop.admin, 'GET', `/discount-codes/${code.id}`)).json()).toMatchObject({ productIds: [kept.id, gone.id], categoryIds: [category.id] })
    // Sent back as read: accepted.
    const same = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { productIds: [kept.id, gone.id], categoryIds: [category.id], active: true })
    expect(same.statusCode).toBe(200)
    const unknown = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { productIds: [kept.id, 999999] })
    expect(unknown.statusCode).toBe(422)
    expect(unknown.json()).toEqual({ error: 'El producto no existe' })
    const unknownCategory = await call(shop.admin, 'PATCH', `/discount-codes/${code.id}`, { categoryIds: [999999] })
    expect(unknownCategory.json()).toEqual({ error: 'La categoría no existe' })
    expect((await codeRows())[0]).toMatchObject({ product_ids: JSON.stringify([kept.id, gone.id]), category_ids: JSON.stringify([category.id]) })
  })

  it('answers an unknown code with 404 after validation', async () => {
    const res = await call(shop.admin, 'PATCH', '/discount-codes/999999', { active: false })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Código de descuento no encontrado' })
    const invalid = await call(shop.admin, 'PATCH', '/discount-codes/999999', { endsAt: 'never' })
    expect(invalid.statusCode).toBe(422)
    expect(invalid.json()).toEqual({ error: 'endsAt must be a valid ISO 8601 date string' })
    const unknownProduct = await call(shop.admin, 'PATCH', '/discount-codes/999999', { productIds: [999999] })
    expect(unknownProduct.statusCode).toBe(422)
  })

  it('is for admins (401, then 403 before validation)', async () => {
    const code = await create({ code: 'MINE', type: 'fixed', value: 1 })
    expect((await call(undefined, 'PATCH', `/discount-codes/${code.id}`, { active: false })).statusCode).toBe(401)
    const res = await call(shop.customer, 'PATCH', `/discount-codes/${code.id}`, { code: 'X' })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: FORBIDDEN })
    expect((await codeRows())[0]).toMatchObject({ active: 1 })
  })
})

describe('DELETE /discount-codes/:id', () => {
  it('deletes a code never used', async () => {
    const code = await create({ code: 'GONE', type: 'fixed', value: 1 })
    const res = await call(shop.admin, 'DELETE', `/discount-codes/${code.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: 'Código de descuento eliminado' })
    expect(await codeRows()).toEqual([])
    const again = await call(shop.admin, 'DELETE', `/discount-codes/${code.id}`)
    expect(again.statusCode).toBe(404)
    expect(again.json()).toEqual({ error: 'Código de descuento no encontrado' })
  })

  it('refuses a used code with 409, keeping it and its redemption; once the order gives the use back it may go', async () => {
    const code = await create({ code: 'USED', type: 'fixed', value: 1 })
    const orderId = await makeOrder()
    await redeemOrder(shop.app.db, { codeId: code.id, orderId, userId: shop.customer.id, email: shop.customer.email, amountCents: 100 })
    const res = await call(shop.admin, 'DELETE', `/discount-codes/${code.id}`)
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'El código tiene usos: desactívalo en su lugar' })
    expect(await codeRows()).toHaveLength(1)
    expect(await shop.app.db.selectFrom('orders').select('id').where('discount_code_id', '=', code.id).execute()).toEqual([{ id: orderId }])
    await release(shop.app.db, orderId)
    expect((await call(shop.admin, 'DELETE', `/discount-codes/${code.id}`)).statusCode).toBe(200)
    expect(await codeRows()).toEqual([])
  })

  it('is for admins', async () => {
    const code = await create({ code: 'KEEP', type: 'fixed', value: 1 })
    expect((await call(undefined, 'DELETE', `/discount-codes/${code.id}`)).statusCode).toBe(401)
    const res = await call(shop.customer, 'DELETE', `/discount-codes/${code.id}`)
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: FORBIDDEN })
    expect(await codeRows()).toHaveLength(1)
  })
})

describe('GET /discount-codes/:id/redemptions', () => {
  it('lists the orders that used the code, newest first, paged', async () => {
    const code = await create({ code: 'COUNTED', type: 'percent', value: 10 })
    const other = await create({ code: 'OTHER', type: 'percent', value: 10 })
    const first = await makeOrder()
    const second = await makeOrder()
    await redeemOrder(shop.app.db, { codeId: code.id, orderId: first, userId: shop.customer.id, email: 'Ana@Example.COM', amountCents: 450 })
    await redeemOrder(shop.app.db, { codeId: code.id, orderId: second, userId: null, email: 'guest@example.com', amountCents: 1999 })
    await redeemOrder(shop.app.db, { codeId: other.id, orderId: await makeOrder(), userId: null, email: 'x@example.com', amountCents: 1 })

    const res = await call(shop.admin, 'GET', `/discount-codes/${code.id}/redemptions`)
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-total-count']).toBe('2')
    expect(res.json()).toEqual([
      { orderId: second, userId: null, email: 'guest@example.com', amount: 19.99, createdAt: expect.stringMatching(ISO) },
      { orderId: first, userId: shop.customer.id, email: 'ana@example.com', amount: 4.5, createdAt: expect.stringMatching(ISO) },
    ])
    const page = await call(shop.admin, 'GET', `/discount-codes/${code.id}/redemptions?limit=1`)
    expect(page.json()).toHaveLength(1)
    expect(page.headers.link).toBe(`<http://shop.test/discount-codes/${code.id}/redemptions?limit=1&offset=1>; rel="next"`)
    expect((await call(shop.admin, 'GET', `/discount-codes/${code.id}`)).json()).toMatchObject({ usageCount: 2 })
  })

  it('answers 404 for an unknown code, and is for admins', async () => {
    const missing = await call(shop.admin, 'GET', '/discount-codes/999999/redemptions')
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toEqual({ error: 'Código de descuento no encontrado' })
    const code = await create({ code: 'SECRET', type: 'percent', value: 10 })
    expect((await call(undefined, 'GET', `/discount-codes/${code.id}/redemptions`)).statusCode).toBe(401)
    const res = await call(shop.customer, 'GET', `/discount-codes/${code.id}/redemptions`)
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: FORBIDDEN })
  })
})
