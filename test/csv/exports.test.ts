import { request as httpRequest } from 'node:http'
import { parse } from 'csv-parse/sync'
import { beforeAll, describe, expect, it } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { makeCategory, makeProduct, makeProducts } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'
import { ORDER_COLUMNS, PRODUCT_COLUMNS } from '../../src/modules/csv/exports.js'

// The CSV exports: products (a row per variant), orders (a row per line), customers; the format of every file.

const t = useTestApp({}, { outbox: { enabled: false } })

const get = (url: string, user: TestUser | null = t.admin) => t.app.inject({ method: 'GET', url, headers: user ? bearer(user) : {} })
const records = (body: string) => parse(body, { bom: true, columns: true }) as Array<Record<string, string>>

describe('access', () => {
  it.each(['/exports/products.csv', '/exports/orders.csv', '/exports/customers.csv'])('%s: 401 without a token, 403 for a customer', async (url) => {
    expect((await get(url, null)).statusCode).toBe(401)
    const res = await get(url, t.customer)
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: messages.requiresRoles(['admin']) })
  })

  it('validates the filters: 422 in the usual wording', async () => {
    expect((await get('/exports/products.csv?status=gone')).json()).toEqual({
      error: 'status must be one of the following values: draft, active, archived, any',
    })
    expect((await get('/exports/orders.csv?from=yesterday')).statusCode).toBe(422)
    expect((await get('/exports/orders.csv?fulfillmentStatus=half')).statusCode).toBe(422)
  })
})

describe('GET /exports/products.csv', () => {
  it('RFC 4180 with a BOM, CRLF, the header row, text/csv as an attachment; formulas neutralised; amounts 19.90', async () => {
    const category = await makeCategory(t.app, 'Camisetas')
    const product = await makeProduct(t.app, {
      name: '=HYPERLINK("http://x")',
      description: 'Línea 1, "dos"\nLínea 2',
      priceCents: 1990,
      stock: 4,
      categoryId: category.id,
    })
    await t.app.db
      .updateTable('products')
      .set({ tags: JSON.stringify(['verano', '-oferta']) })
      .where('id', '=', product.id)
      .execute()
    const res = await get('/exports/products.csv')
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8')
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="products-\d{4}-\d{2}-\d{2}\.csv"$/)
    expect(res.rawPayload.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]))
    const text = res.rawPayload.subarray(3).toString('utf8')
    expect(text.startsWith(`${PRODUCT_COLUMNS.join(',')}\r\n`)).toBe(true)
    expect(text.endsWith('\r\n')).toBe(true)
    // The only bare LF is the one inside the quoted description.
    expect(text.replace(/\r\n/g, '').split('\n')).toHaveLength(2)
    const row = records(res.body).find((r) => r.product_id === String(product.id))!
    expect(row).toMatchObject({
      slug: product.slug,
      name: `'=HYPERLINK("http://x")`,
      description: 'Línea 1, "dos"\nLínea 2',
      status: 'active',
      category: category.slug,
      tags: 'verano,-oferta',
      tax_class: 'standard',
      option1_name: '',
      sku: '',
      price: '19.90',
      compare_at_price: '',
      stock: '4',
      variant_tax_class: '',
      position: '0',
    })
    expect(text).toContain('"Línea 1, ""dos""\nLínea 2"')
    expect(text).toContain(`,"'=HYPERLINK(""http://x"")",`)
  })

  it('a row per variant, option names and values in option order; ?status filters', async () => {
    const product = await makeProduct(t.app, { priceCents: 1000, stock: 1 })
    for (const [name, values, defaultValue] of [
      ['Talla', ['S', 'M'], 'S'],
      ['Color', [], 'Rojo'],
    ] as const) {
      const res = await t.app.inject({
        method: 'POST',
        url: `/products/${product.id}/options`,
        headers: bearer(t.admin),
        payload: { name, values, defaultValue },
      })
      expect(res.statusCode).toBe(201)
    }
    const created = await t.app.inject({
      method: 'POST',
      url: `/products/${product.id}/variants`,
      headers: bearer(t.admin),
      payload: { options: { Talla: 'M', Color: 'Rojo' }, price: 12.5, sku: 'TS-M', compareAtPrice: 15, stock: 2 },
    })
    expect(created.statusCode).toBe(201)
    await t.app.db.updateTable('products').set({ status: 'archived' }).where('id', '=', product.id).execute()
    const rows = records((await get('/exports/products.csv?status=archived')).body)
    expect(
      rows.map((r) => [r.product_id, r.option1_name, r.option1_value, r.option2_name, r.option2_value, r.sku, r.price, r.compare_at_price, r.position]),
    ).toEqual([
      [String(product.id), 'Talla', 'S', 'Color', 'Rojo', '', '10.00', '', '0'],
      [String(product.id), 'Talla', 'M', 'Color', 'Rojo', 'TS-M', '12.50', '15.00', '1'],
    ])
    expect(records((await get('/exports/products.csv?status=active')).body).some((r) => r.product_id === String(product.id))).toBe(false)
    expect(records((await get('/exports/products.csv')).body).filter((r) => r.product_id === String(product.id))).toHaveLength(2)
  })
})

describe('GET /exports/orders.csv and /exports/customers.csv', () => {
  let ana: TestUser
  const orderIds: number[] = []
  beforeAll(async () => {
    ana = await makeUser(t.app, 'customer', '@Ana')
    for (const quantities of [[2, 1], [1]]) {
      const lines = []
      for (const quantity of quantities) lines.push({ productId: (await makeProduct(t.app, { stock: 5, priceCents: 1250 })).id, quantity })
      await fillCart(t.app, ana.id, lines)
      const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(ana) })
      expect(res.statusCode).toBe(201)
      orderIds.push((res.json() as { id: number }).id)
    }
  })

  it('a row per line, the order’s columns on each; payment and fulfillment statuses as derived', async () => {
    // The first order: paid, one line shipped in part, 5.00 refunded.
    await t.app.db
      .insertInto('payments')
      .values({
        order_id: orderIds[0]!,
        provider: 'manual',
        status: 'paid',
        amount_cents: 3750,
        currency: 'EUR',
        intent_id: null,
        mismatch: null,
        refund_pending_at: null,
        refund_pending_cents: null,
        received_cents: 3750,
        refunded_cents: 500,
        created_at: '2026-01-01T00:00:00.000Z',
        updated_at: '2026-01-01T00:00:00.000Z',
      })
      .execute()
    const lineIds = (await t.app.db.selectFrom('order_items').select('id').where('order_id', '=', orderIds[0]!).orderBy('id').execute()).map((r) => r.id)
    await t.app.db.updateTable('order_items').set({ fulfilled_quantity: 1 }).where('id', '=', lineIds[0]!).execute()
    const res = await get('/exports/orders.csv')
    expect(res.statusCode).toBe(200)
    expect(res.body.slice(1, res.body.indexOf('\r\n'))).toBe(ORDER_COLUMNS.join(','))
    const rows = records(res.body).filter((r) => orderIds.includes(Number(r.order_id)))
    expect(rows).toHaveLength(3)
    expect(rows[0]).toMatchObject({
      order_id: String(orderIds[0]),
      status: 'pending',
      payment_status: 'partially_refunded',
      fulfillment_status: 'partial',
      email: ana.email,
      customer_id: String(ana.id),
      guest: 'false',
      currency: 'EUR',
      total: '37.50',
      refunded_amount: '5.00',
      line_id: String(lineIds[0]),
      quantity: '2',
      unit_price: '12.50',
      line_total: '25.00',
      refunded_quantity: '0',
    })
    expect(rows[2]).toMatchObject({ order_id: String(orderIds[1]), payment_status: 'unpaid', fulfillment_status: 'unfulfilled', total: '12.50' })
    const only = async (query: string) =>
      [...new Set(records((await get(`/exports/orders.csv?${query}`)).body).map((r) => Number(r.order_id)))].filter((id) => orderIds.includes(id))
    expect(await only('paymentStatus=partially_refunded')).toEqual([orderIds[0]])
    expect(await only('fulfillmentStatus=unfulfilled')).toEqual([orderIds[1]])
    expect(await only('fulfillmentStatus=partial')).toEqual([orderIds[0]])
    expect(await only('status=pending')).toEqual(orderIds)
    expect(await only('status=cancelled')).toEqual([])
    // Every line shipped or cancelled in full: fulfilled.
    await t.app.db.updateTable('order_items').set({ fulfilled_quantity: 2 }).where('id', '=', lineIds[0]!).execute()
    await t.app.db.updateTable('order_items').set({ cancelled_quantity: 1 }).where('id', '=', lineIds[1]!).execute()
    expect(await only('fulfillmentStatus=fulfilled')).toEqual([orderIds[0]])
    // `from` inclusive, `to` exclusive.
    const createdAt = (await t.app.db.selectFrom('orders').select('created_at').where('id', '=', orderIds[0]!).executeTakeFirstOrThrow()).created_at
    expect(await only(`from=${encodeURIComponent(createdAt)}`)).toContain(orderIds[0])
    expect(await only(`to=${encodeURIComponent(createdAt)}`)).not.toContain(orderIds[0])
  })

  it('customers: a row per customer, orders not cancelled counted, total net of refunds; the name neutralised', async () => {
    const rows = records((await get('/exports/customers.csv')).body)
    expect(Object.keys(rows[0]!)).toEqual(['id', 'name', 'email', 'created_at', 'orders_count', 'total_spent'])
    expect(rows.find((r) => r.id === String(ana.id))).toMatchObject({ name: "'@Ana", email: ana.email, orders_count: '2', total_spent: '45.00' })
    await t.app.db.updateTable('orders').set({ status: 'cancelled' }).where('id', '=', orderIds[1]!).execute()
    expect(records((await get('/exports/customers.csv')).body).find((r) => r.id === String(ana.id))).toMatchObject({ orders_count: '1', total_spent: '32.50' })
    expect(rows.some((r) => r.id === String(t.admin.id))).toBe(false)
  })
})

describe('streaming', () => {
  it('a failure after the first byte cuts the connection: the client never sees a complete file', async () => {
    const made = await makeProducts(
      t.app,
      Array.from({ length: 700 }, () => ({})),
    )
    // The last product's stored tags are broken: its page fails after the first page was sent.
    await t.app.db
      .updateTable('products')
      .set({ tags: 'not json' })
      .where('id', '=', made[made.length - 1]!.id)
      .execute()
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = new URL(address)
    const outcome = await new Promise<{ status: number; bytes: number; error: string | null }>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/exports/products.csv', headers: bearer(t.admin) }, (res) => {
        let bytes = 0
        res.on('data', (chunk: Buffer) => (bytes += chunk.length))
        res.on('error', (error) => resolve({ status: res.statusCode ?? 0, bytes, error: error.message }))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, error: null }))
      })
      req.on('error', (error) => resolve({ status: 0, bytes: 0, error: error.message }))
      req.end()
    })
    expect(outcome.status).toBe(200)
    expect(outcome.bytes).toBeGreaterThan(0)
    expect(outcome.error).toBe('aborted')
    await t.app.db
      .updateTable('products')
      .set({ tags: '[]' })
      .where('id', '=', made[made.length - 1]!.id)
      .execute()
  })

  it('a failure in the first page, before any byte: the ordinary 500 answer', async () => {
    const first = await t.app.db.selectFrom('products').select(['id', 'tags']).orderBy('id').executeTakeFirstOrThrow()
    await t.app.db.updateTable('products').set({ tags: 'not json' }).where('id', '=', first.id).execute()
    const res = await get('/exports/products.csv')
    expect(res.statusCode).toBe(500)
    expect(res.json()).toEqual({ error: messages.internal })
    await t.app.db.updateTable('products').set({ tags: first.tags }).where('id', '=', first.id).execute()
  })
})
