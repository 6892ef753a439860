import { beforeEach, describe, expect, it } from 'vitest'
import type { Product } from '../../src/modules/catalog/products.service.js'
import { testConfig, useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { recordEvents } from '../helpers/outbox.js'
import { bearer, type TestUser } from '../helpers/factories.js'

// Options and their values: POST /products/:id/options, PATCH/DELETE of an option and of a value.

const t = useTestApp({ LOW_STOCK_THRESHOLD: '5' }, { outbox: { enabled: false } })
const events = recordEvents(t)

type Method = 'POST' | 'PATCH' | 'DELETE'
const send = (method: Method, url: string, payload?: unknown, user: TestUser | null = t.admin) =>
  t.app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }), headers: user ? bearer(user) : {} })

const addOption = (productId: number, body: unknown) => send('POST', `/products/${productId}/options`, body)

async function variantRows(productId: number) {
  return t.app.db
    .selectFrom('product_variants')
    .select(['id', 'title', 'values_key', 'price_cents', 'stock'])
    .where('product_id', '=', productId)
    .orderBy('position')
    .orderBy('id')
    .execute()
}

/** A product with Talla (S, M, L) and Color (Rojo, Azul): six variants, S/Rojo… L/Azul. */
async function sizedProduct(): Promise<Product> {
  const product = await makeProduct(t.app, { priceCents: 1000, stock: 3 })
  expect((await addOption(product.id, { name: 'Talla', values: ['S', 'M', 'L'], defaultValue: 'S' })).statusCode).toBe(201)
  expect((await addOption(product.id, { name: 'Color', values: ['Rojo', 'Azul'], defaultValue: 'Rojo' })).statusCode).toBe(201)
  const combos = [
    { Talla: 'S', Color: 'Azul' },
    { Talla: 'M', Color: 'Rojo' },
    { Talla: 'M', Color: 'Azul' },
  ]
  const res = await send(
    'POST',
    `/products/${product.id}/variants`,
    combos.map((options) => ({ options, price: 12 })),
  )
  expect(res.statusCode).toBe(201)
  return (await t.app.inject({ url: `/products/${product.id}`, headers: bearer(t.admin) })).json() as Product
}

describe('POST /products/:id/options', () => {
  it('adds the option; the default variant takes defaultValue (title = the value) and the answer is the product whole', async () => {
    const product = await makeProduct(t.app, { priceCents: 1500, stock: 4 })
    const res = await addOption(product.id, { name: ' Talla ', values: ['S', 'M', 'm', 'L'], defaultValue: 'M' })
    expect(res.statusCode).toBe(201)
    const body = res.json() as Product
    expect(body.id).toBe(product.id)
    expect(body.options).toEqual([
      {
        id: expect.any(Number),
        name: 'Talla',
        position: 0,
        values: [
          { id: expect.any(Number), value: 'S', position: 0 },
          { id: expect.any(Number), value: 'M', position: 1 },
          { id: expect.any(Number), value: 'L', position: 2 },
        ],
      },
    ])
    const m = body.options[0]!.values[1]!
    expect(body.variants).toHaveLength(1)
    expect(body.variants[0]).toMatchObject({
      title: 'M',
      price: 15,
      stock: 4,
      optionValues: [{ optionId: body.options[0]!.id, name: 'Talla', valueId: m.id, value: 'M' }],
    })
    expect(await variantRows(product.id)).toEqual([expect.objectContaining({ title: 'M', values_key: String(m.id) })])
    expect(events).toEqual([{ type: 'product.updated', data: body }])
  })

  it('a defaultValue not among values is added after them; a second option extends every title in option order', async () => {
    const product = await makeProduct(t.app)
    await addOption(product.id, { name: 'Talla', defaultValue: 'M' })
    const res = await addOption(product.id, { name: 'Color', values: ['Azul'], defaultValue: 'Rojo' })
    expect(res.statusCode).toBe(201)
    const body = res.json() as Product
    expect(body.options.map((o) => [o.name, o.position, o.values.map((v) => v.value)])).toEqual([
      ['Talla', 0, ['M']],
      ['Color', 1, ['Azul', 'Rojo']],
    ])
    expect(body.variants[0]?.title).toBe('M / Rojo')
    const ids = body.variants[0]!.optionValues.map((v) => v.valueId).sort((a, b) => a - b)
    expect((await variantRows(product.id))[0]?.values_key).toBe(ids.join(','))
  })

  it('422 for a missing defaultValue, a bad name or value; validation before existence; nothing written', async () => {
    const product = await makeProduct(t.app)
    const cases: Array<[unknown, string]> = [
      [{ name: 'Talla' }, 'defaultValue should not be empty'],
      [{ name: 'Talla', defaultValue: '  ' }, 'defaultValue should not be empty'],
      [{ defaultValue: 'M' }, 'name should not be empty'],
      [{ name: 'x'.repeat(51), defaultValue: 'M' }, 'name must be shorter than or equal to 50 characters'],
      [{ name: 'Talla', values: 'S', defaultValue: 'M' }, 'values must be an array'],
      [{ name: 'Talla', values: ['x'.repeat(101)], defaultValue: 'M' }, 'each value in values must be shorter than or equal to 100 characters'],
      [{ name: 'Talla', values: [''], defaultValue: 'M' }, 'each value in values should not be empty'],
      [{ name: 'Talla', defaultValue: 'x'.repeat(101) }, 'defaultValue must be shorter than or equal to 100 characters'],
    ]
    for (const [body, error] of cases) {
      const res = await addOption(product.id, body)
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 422, body: { error } })
    }
    expect((await addOption(999999, { name: 'Talla' })).statusCode).toBe(422)
    expect((await addOption(999999, { name: 'Talla', defaultValue: 'M' })).json()).toEqual({ error: 'Producto no encontrado' })
    expect(await t.app.db.selectFrom('product_options').select('id').where('product_id', '=', product.id).execute()).toEqual([])
    expect(events).toEqual([])
  })

  it('401, 403 first', async () => {
    const product = await makeProduct(t.app)
    expect((await send('POST', `/products/${product.id}/options`, {}, null)).json()).toEqual({ error: 'Unauthorized - No user found' })
    expect((await send('POST', `/products/${product.id}/options`, {}, t.customer)).json()).toEqual({
      error: 'Forbidden - Requires one of the following roles: admin',
    })
  })

  it('409 for a name taken ignoring case, and over the cap (3 by default)', async () => {
    const product = await makeProduct(t.app)
    await addOption(product.id, { name: 'Talla', defaultValue: 'M' })
    const taken = await addOption(product.id, { name: 'TALLA', defaultValue: 'M' })
    expect({ status: taken.statusCode, body: taken.json() }).toEqual({ status: 409, body: { error: 'La opción ya existe: TALLA' } })
    await addOption(product.id, { name: 'Color', defaultValue: 'Rojo' })
    await addOption(product.id, { name: 'Material', defaultValue: 'Lana' })
    const over = await addOption(product.id, { name: 'Estilo', defaultValue: 'Clásico' })
    expect({ status: over.statusCode, body: over.json() }).toEqual({ status: 409, body: { error: 'Un producto admite como máximo 3 opciones' } })
    expect(await t.app.db.selectFrom('product_options').select('name').where('product_id', '=', product.id).orderBy('position').execute()).toEqual([
      { name: 'Talla' },
      { name: 'Color' },
      { name: 'Material' },
    ])
  })
})

describe('POST /products/:id/options at once', () => {
  it('10 options of one name at once: exactly one 201, the others 409; the variant takes one value', async () => {
    const product = await makeProduct(t.app)
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => addOption(product.id, { name: 'Talla', defaultValue: `V${i}` })))
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, ...Array(9).fill(409)])
    expect(await t.app.db.selectFrom('product_options').select('id').where('product_id', '=', product.id).execute()).toHaveLength(1)
    expect(
      await t.app.db
        .selectFrom('variant_option_values as l')
        .innerJoin('product_variants as v', 'v.id', 'l.variant_id')
        .select('l.option_value_id')
        .where('v.product_id', '=', product.id)
        .execute(),
    ).toHaveLength(1)
  })
})

describe('MAX_OPTIONS_PER_PRODUCT', () => {
  it('is 3 unless set, from 1 to 3; MAX_VARIANTS_PER_PRODUCT is 100 unless set, from 1 to 2048', () => {
    expect(testConfig()).toMatchObject({ maxOptionsPerProduct: 3, maxVariantsPerProduct: 100 })
    expect(testConfig({ MAX_OPTIONS_PER_PRODUCT: '1', MAX_VARIANTS_PER_PRODUCT: '2048' })).toMatchObject({
      maxOptionsPerProduct: 1,
      maxVariantsPerProduct: 2048,
    })
    expect(() => testConfig({ MAX_OPTIONS_PER_PRODUCT: '4', MAX_VARIANTS_PER_PRODUCT: '0' })).toThrow(
      /MAX_OPTIONS_PER_PRODUCT must be an integer between 1 and 3 \(got "4"\)\n.*MAX_VARIANTS_PER_PRODUCT must be an integer between 1 and 2048 \(got "0"\)/,
    )
  })

  const one = useTestApp({ MAX_OPTIONS_PER_PRODUCT: '1' })
  it('caps the options at its value', async () => {
    const product = await makeProduct(one.app)
    const post = (body: unknown) =>
      one.app.inject({ method: 'POST', url: `/products/${product.id}/options`, payload: body as object, headers: bearer(one.admin) })
    expect((await post({ name: 'Talla', defaultValue: 'M' })).statusCode).toBe(201)
    expect((await post({ name: 'Color', defaultValue: 'Rojo' })).json()).toEqual({ error: 'Un producto admite como máximo 1 opciones' })
  })
})

describe('PATCH and DELETE /products/:id/options/:optionId', () => {
  let product: Product
  beforeEach(async () => {
    product = await sizedProduct()
    events.length = 0
  })
  const talla = () => product.options.find((o) => o.name === 'Talla')!
  const color = () => product.options.find((o) => o.name === 'Color')!

  it('renames an option (409 when another has the name ignoring case; its own name in another case is fine)', async () => {
    const taken = await send('PATCH', `/products/${product.id}/options/${talla().id}`, { name: 'color' })
    expect({ status: taken.statusCode, body: taken.json() }).toEqual({ status: 409, body: { error: 'La opción ya existe: color' } })
    const res = await send('PATCH', `/products/${product.id}/options/${talla().id}`, { name: 'TALLA' })
    expect(res.statusCode).toBe(200)
    expect((res.json() as Product).options.map((o) => o.name)).toEqual(['TALLA', 'Color'])
    expect(events.map((e) => e.type)).toEqual(['product.updated'])
  })

  it('moving an option reorders the options and every title', async () => {
    const res = await send('PATCH', `/products/${product.id}/options/${color().id}`, { position: 0 })
    expect(res.statusCode).toBe(200)
    const body = res.json() as Product
    expect(body.options.map((o) => [o.name, o.position])).toEqual([
      ['Color', 0],
      ['Talla', 1],
    ])
    expect(body.variants.map((v) => v.title)).toEqual(['Rojo / S', 'Azul / S', 'Rojo / M', 'Azul / M'])
    expect((await variantRows(product.id)).map((v) => v.title)).toEqual(['Rojo / S', 'Azul / S', 'Rojo / M', 'Azul / M'])
  })

  it('404 Opción no encontrada for an unknown option or one of another product; 422 for an empty body', async () => {
    const other = await sizedProduct()
    events.length = 0
    for (const url of [`/products/${product.id}/options/999999`, `/products/${product.id}/options/${other.options[0]!.id}`]) {
      const res = await send('PATCH', url, { name: 'x' })
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 404, body: { error: 'Opción no encontrada' } })
      expect((await send('DELETE', url)).json()).toEqual({ error: 'Opción no encontrada' })
    }
    expect((await send('PATCH', `/products/${product.id}/options/${talla().id}`, {})).json()).toEqual({ error: 'body must contain at least one field' })
    expect((await send('PATCH', `/products/${product.id}/options/${talla().id}`, { position: -1 })).json()).toEqual({
      error: 'position must not be less than 0',
    })
    expect(events).toEqual([])
  })

  it('409 when removing the option would leave two variants alike; nothing changes', async () => {
    const res = await send('DELETE', `/products/${product.id}/options/${color().id}`)
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 409, body: { error: 'Eliminar la opción dejaría variantes repetidas' } })
    expect(await t.app.db.selectFrom('product_options').select('id').where('product_id', '=', product.id).execute()).toHaveLength(2)
    expect(events).toEqual([])
  })

  it('removing an option its variants tell apart by the other option: titles and keys lose it', async () => {
    // Keep one variant per size: S/Rojo, M/Rojo (delete S/Azul and M/Azul).
    for (const v of product.variants.filter((v) => v.title?.endsWith('Azul'))) expect((await send('DELETE', `/variants/${v.id}`)).statusCode).toBe(200)
    const res = await send('DELETE', `/products/${product.id}/options/${color().id}`)
    expect(res.statusCode).toBe(200)
    const body = res.json() as Product
    expect(body.options.map((o) => [o.name, o.position])).toEqual([['Talla', 0]])
    expect(body.variants.map((v) => v.title)).toEqual(['S', 'M'])
    expect((await variantRows(product.id)).map((v) => v.values_key)).toEqual(body.variants.map((v) => String(v.optionValues[0]!.valueId)))
    expect(await t.app.db.selectFrom('product_option_values').select('id').where('option_id', '=', color().id).execute()).toEqual([])
  })

  it('a one-variant product losing its last option is back to a default variant', async () => {
    const single = await makeProduct(t.app)
    const withOption = (await addOption(single.id, { name: 'Talla', defaultValue: 'M' })).json() as Product
    const res = await send('DELETE', `/products/${single.id}/options/${withOption.options[0]!.id}`)
    expect(res.statusCode).toBe(200)
    const body = res.json() as Product
    expect(body.options).toEqual([])
    expect(body.variants).toEqual([expect.objectContaining({ title: null, optionValues: [] })])
    expect(await variantRows(single.id)).toEqual([expect.objectContaining({ title: null, values_key: '' })])
  })
})

describe('PATCH and DELETE /products/:id/options/:optionId/values/:valueId', () => {
  let product: Product
  beforeEach(async () => {
    product = await sizedProduct()
    events.length = 0
  })
  const option = (name: string) => product.options.find((o) => o.name === name)!
  const value = (optionName: string, text: string) => option(optionName).values.find((v) => v.value === text)!
  const url = (optionName: string, text: string) => `/products/${product.id}/options/${option(optionName).id}/values/${value(optionName, text).id}`

  it('renames a value: every title with it follows; 409 for a value of the option taken ignoring case', async () => {
    const taken = await send('PATCH', url('Color', 'Rojo'), { value: 'AZUL' })
    expect({ status: taken.statusCode, body: taken.json() }).toEqual({ status: 409, body: { error: 'El valor ya existe: AZUL' } })
    const res = await send('PATCH', url('Color', 'Rojo'), { value: 'Granate' })
    expect(res.statusCode).toBe(200)
    expect((res.json() as Product).variants.map((v) => v.title)).toEqual(['S / Granate', 'S / Azul', 'M / Granate', 'M / Azul'])
    expect(events.map((e) => e.type)).toEqual(['product.updated'])
  })

  it('moves a value among its option’s values', async () => {
    const res = await send('PATCH', url('Talla', 'L'), { position: 0 })
    expect((res.json() as Product).options[0]!.values.map((v) => [v.value, v.position])).toEqual([
      ['L', 0],
      ['S', 1],
      ['M', 2],
    ])
  })

  it('deletes a value no variant uses; 409 with the count for one in use; 404 for unknown or another option’s', async () => {
    const inUse = await send('DELETE', url('Talla', 'S'))
    expect({ status: inUse.statusCode, body: inUse.json() }).toEqual({ status: 409, body: { error: 'El valor está en uso por 2 variantes' } })
    const wrongOption = `/products/${product.id}/options/${option('Color').id}/values/${value('Talla', 'L').id}`
    expect((await send('DELETE', wrongOption)).json()).toEqual({ error: 'Opción no encontrada' })
    const unknownValue = await send('PATCH', `/products/${product.id}/options/${option('Color').id}/values/999999`, { value: 'x' })
    expect([unknownValue.statusCode, unknownValue.json()]).toEqual([404, { error: 'Opción no encontrada' }])
    expect(events).toEqual([])
    const res = await send('DELETE', url('Talla', 'L'))
    expect(res.statusCode).toBe(200)
    expect((res.json() as Product).options[0]!.values.map((v) => [v.value, v.position])).toEqual([
      ['S', 0],
      ['M', 1],
    ])
    expect(events.map((e) => e.type)).toEqual(['product.updated'])
  })
})
