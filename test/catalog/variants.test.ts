import { describe, expect, it } from 'vitest'
import type { Product } from '../../src/modules/catalog/products.service.js'
import { useTestApp } from '../helpers/app.js'
import { addVariants, insertOptions } from '../../src/modules/catalog/variants.service.js'
import { refreshProductAggregates } from '../../src/modules/catalog/variants.repository.js'
import { parseVariantInput } from '../../src/modules/catalog/variants.schemas.js'
import { makeProduct, productRow } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { recordEvents } from '../helpers/outbox.js'
import { fillCart } from '../helpers/shop.js'

// Variants: POST /products/:id/variants (one or a batch), PATCH and DELETE /variants/:id.

const t = useTestApp({ LOW_STOCK_THRESHOLD: '5' }, { outbox: { enabled: false } })
const events = recordEvents(t)

type Method = 'POST' | 'PATCH' | 'DELETE' | 'GET'
const send = (method: Method, url: string, payload?: unknown, user: TestUser | null = t.admin) =>
  t.app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }), headers: user ? bearer(user) : {} })
const createVariants = (productId: number, body: unknown) => send('POST', `/products/${productId}/variants`, body)
const getProduct = async (id: number) => (await send('GET', `/products/${id}`)).json() as Product

async function variantCount(productId: number): Promise<number> {
  return (await t.app.db.selectFrom('product_variants').select('id').where('product_id', '=', productId).execute()).length
}

/** A product (10.00, stock 3) with Talla {S, M} and Color {Rojo}: one variant, S / Rojo. */
async function optionedProduct(): Promise<Product> {
  const product = await makeProduct(t.app, { priceCents: 1000, stock: 3 })
  expect((await send('POST', `/products/${product.id}/options`, { name: 'Talla', values: ['S', 'M'], defaultValue: 'S' })).statusCode).toBe(201)
  const res = await send('POST', `/products/${product.id}/options`, { name: 'Color', defaultValue: 'Rojo' })
  expect(res.statusCode).toBe(201)
  events.length = 0
  return res.json() as Product
}

describe('POST /products/:id/variants', () => {
  it('one variant: 201 with the variant alone; its title in option order; the product’s price range and stock follow', async () => {
    const product = await optionedProduct()
    const res = await createVariants(product.id, {
      options: { color: 'Rojo', Talla: 'M' },
      price: '19.90',
      compareAtPrice: 25,
      stock: 7,
      sku: 'TSHIRT-M/red_1.0',
    })
    expect(res.statusCode).toBe(201)
    const variant = res.json()
    expect(Object.keys(variant).sort()).toEqual(
      [
        'id',
        'productId',
        'sku',
        'title',
        'price',
        'compareAtPrice',
        'stock',
        'optionValues',
        'imageId',
        'taxClass',
        'position',
        'createdAt',
        'updatedAt',
      ].sort(),
    )
    expect(variant).toMatchObject({
      productId: product.id,
      sku: 'TSHIRT-M/red_1.0',
      title: 'M / Rojo',
      price: 19.9,
      compareAtPrice: 25,
      stock: 7,
      imageId: null,
      taxClass: null,
      position: 1,
    })
    expect(variant.optionValues.map((v: { name: string; value: string }) => [v.name, v.value])).toEqual([
      ['Talla', 'M'],
      ['Color', 'Rojo'],
    ])
    const after = await getProduct(product.id)
    expect(after).toMatchObject({ price: 10, priceRange: { min: 10, max: 19.9 }, stock: 10, inStock: true })
    expect(events).toEqual([{ type: 'product.updated', data: after }])
  })

  it('a batch: 201 with the array; a new value joins its option', async () => {
    const product = await optionedProduct()
    const res = await createVariants(product.id, [
      { options: { Talla: 'M', Color: 'Rojo' }, price: 10 },
      { options: { Talla: 'L', Color: 'Azul' }, price: 11.5, stock: 2 },
    ])
    expect(res.statusCode).toBe(201)
    expect(res.json().map((v: { title: string }) => v.title)).toEqual(['M / Rojo', 'L / Azul'])
    const after = await getProduct(product.id)
    expect(after.options.map((o) => [o.name, o.values.map((v) => v.value)])).toEqual([
      ['Talla', ['S', 'M', 'L']],
      ['Color', ['Rojo', 'Azul']],
    ])
    expect(after.variants.map((v) => [v.title, v.position])).toEqual([
      ['S / Rojo', 0],
      ['M / Rojo', 1],
      ['L / Azul', 2],
    ])
  })

  it('422s, before existence: options naming every option, price, sku, body', async () => {
    const product = await optionedProduct()
    const cases: Array<[unknown, string]> = [
      [{ options: { Talla: 'M' }, price: 1 }, 'options must name every option of the product'],
      [{ options: { Talla: 'M', Color: 'Rojo', Material: 'Lana' }, price: 1 }, 'options must name every option of the product'],
      [{ options: { Talla: 'M', talla: 'S', Color: 'Rojo' }, price: 1 }, 'options must name every option of the product'],
      [{ price: 1 }, 'options must name every option of the product'],
      [{ options: { Talla: 'M', Color: 'Rojo' } }, 'price should not be empty'],
      [{ options: { Talla: 'M', Color: 'Rojo' }, price: -1 }, 'price must not be less than 0'],
      [{ options: { Talla: 'M', Color: 'Rojo' }, price: 1.234 }, 'price must be a number conforming to the specified constraints'],
      [
        { options: { Talla: 'M', Color: 'Rojo' }, price: 1, compareAtPrice: '1.001' },
        'compareAtPrice must be a number conforming to the specified constraints',
      ],
      [{ options: { Talla: 'M', Color: 'Rojo' }, price: 1, stock: 1.5 }, 'stock must be an integer number'],
      [{ options: { Talla: 'M', Color: 'Rojo' }, price: 1, sku: 'a b' }, "sku must be null or 1 to 64 letters, digits, '.', '_', '-' or '/'"],
      [{ options: { Talla: 'M', Color: 'Rojo' }, price: 1, sku: 'x'.repeat(65) }, "sku must be null or 1 to 64 letters, digits, '.', '_', '-' or '/'"],
      [{ options: { Talla: 'M', Color: 'x'.repeat(101) }, price: 1 }, 'each value in options must be shorter than or equal to 100 characters'],
      [[], 'body should not be empty'],
      [Array.from({ length: 101 }, () => ({ price: 1 })), 'body must contain no more than 100 elements'],
    ]
    for (const [body, error] of cases) {
      const res = await createVariants(product.id, body)
      expect({ body, status: res.statusCode, answer: res.json() }).toEqual({ body, status: 422, answer: { error } })
    }
    expect((await createVariants(999999, { price: -1 })).json()).toEqual({ error: 'price must not be less than 0' })
    expect((await createVariants(999999, { price: 1 })).json()).toEqual({ error: 'Producto no encontrado' })
    expect(await variantCount(product.id)).toBe(1)
    expect(events).toEqual([])
  })

  it('422 for an image of another product', async () => {
    const product = await optionedProduct()
    const other = await getProduct((await makeProduct(t.app)).id)
    const res = await createVariants(product.id, { options: { Talla: 'M', Color: 'Rojo' }, price: 1, imageId: other.images[0]!.id })
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 422, body: { error: 'La imagen no pertenece al producto' } })
    const own = await createVariants(product.id, { options: { Talla: 'M', Color: 'Rojo' }, price: 1, imageId: product.images[0]!.id })
    expect(own.json()).toMatchObject({ imageId: product.images[0]!.id })
  })

  it('409 for a SKU taken ignoring case (here, in another product, or twice in a batch), quoted as sent', async () => {
    const product = await optionedProduct()
    expect((await createVariants(product.id, { options: { Talla: 'M', Color: 'Rojo' }, price: 1, sku: 'ABC-1' })).statusCode).toBe(201)
    const other = await optionedProduct()
    const taken = await createVariants(other.id, { options: { Talla: 'M', Color: 'Rojo' }, price: 1, sku: 'abc-1' })
    expect({ status: taken.statusCode, body: taken.json() }).toEqual({ status: 409, body: { error: 'El SKU ya existe: abc-1' } })
    const twice = await createVariants(other.id, [
      { options: { Talla: 'M', Color: 'Rojo' }, price: 1, sku: 'NEW-1' },
      { options: { Talla: 'L', Color: 'Rojo' }, price: 1, sku: 'new-1' },
    ])
    expect(twice.json()).toEqual({ error: 'El SKU ya existe: new-1' })
    expect(await variantCount(other.id)).toBe(1)
  })

  it('409 for values another variant has (also twice in a batch): all or nothing, the new value not kept', async () => {
    const product = await optionedProduct()
    const same = await createVariants(product.id, { options: { Talla: 's', Color: 'ROJO' }, price: 1 })
    expect({ status: same.statusCode, body: same.json() }).toEqual({ status: 409, body: { error: 'Ya existe una variante con esas opciones: s / ROJO' } })
    const batch = await createVariants(product.id, [
      { options: { Talla: 'XL', Color: 'Rojo' }, price: 1 },
      { options: { Talla: 'xl', Color: 'rojo' }, price: 1 },
    ])
    expect({ status: batch.statusCode, body: batch.json() }).toEqual({ status: 409, body: { error: 'Ya existe una variante con esas opciones: xl / rojo' } })
    expect(await variantCount(product.id)).toBe(1)
    expect((await getProduct(product.id)).options[0]!.values.map((v) => v.value)).toEqual(['S', 'M'])
    expect(events).toEqual([])
  })

  it('10 creates of the same values at once: exactly one 201, the others 409', async () => {
    const product = await optionedProduct()
    const answers = await Promise.all(Array.from({ length: 10 }, () => createVariants(product.id, { options: { Talla: 'XL', Color: 'Verde' }, price: 5 })))
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, ...Array(9).fill(409)])
    for (const a of answers.filter((a) => a.statusCode === 409)) expect(a.json()).toEqual({ error: 'Ya existe una variante con esas opciones: XL / Verde' })
    expect(await variantCount(product.id)).toBe(2)
    const after = await getProduct(product.id)
    expect(after.options.map((o) => o.values.map((v) => v.value))).toEqual([
      ['S', 'M', 'XL'],
      ['Rojo', 'Verde'],
    ])
  })

  it('10 creates of one SKU on 10 products at once: exactly one 201, the others 409 with the SKU as sent', async () => {
    const products = await Promise.all(Array.from({ length: 10 }, () => optionedProduct()))
    const answers = await Promise.all(
      products.map((product, i) => createVariants(product.id, { options: { Talla: 'M', Color: 'Rojo' }, price: 5, sku: i % 2 === 0 ? 'RACE-1' : 'race-1' })),
    )
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, ...Array(9).fill(409)])
    for (const [i, a] of answers.entries())
      if (a.statusCode === 409) expect(a.json()).toEqual({ error: `El SKU ya existe: ${i % 2 === 0 ? 'RACE-1' : 'race-1'}` })
    expect(await t.app.db.selectFrom('product_variants').select('id').where('sku_key', '=', 'race-1').execute()).toHaveLength(1)
  })

  it('a product without options has only its default variant: the same (empty) values are taken', async () => {
    const product = await makeProduct(t.app)
    const res = await createVariants(product.id, { options: {}, price: 1 })
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 409, body: { error: 'Ya existe una variante con esas opciones: ' } })
    expect(await variantCount(product.id)).toBe(1)
  })

  it('401, 403 first', async () => {
    const product = await optionedProduct()
    const anonymous = await send('POST', `/products/${product.id}/variants`, { price: -1 }, null)
    expect([anonymous.statusCode, anonymous.json()]).toEqual([401, { error: 'Unauthorized - No user found' }])
    const customer = await send('POST', `/products/${product.id}/variants`, { price: -1 }, t.customer)
    expect([customer.statusCode, customer.json()]).toEqual([403, { error: 'Forbidden - Requires one of the following roles: admin' }])
  })
})

describe('MAX_VARIANTS_PER_PRODUCT', () => {
  const small = useTestApp({ MAX_VARIANTS_PER_PRODUCT: '3' })
  it('refuses a variant, or a batch, past the cap', async () => {
    const product = await makeProduct(small.app)
    const post = (url: string, body: unknown) => small.app.inject({ method: 'POST', url, payload: body as object, headers: bearer(small.admin) })
    expect((await post(`/products/${product.id}/options`, { name: 'Talla', defaultValue: 'S' })).statusCode).toBe(201)
    const batch = await post(`/products/${product.id}/variants`, [
      { options: { Talla: 'M' }, price: 1 },
      { options: { Talla: 'L' }, price: 1 },
      { options: { Talla: 'XL' }, price: 1 },
    ])
    expect({ status: batch.statusCode, body: batch.json() }).toEqual({ status: 409, body: { error: 'Un producto admite como máximo 3 variantes' } })
    expect(
      (
        await post(`/products/${product.id}/variants`, [
          { options: { Talla: 'M' }, price: 1 },
          { options: { Talla: 'L' }, price: 1 },
        ])
      ).statusCode,
    ).toBe(201)
    expect((await post(`/products/${product.id}/variants`, { options: { Talla: 'XL' }, price: 1 })).json()).toEqual({
      error: 'Un producto admite como máximo 3 variantes',
    })
  })
})

describe('PATCH /variants/:id', () => {
  it('changes any field and answers the variant alone; the product follows; stock.low when its stock drops to the threshold', async () => {
    const product = await optionedProduct()
    const variant = product.variants[0]!
    expect((await send('PATCH', `/variants/${variant.id}`, { stock: 20 })).statusCode).toBe(200)
    expect(events.map((e) => e.type)).toEqual(['product.updated'])
    events.length = 0
    const res = await send('PATCH', `/variants/${variant.id}`, { price: '7.5', stock: 2, sku: 'V-1', compareAtPrice: null, taxClass: 'reduced' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: variant.id, price: 7.5, stock: 2, sku: 'V-1', taxClass: 'reduced', title: 'S / Rojo' })
    const after = await getProduct(product.id)
    expect(after).toMatchObject({ price: 7.5, stock: 2 })
    expect(events.map((e) => e.type)).toEqual(['product.updated', 'stock.low'])
    expect(events[0]?.data).toEqual(after)
    const row = await t.app.db.selectFrom('product_variants').select(['sku', 'sku_key', 'price_cents']).where('id', '=', variant.id).executeTakeFirstOrThrow()
    expect(row).toEqual({ sku: 'V-1', sku_key: 'v-1', price_cents: 750 })
  })

  it('new options: the title, the key and a new value follow; 409 for another variant’s values', async () => {
    const product = await optionedProduct()
    const second = (await createVariants(product.id, { options: { Talla: 'M', Color: 'Rojo' }, price: 1 })).json()
    const clash = await send('PATCH', `/variants/${second.id}`, { options: { Talla: 'S', Color: 'Rojo' } })
    expect({ status: clash.statusCode, body: clash.json() }).toEqual({ status: 409, body: { error: 'Ya existe una variante con esas opciones: S / Rojo' } })
    events.length = 0
    const res = await send('PATCH', `/variants/${second.id}`, { options: { Talla: 'M', Color: 'Negro' } })
    expect(res.json()).toMatchObject({ title: 'M / Negro' })
    // The event's product (built from the rows the write holds) is the product as it is read afterwards.
    expect(events.map((e) => e.type)).toEqual(['product.updated'])
    expect(events[0]?.data).toEqual(await getProduct(product.id))
    expect((await getProduct(product.id)).options.find((o) => o.name === 'Color')?.values.map((v) => v.value)).toEqual(['Rojo', 'Negro'])
    const key = res
      .json()
      .optionValues.map((v: { valueId: number }) => v.valueId)
      .sort((a: number, b: number) => a - b)
      .join(',')
    expect((await t.app.db.selectFrom('product_variants').select('values_key').where('id', '=', second.id).executeTakeFirstOrThrow()).values_key).toBe(key)
  })

  it('moves a variant; 409 SKU of another variant; 422 before 404; 404 Variante no encontrada', async () => {
    const product = await optionedProduct()
    const second = (await createVariants(product.id, { options: { Talla: 'M', Color: 'Rojo' }, price: 1, sku: 'MOVE-1' })).json()
    events.length = 0
    const moved = await send('PATCH', `/variants/${second.id}`, { position: 0 })
    expect(moved.json()).toMatchObject({ position: 0 })
    expect(events[0]?.data).toEqual(await getProduct(product.id))
    expect((await getProduct(product.id)).variants.map((v) => [v.title, v.position])).toEqual([
      ['M / Rojo', 0],
      ['S / Rojo', 1],
    ])
    const taken = await send('PATCH', `/variants/${product.variants[0]!.id}`, { sku: 'move-1' })
    expect({ status: taken.statusCode, body: taken.json() }).toEqual({ status: 409, body: { error: 'El SKU ya existe: move-1' } })
    expect((await send('PATCH', `/variants/${second.id}`, { sku: 'MOVE-1' })).statusCode).toBe(200)
    expect((await send('PATCH', '/variants/999999', {})).json()).toEqual({ error: 'body must contain at least one field' })
    const missing = await send('PATCH', '/variants/999999', { price: 1 })
    expect({ status: missing.statusCode, body: missing.json() }).toEqual({ status: 404, body: { error: 'Variante no encontrada' } })
  })
})

describe('a product created with options and variants (the service functions a JSON create calls)', () => {
  it('insertOptions then addVariants, in the create’s transaction: values kept once, titles, the cap and the name rules', async () => {
    const limits = { maxOptions: 3, maxVariants: 100 }
    const created = await t.app.db.transaction().execute(async (trx) => {
      const row = await trx.insertInto('products').values(productRow()).returning('id').executeTakeFirstOrThrow()
      await insertOptions(trx, limits, row.id, [
        { name: 'Talla', values: ['S', 'M', 's'] },
        { name: 'Color', values: ['Rojo'] },
      ])
      const ids = await addVariants(trx, limits, row.id, [
        parseVariantInput({ options: { Talla: 'S', Color: 'Rojo' }, price: 10 }, true),
        parseVariantInput({ options: { Talla: 'M', Color: 'Azul' }, price: 12, stock: 3 }, true),
      ])
      await refreshProductAggregates(trx, row.id)
      return { id: row.id, ids }
    })
    const product = await getProduct(created.id)
    expect(product.options.map((o) => [o.name, o.values.map((v) => v.value)])).toEqual([
      ['Talla', ['S', 'M']],
      ['Color', ['Rojo', 'Azul']],
    ])
    expect(product.variants.map((v) => [v.id, v.title])).toEqual([
      [created.ids[0], 'S / Rojo'],
      [created.ids[1], 'M / Azul'],
    ])
    expect(product).toMatchObject({ priceRange: { min: 10, max: 12 }, stock: 3 })
    const refused = (options: Array<{ name: string; values: string[] }>) =>
      t.app.db.transaction().execute(async (trx) => {
        const row = await trx.insertInto('products').values(productRow()).returning('id').executeTakeFirstOrThrow()
        await insertOptions(trx, limits, row.id, options)
      })
    await expect(
      refused([
        { name: 'Talla', values: ['S'] },
        { name: 'talla', values: ['M'] },
      ]),
    ).rejects.toThrow('La opción ya existe: talla')
    await expect(refused(['A', 'B', 'C', 'D'].map((name) => ({ name, values: ['x'] })))).rejects.toThrow('Un producto admite como máximo 3 opciones')
  })
})

describe('variant writes beside orders', () => {
  it('orders and variant writes on one product at once all finish (same lock order), and the product’s stock is its variants’ sum', async () => {
    const product = await optionedProduct()
    const second = (await createVariants(product.id, { options: { Talla: 'M', Color: 'Rojo' }, price: 20, stock: 50 })).json()
    const first = product.variants[0]!
    expect((await send('PATCH', `/variants/${first.id}`, { stock: 50 })).statusCode).toBe(200)
    const buyers = await Promise.all(Array.from({ length: 6 }, () => makeUser(t.app)))
    for (const buyer of buyers) {
      await fillCart(t.app, buyer.id, [
        { productId: product.id, variantId: first.id, quantity: 1 },
        { productId: product.id, variantId: second.id, quantity: 2 },
      ])
    }
    const answers = await Promise.all([
      ...buyers.map((buyer) => send('POST', '/orders', undefined, buyer)),
      ...[1, 2, 3].map((n) => send('PATCH', `/variants/${second.id}`, { price: 20 + n })),
      send('PATCH', `/variants/${first.id}`, { compareAtPrice: 99 }),
      send('POST', `/products/${product.id}/options`, { name: 'Material', defaultValue: 'Algodón' }),
    ])
    expect(answers.map((a) => a.statusCode)).toEqual([...Array(6).fill(201), 200, 200, 200, 200, 201])
    const after = await getProduct(product.id)
    expect(after.variants.map((v) => v.stock)).toEqual([44, 38])
    expect(after.stock).toBe(82)
    expect(after.variants.map((v) => v.title)).toEqual(['S / Rojo / Algodón', 'M / Rojo / Algodón'])
  })
})

describe('DELETE /variants/:id', () => {
  it('deletes the variant and its cart lines; an order line keeps its copy; the product follows', async () => {
    const product = await optionedProduct()
    const second = (await createVariants(product.id, { options: { Talla: 'M', Color: 'Rojo' }, price: 30, stock: 5, sku: 'GONE-1' })).json()
    const buyer = await makeUser(t.app)
    await fillCart(t.app, buyer.id, [{ productId: product.id, variantId: second.id, quantity: 1 }])
    expect((await send('POST', '/orders', undefined, buyer)).statusCode).toBe(201)
    await fillCart(t.app, buyer.id, [{ productId: product.id, variantId: second.id, quantity: 2 }])
    events.length = 0
    const res = await send('DELETE', `/variants/${second.id}`)
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 200, body: { message: 'Variante eliminada' } })
    expect(await t.app.db.selectFrom('cart_items').select('id').where('variant_id', '=', second.id).execute()).toEqual([])
    expect(await t.app.db.selectFrom('order_items').select(['variant_id', 'sku', 'variant_title']).where('variant_id', '=', second.id).execute()).toEqual([
      { variant_id: second.id, sku: 'GONE-1', variant_title: 'M / Rojo' },
    ])
    const after = await getProduct(product.id)
    expect(after).toMatchObject({ priceRange: { min: 10, max: 10 }, stock: 3 })
    expect(events.map((e) => e.type)).toEqual(['product.updated', 'stock.low'])
  })

  it('409 for the last variant; 404 for an unknown one; 401/403 first', async () => {
    const product = await makeProduct(t.app)
    const only = (await getProduct(product.id)).variants[0]!
    const last = await send('DELETE', `/variants/${only.id}`)
    expect({ status: last.statusCode, body: last.json() }).toEqual({ status: 409, body: { error: 'Un producto debe tener al menos una variante' } })
    expect(await variantCount(product.id)).toBe(1)
    expect((await send('DELETE', '/variants/999999')).json()).toEqual({ error: 'Variante no encontrada' })
    expect((await send('DELETE', `/variants/${only.id}`, undefined, null)).json()).toEqual({ error: 'Unauthorized - No user found' })
    expect((await send('DELETE', `/variants/${only.id}`, undefined, t.customer)).json()).toEqual({
      error: 'Forbidden - Requires one of the following roles: admin',
    })
    expect(events).toEqual([])
  })
})

describe('a tax class no class has', () => {
  it('POST /products/:id/variants and PATCH /variants/:id: 422 La clase de impuesto no existe, nothing written', async () => {
    const product = await optionedProduct()
    const before = await variantCount(product.id)
    const created = await createVariants(product.id, { options: { color: 'Rojo', Talla: 'M' }, price: 5, taxClass: 'luxury' })
    expect([created.statusCode, created.json()]).toEqual([422, { error: 'La clase de impuesto no existe' }])
    expect(await variantCount(product.id)).toBe(before)
    const variant = (await getProduct(product.id)).variants[0]!
    const patched = await send('PATCH', `/variants/${variant.id}`, { stock: 99, taxClass: 'luxury' })
    expect([patched.statusCode, patched.json()]).toEqual([422, { error: 'La clase de impuesto no existe' }])
    const row = await t.app.db.selectFrom('product_variants').select(['stock', 'tax_class']).where('id', '=', variant.id).executeTakeFirstOrThrow()
    expect(row).toEqual({ stock: variant.stock, tax_class: null })
    // A class that exists is taken.
    expect((await send('PATCH', `/variants/${variant.id}`, { taxClass: 'super_reduced' })).json()).toMatchObject({ taxClass: 'super_reduced' })
  })
})
