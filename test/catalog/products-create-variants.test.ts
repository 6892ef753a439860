import { describe, expect, it } from 'vitest'
import type { Product } from '../../src/modules/catalog/products.service.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct, sendProductForm, storedImages } from '../helpers/catalog.js'
import { bearer } from '../helpers/factories.js'
import { recordEvents } from '../helpers/outbox.js'
import { countRows } from '../helpers/shop.js'

// A product's own tax class, and its default variant's SKU and compare-at price, in a form or JSON, on create and
// update; a JSON create with its options and variants.

const t = useTestApp({ MAX_OPTIONS_PER_PRODUCT: '2', MAX_VARIANTS_PER_PRODUCT: '4' }, { outbox: { enabled: false } })
const events = recordEvents(t)

const postJson = (payload: unknown) => t.app.inject({ method: 'POST', url: '/products', headers: bearer(t.admin), payload: payload as object })
const patchJson = (id: number, payload: unknown) =>
  t.app.inject({ method: 'PATCH', url: `/products/${id}`, headers: bearer(t.admin), payload: payload as object })

async function rowCounts() {
  const count = (table: 'products' | 'product_variants' | 'product_options' | 'product_option_values') => countRows(t.app, table)
  return {
    products: await count('products'),
    variants: await count('product_variants'),
    options: await count('product_options'),
    values: await count('product_option_values'),
  }
}

describe('taxClass, sku and compareAtPrice of a product with one variant', () => {
  it('a form creates them: the product’s tax class, its default variant’s SKU and compare-at price', async () => {
    const res = await sendProductForm(t.app, {
      user: t.admin,
      fields: { name: 'Gorra', price: '12.50', taxClass: 'reduced', sku: 'GOR-001', compareAtPrice: '15' },
    })
    expect(res.statusCode).toBe(201)
    const product = res.json() as Product
    expect(product.taxClass).toBe('reduced')
    expect(product.variants).toMatchObject([{ sku: 'GOR-001', compareAtPrice: 15, price: 12.5, title: null, taxClass: null }])
  })

  it('left out: tax class standard, no SKU, no compare-at price', async () => {
    const product = (await sendProductForm(t.app, { user: t.admin, fields: { name: 'Bufanda', price: '9' } })).json() as Product
    expect([product.taxClass, product.variants[0]?.sku, product.variants[0]?.compareAtPrice]).toEqual(['standard', null, null])
  })

  it('a taken SKU (ignoring case) is a 409 that writes nothing and keeps no file', async () => {
    await sendProductForm(t.app, { user: t.admin, fields: { name: 'Primera', price: '1', sku: 'DUP-1' } })
    const before = await rowCounts()
    const files = storedImages(t.config)
    const res = await sendProductForm(t.app, { user: t.admin, fields: { name: 'Segunda', price: '1', sku: 'dup-1' } })
    expect([res.statusCode, res.json()]).toEqual([409, { error: 'El SKU ya existe: dup-1' }])
    expect(await rowCounts()).toEqual(before)
    expect(storedImages(t.config)).toEqual(files)
  })

  it('422s in field order, before anything is stored', async () => {
    const files = storedImages(t.config)
    for (const [fields, error] of [
      [{ taxClass: ' ' }, 'taxClass should not be empty'],
      [{ taxClass: 'x'.repeat(51) }, 'taxClass must be shorter than or equal to 50 characters'],
      [{ sku: 'con espacio' }, "sku must be null or 1 to 64 letters, digits, '.', '_', '-' or '/'"],
      [{ sku: 'A'.repeat(65) }, "sku must be null or 1 to 64 letters, digits, '.', '_', '-' or '/'"],
      [{ compareAtPrice: '-1' }, 'compareAtPrice must not be less than 0'],
      [{ compareAtPrice: '1.234' }, 'compareAtPrice must be a number conforming to the specified constraints'],
    ] as const) {
      const res = await sendProductForm(t.app, { user: t.admin, fields: { name: 'Mala', price: '1', ...fields } })
      expect([res.statusCode, res.json()]).toEqual([422, { error }])
    }
    expect(storedImages(t.config)).toEqual(files)
  })

  it('an update sets or clears them (an empty form value, or JSON null); a SKU another variant has is a 409', async () => {
    const product = await makeProduct(t.app, { name: 'Cambiante' })
    const set = await patchJson(product.id, { taxClass: 'zero', sku: 'CAMB-1', compareAtPrice: '20.00' })
    expect(set.statusCode).toBe(200)
    expect((set.json() as Product).taxClass).toBe('zero')
    expect((set.json() as Product).variants).toMatchObject([{ sku: 'CAMB-1', compareAtPrice: 20 }])
    // The same SKU again, in another case, is its own.
    expect((await patchJson(product.id, { sku: 'camb-1' })).statusCode).toBe(200)

    const cleared = await sendProductForm(t.app, {
      method: 'PUT',
      url: `/products/${product.id}`,
      user: t.admin,
      fields: { sku: '', compareAtPrice: '' },
      files: [],
    })
    expect(cleared.statusCode).toBe(200)
    expect((cleared.json() as Product).variants).toMatchObject([{ sku: null, compareAtPrice: null }])

    await sendProductForm(t.app, { user: t.admin, fields: { name: 'Dueña', price: '1', sku: 'OWNED-7' } })
    const taken = await patchJson(product.id, { sku: 'owned-7' })
    expect([taken.statusCode, taken.json()]).toEqual([409, { error: 'El SKU ya existe: owned-7' }])
    const variant = await t.app.db.selectFrom('product_variants').select('sku').where('product_id', '=', product.id).executeTakeFirstOrThrow()
    expect(variant.sku).toBeNull()
  })

  it('with several variants: price, stock, sku and compareAtPrice are refused on the product; taxClass is the product’s', async () => {
    const product = await makeProduct(t.app, { name: 'Varias' })
    await t.app.inject({ method: 'POST', url: `/products/${product.id}/options`, headers: bearer(t.admin), payload: { name: 'Talla', defaultValue: 'S' } })
    await t.app.inject({ method: 'POST', url: `/products/${product.id}/variants`, headers: bearer(t.admin), payload: { options: { Talla: 'M' }, price: 3 } })
    for (const body of [{ price: 1 }, { stock: 1 }, { sku: 'V-1' }, { compareAtPrice: 1 }, { sku: null }]) {
      const res = await patchJson(product.id, body)
      expect([res.statusCode, res.json()]).toEqual([422, { error: 'El producto tiene varias variantes: cambia precio y stock en cada variante' }])
    }
    const res = await patchJson(product.id, { taxClass: 'reduced' })
    expect([res.statusCode, (res.json() as Product).taxClass]).toEqual([200, 'reduced'])
  })
})

describe('POST /products in JSON with options and variants', () => {
  it('creates a draft with its options, values and variants; price and stock are the variants’', async () => {
    events.length = 0
    const res = await postJson({
      name: 'Camiseta',
      taxClass: 'standard',
      options: [
        { name: 'Talla', values: ['S', 'M'] },
        { name: 'Color', values: ['Rojo'] },
      ],
      variants: [
        { options: { Talla: 'S', Color: 'Rojo' }, price: 10, stock: 2, sku: 'CAM-S-R' },
        { options: { talla: 'M', Color: 'Azul' }, price: '12.50', stock: 3, compareAtPrice: 15 },
      ],
    })
    expect(res.statusCode).toBe(201)
    const product = res.json() as Product
    expect([product.status, product.price, product.stock, product.priceRange, product.inStock]).toEqual(['draft', 10, 5, { min: 10, max: 12.5 }, true])
    expect(product.options.map((o) => [o.name, o.values.map((v) => v.value)])).toEqual([
      ['Talla', ['S', 'M']],
      ['Color', ['Rojo', 'Azul']],
    ])
    expect(product.variants.map((v) => [v.title, v.price, v.stock, v.sku, v.compareAtPrice])).toEqual([
      ['S / Rojo', 10, 2, 'CAM-S-R', null],
      ['M / Azul', 12.5, 3, null, 15],
    ])
    expect(events.map((e) => e.type)).toEqual(['product.created'])
  })

  it('refuses, writing nothing: 422 before 409, each message', async () => {
    const before = await rowCounts()
    const options = [{ name: 'Talla', values: ['S'] }]
    const cases: Array<[unknown, number, string]> = [
      [{ name: 'X', options }, 422, 'variants should not be empty'],
      [{ name: 'X', options, variants: [] }, 422, 'variants should not be empty'],
      [{ name: 'X', price: 1, variants: [{ options: {}, price: 1 }] }, 422, 'options should not be empty'],
      [{ name: 'X', options: [], variants: [{ options: { Talla: 'S' }, price: 1 }] }, 422, 'options should not be empty'],
      [{ name: 'X', options: 'Talla', variants: [{ options: { Talla: 'S' }, price: 1 }] }, 422, 'options must be an array'],
      [{ name: 'X', options, variants: [{ options: { Talla: 'S' } }] }, 422, 'price should not be empty'],
      [
        { name: 'X', options, variants: [{ options: { Talla: 'S' }, price: 1 }], price: 1 },
        422,
        'El producto tiene varias variantes: cambia precio y stock en cada variante',
      ],
      [{ name: 'X', options, variants: [{ options: { Color: 'Rojo' }, price: 1 }] }, 422, 'options must name every option of the product'],
      [
        { name: 'X', options, variants: [{ options: { Talla: 'S' }, price: 1 }], status: 'active' },
        409,
        'Un producto sin imágenes solo puede estar en borrador',
      ],
      [
        { name: 'X', options: [{ name: 'A' }, { name: 'B' }, { name: 'C' }], variants: [{ options: { A: '1', B: '1', C: '1' }, price: 1 }] },
        409,
        'Un producto admite como máximo 2 opciones',
      ],
      [{ name: 'X', options: [{ name: 'Talla' }, { name: 'talla' }], variants: [{ options: { Talla: 'S' }, price: 1 }] }, 409, 'La opción ya existe: talla'],
      [
        {
          name: 'X',
          options,
          variants: ['S', 'M', 'L', 'XL', 'XXL'].map((size) => ({ options: { Talla: size }, price: 1 })),
        },
        409,
        'Un producto admite como máximo 4 variantes',
      ],
      [
        {
          name: 'X',
          options,
          variants: [
            { options: { Talla: 'S' }, price: 1 },
            { options: { Talla: 's' }, price: 2 },
          ],
        },
        409,
        'Ya existe una variante con esas opciones: s',
      ],
      [
        {
          name: 'X',
          options,
          variants: [
            { options: { Talla: 'S' }, price: 1, sku: 'TWICE' },
            { options: { Talla: 'M' }, price: 2, sku: 'twice' },
          ],
        },
        409,
        'El SKU ya existe: twice',
      ],
    ]
    for (const [body, status, error] of cases) {
      const res = await postJson(body)
      expect([res.statusCode, res.json()], JSON.stringify(body)).toEqual([status, { error }])
    }
    expect(await rowCounts()).toEqual(before)
  })

  it('without options: price makes the default variant, with its SKU and compare-at price', async () => {
    const res = await postJson({ name: 'Sencillo', price: 4, stock: 7, sku: 'SEN-1', compareAtPrice: null })
    expect(res.statusCode).toBe(201)
    expect((res.json() as Product).variants).toMatchObject([{ title: null, sku: 'SEN-1', price: 4, stock: 7, compareAtPrice: null }])
  })
})

describe('a tax class no class has', () => {
  const unknown = { error: 'La clase de impuesto no existe' }

  it('a form or JSON create: 422 La clase de impuesto no existe, no row, no file', async () => {
    const before = await rowCounts()
    const files = storedImages(t.config)
    const form = await sendProductForm(t.app, { user: t.admin, fields: { name: 'Lujo', price: '1', taxClass: 'luxury' } })
    expect([form.statusCode, form.json()]).toEqual([422, unknown])
    const json = await postJson({ name: 'Lujo', price: 1, taxClass: 'luxury' })
    expect([json.statusCode, json.json()]).toEqual([422, unknown])
    expect(await rowCounts()).toEqual(before)
    expect(storedImages(t.config)).toEqual(files)
  })

  it('an update: 422, the product unchanged', async () => {
    const product = await makeProduct(t.app, { name: 'Intacto' })
    const res = await patchJson(product.id, { name: 'Cambiado', taxClass: 'luxury' })
    expect([res.statusCode, res.json()]).toEqual([422, unknown])
    const row = await t.app.db.selectFrom('products').select(['name', 'tax_class']).where('id', '=', product.id).executeTakeFirstOrThrow()
    expect(row).toEqual({ name: 'Intacto', tax_class: 'standard' })
  })

  it('a class added through /tax-classes can be named', async () => {
    const added = await t.app.inject({ method: 'POST', url: '/tax-classes', headers: bearer(t.admin), payload: { code: 'luxury', name: 'Lujo' } })
    expect(added.statusCode).toBe(201)
    const res = await postJson({ name: 'Lujo', price: 1, taxClass: 'luxury' })
    expect([res.statusCode, (res.json() as Product).taxClass]).toEqual([201, 'luxury'])
  })
})
