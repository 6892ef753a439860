import { beforeEach, describe, expect, it } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { dialect, useTestApp } from '../helpers/app.js'
import { makeCategory, makeProduct, multipart, onlyVariantOf, productRow } from '../helpers/catalog.js'
import { bearer, type TestUser } from '../helpers/factories.js'
import { recordEvents } from '../helpers/outbox.js'
import { backendPid, waitUntilBlockedBy } from '../helpers/pg-locks.js'
import { countRows, stockOf } from '../helpers/shop.js'
import type { Product } from '../../src/modules/catalog/products.service.js'

// POST /imports/products: the file's checks, the matching of products and variants, the report, all or nothing,
// `partial`, `dryRun`, and the round trip of an export.

const t = useTestApp({ IMPORT_MAX_ROWS: '20', IMPORT_MAX_BYTES: '4000' }, { outbox: { enabled: false } })
const events = recordEvents(t)

const BOM = '\uFEFF'
const csv = (lines: string[]) => Buffer.from(lines.join('\r\n') + '\r\n', 'utf8')

async function upload(file: Buffer | null, query = '', user: TestUser | null = t.admin, field = 'file') {
  const form = await multipart({}, file === null ? [] : [{ field, filename: 'products.csv', type: 'text/csv', data: file }])
  return t.app.inject({ method: 'POST', url: `/imports/products${query}`, headers: { ...form.headers, ...(user ? bearer(user) : {}) }, payload: form.payload })
}

const getProduct = async (id: number) => (await t.app.inject({ url: `/products/${id}`, headers: bearer(t.admin) })).json() as Product
const snapshot = async () => ({
  products: await countRows(t.app, 'products'),
  variants: await countRows(t.app, 'product_variants'),
  options: await countRows(t.app, 'product_options'),
  values: await countRows(t.app, 'product_option_values'),
  tags: await countRows(t.app, 'product_tags'),
  updated: (await t.app.db.selectFrom('products').select(['id', 'updated_at']).orderBy('id').execute()).map((r) => `${r.id}@${r.updated_at}`).join(','),
  vUpdated: (await t.app.db.selectFrom('product_variants').select(['id', 'updated_at', 'price_cents', 'stock']).orderBy('id').execute())
    .map((r) => `${r.id}@${r.updated_at}:${r.price_cents}:${r.stock}`)
    .join(','),
})

let seq = 0
const unique = (prefix: string) => `${prefix}-${++seq}-${process.pid}`

beforeEach(() => {
  events.length = 0
})

describe('the file', () => {
  it('401 without a token, 403 for a customer', async () => {
    expect((await upload(csv(['name,price', 'A,1']), '', null)).statusCode).toBe(401)
    expect((await upload(csv(['name,price', 'A,1']), '', t.customer)).statusCode).toBe(403)
  })

  it('every refusal of the file itself, with its message; nothing written', async () => {
    const before = await snapshot()
    const cases: Array<[Buffer | null, number, string]> = [
      [null, 422, 'file should not be empty'],
      [Buffer.alloc(0), 422, 'file should not be empty'],
      [csv(['name,stock', 'A,1']), 422, messages.importMissingColumn('price')],
      [csv(['price,stock', '1,1']), 422, messages.importMissingColumn('name')],
      [csv(['name,price,colour', 'A,1,red']), 422, messages.importUnknownColumn('colour')],
      [csv(['name,price', 'A,1,extra']), 422, messages.importInvalidCsv('Invalid Record Length: expect 2, got 3 on line 2')],
      [csv(['name,price', '"A,1']), 422, messages.importInvalidCsv('Quote Not Closed: the parsing is finished with an opening quote at line 3')],
      [csv(['name,price', ...Array.from({ length: 21 }, (_, i) => `P${i},1`)]), 422, messages.importTooManyRows(20)],
    ]
    for (const [file, status, message] of cases) {
      const res = await upload(file)
      expect({ status: res.statusCode, body: res.json() }, message).toEqual({ status, body: { error: message } })
    }
    expect(await snapshot()).toEqual(before)
    expect(events).toEqual([])
  })

  it('over IMPORT_MAX_BYTES: 413', async () => {
    const res = await upload(csv(['name,price', ...Array.from({ length: 15 }, () => `${'x'.repeat(300)},1`)]))
    expect(res.statusCode).toBe(413)
    expect(res.json()).toEqual({ error: messages.bodyTooLarge })
  })

  it('a file without a form: 422 file should not be empty', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/imports/products', headers: bearer(t.admin), payload: {} })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'file should not be empty' })
  })
})

describe('creating and updating', () => {
  it('new products: one with options over several rows, one with its default variant; the report counts them', async () => {
    const category = await makeCategory(t.app)
    const slug = unique('camiseta')
    const sku = unique('SKU')
    const res = await upload(
      csv([
        `${BOM}name,slug,price,stock,sku,category,tags,option1_name,option1_value,option2_name,option2_value`,
        `Camiseta,${slug},10,3,${sku}-S,${category.slug},"verano, algodón",Talla,S,Color,Rojo`,
        `Camiseta,${slug},12.5,2,${sku}-M,${category.slug},"verano, algodón",Talla,M,Color,Rojo`,
        `'=Taza,,4.90,7,,,,,,,`,
      ]),
    )
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      dryRun: false,
      partial: false,
      applied: true,
      rows: 3,
      created: { products: 2, variants: 3 },
      updated: { products: 0, variants: 0 },
      unchanged: 0,
      errors: [],
    })
    const shirt = await t.app.db.selectFrom('products').selectAll().where('slug', '=', slug).executeTakeFirstOrThrow()
    const product = await getProduct(shirt.id)
    expect(product).toMatchObject({
      name: 'Camiseta',
      status: 'draft',
      categoryId: category.id,
      tags: ['verano', 'algodón'],
      stock: 5,
      priceRange: { min: 10, max: 12.5 },
    })
    expect(product.options.map((o) => [o.name, o.values.map((v) => v.value)])).toEqual([
      ['Talla', ['S', 'M']],
      ['Color', ['Rojo']],
    ])
    expect(product.variants.map((v) => [v.title, v.sku, v.price, v.stock])).toEqual([
      ['S / Rojo', `${sku}-S`, 10, 3],
      ['M / Rojo', `${sku}-M`, 12.5, 2],
    ])
    // The export's leading quote is taken off: the name is the formula's text.
    const mug = await t.app.db.selectFrom('products').selectAll().where('name', '=', '=Taza').executeTakeFirstOrThrow()
    expect(mug).toMatchObject({ slug: 'taza', price_cents: 490, stock: 7, status: 'draft' })
    expect(events.map((e) => e.type)).toEqual(['product.created', 'product.created'])
  })

  it('matching: by slug, by product_id, variants by variant_id, by SKU, or the one variant; absent columns left alone', async () => {
    const a = await makeProduct(t.app, { priceCents: 1000, stock: 1, description: 'keep me' })
    const b = await makeProduct(t.app, { priceCents: 2000, stock: 2 })
    const sku = unique('B')
    await t.app.db.updateTable('product_variants').set({ sku, sku_key: sku.toLowerCase() }).where('product_id', '=', b.id).execute()
    const bVariant = (await getProduct(b.id)).variants[0]!.id
    // Read (and, with the product read cache on, kept) before the import: the import must empty the cache.
    expect(((await t.app.inject({ url: `/products/${a.id}` })).json() as Product).price).toBe(10)
    const newSlug = unique('renamed')
    const res = await upload(
      csv(['product_id,slug,name,price,stock,variant_id,sku', `,${a.slug},${a.name},11,,,`, `${b.id},${newSlug},${b.name},21,5,,${sku}`]),
    )
    expect(res.json()).toMatchObject({ applied: true, created: { products: 0, variants: 0 }, updated: { products: 1, variants: 2 }, unchanged: 0, errors: [] })
    expect(await getProduct(a.id)).toMatchObject({ price: 11, stock: 1, description: 'keep me' })
    expect(((await t.app.inject({ url: `/products/${a.id}` })).json() as Product).price).toBe(11)
    expect(await getProduct(b.id)).toMatchObject({ slug: newSlug, price: 21, stock: 5 })
    // The old slug still answers, with a redirect.
    expect((await t.app.inject({ url: `/products/${b.slug}` })).statusCode).toBe(301)
    const byVariant = await upload(csv(['product_id,name,price,variant_id', `${b.id},${b.name},22,${bVariant}`]))
    expect(byVariant.json()).toMatchObject({ updated: { products: 0, variants: 1 }, errors: [] })
    expect((await getProduct(b.id)).price).toBe(22)
    expect(events.map((e) => e.type)).toEqual(['product.updated', 'product.updated', 'product.updated'])
  })
})

describe('row errors', () => {
  it('each message, on its row and column; all or nothing: one error writes nothing at all', async () => {
    const several = await makeProduct(t.app, { priceCents: 1000 })
    await t.app.inject({
      method: 'POST',
      url: `/products/${several.id}/options`,
      headers: bearer(t.admin),
      payload: { name: 'Talla', values: ['S', 'M'], defaultValue: 'S' },
    })
    await t.app.inject({ method: 'POST', url: `/products/${several.id}/variants`, headers: bearer(t.admin), payload: { options: { Talla: 'M' }, price: 10 } })
    const other = await makeProduct(t.app)
    const otherSku = unique('OTHER')
    await t.app.db.updateTable('product_variants').set({ sku: otherSku, sku_key: otherSku.toLowerCase() }).where('product_id', '=', other.id).execute()
    const plain = await makeProduct(t.app)
    const fresh = unique('fresh')
    const valid = unique('valid')
    const before = await snapshot()
    events.length = 0
    const file = csv([
      'product_id,slug,name,price,stock,variant_id,sku,category,option1_name,option1_value',
      `,${valid},Válido,5,1,,,,,`,
      `${plain.id},,${plain.name},abc,,,,,,`,
      `,${several.slug},${several.name},5,,,,,Talla,`,
      `,${fresh},Nuevo,5,,,,no-such-category,,`,
      `,${fresh},Otro nombre,5,,,,no-such-category,,`,
    ])
    const res = await upload(file)
    expect(res.statusCode).toBe(200)
    const report = res.json()
    expect(report).toMatchObject({ dryRun: false, partial: false, applied: false, rows: 5 })
    expect(report.errors).toEqual([
      { row: 3, column: 'price', message: 'price must be a number conforming to the specified constraints' },
      { row: 4, column: 'option1_value', message: messages.optionsIncomplete },
      { row: 6, column: 'name', message: messages.importRowsDisagree(fresh, 'name') },
    ])
    // The database-level checks run for products whose rows are all valid.
    const second = await upload(
      csv([
        'product_id,slug,name,price,variant_id,sku,category,option1_name,option1_value',
        `${plain.id},,${plain.name},5,999999,,,,`,
        `,${other.slug},${other.name},5,,${unique('FREE')},,,`,
        `,${several.slug},${several.name},5,,,,,`,
        `,${unique('nocat')},Nuevo,5,,,no-such-category,,`,
        `,${several.slug}-x,X,5,,,,,`,
      ]),
    )
    expect(second.json().errors).toEqual([
      { row: 2, column: 'variant_id', message: messages.importVariantNotFound(999999) },
      { row: 4, column: 'sku', message: messages.importNoSku(several.slug) },
      { row: 5, column: 'category', message: messages.importCategoryMissing('no-such-category') },
    ])
    expect(second.json()).toMatchObject({ applied: false, created: { products: 1, variants: 1 }, updated: { products: 0, variants: 1 } })
    const third = await upload(
      csv([
        'slug,name,price,sku,option1_name,option1_value',
        `${plain.slug},${plain.name},5,${otherSku},,`,
        `${several.slug},${several.name},5,,Color,Azul`,
        `${unique('mix')},Mezcla,5,,,`,
      ]),
    )
    expect(third.json().errors).toEqual([
      { row: 2, column: 'sku', message: messages.importSkuOfAnotherVariant(otherSku) },
      { row: 3, column: 'option1_name', message: messages.importOptionsDisagree(several.slug) },
    ])
    expect(await snapshot()).toEqual(before)
    expect(events).toEqual([])
  })

  it('the API’s own rules: a taken SKU, an unknown tax class, a status an imageless product cannot have', async () => {
    const taken = unique('TAKEN')
    const holder = await makeProduct(t.app)
    await t.app.db.updateTable('product_variants').set({ sku: taken, sku_key: taken.toLowerCase() }).where('product_id', '=', holder.id).execute()
    const res = await upload(
      csv([
        'slug,name,price,sku,tax_class,status',
        `${unique('a')},A,1,${taken.toLowerCase()},,`,
        `${unique('b')},B,1,,no-such-class,`,
        `${unique('c')},C,1,,,active`,
        `${unique('d')},D,1,bad sku!,,`,
      ]),
    )
    expect(res.json().errors).toEqual([
      { row: 2, column: 'sku', message: messages.skuTaken(taken.toLowerCase()) },
      { row: 3, column: 'tax_class', message: messages.taxClassUnknown },
      { row: 4, column: 'status', message: messages.imagelessProduct },
      { row: 5, column: 'sku', message: "sku must be null or 1 to 64 letters, digits, '.', '_', '-' or '/'" },
    ])
  })
})

describe('partial and dry run', () => {
  const file = () => {
    const ok = unique('ok')
    return { ok, file: csv(['slug,name,price', `${ok},Bien,3`, `${unique('bad')},Mal,-1`]) }
  }

  it('partial=true writes the products whose rows are all valid', async () => {
    const { ok, file: body } = file()
    const res = await upload(body, '?partial=true')
    expect(res.json()).toMatchObject({
      partial: true,
      applied: true,
      created: { products: 1, variants: 1 },
      errors: [{ row: 3, column: 'price', message: 'price must not be less than 0' }],
    })
    expect(await t.app.db.selectFrom('products').select('id').where('slug', '=', ok).executeTakeFirst()).toBeDefined()
    expect(events.map((e) => e.type)).toEqual(['product.created'])
  })

  it('partial=true: a product refused halfway through its writes leaves nothing behind (its savepoint), the others are written', async () => {
    const twice = unique('twice')
    const fine = unique('fine')
    const before = await snapshot()
    const res = await upload(
      csv(['slug,name,price,option1_name,option1_value', `${twice},Doble,5,Talla,S`, `${twice},Doble,6,Talla,s`, `${fine},Bien,7,,`]),
      '?partial=true',
    )
    expect(res.json()).toMatchObject({
      applied: true,
      created: { products: 1, variants: 1 },
      errors: [{ row: 3, column: 'option1_value', message: messages.variantExists('s') }],
    })
    expect(await t.app.db.selectFrom('products').select('id').where('slug', '=', twice).executeTakeFirst()).toBeUndefined()
    expect(await t.app.db.selectFrom('products').select('id').where('slug', '=', fine).executeTakeFirst()).toBeDefined()
    const after = await snapshot()
    expect({
      products: after.products - before.products,
      variants: after.variants - before.variants,
      options: after.options - before.options,
      values: after.values - before.values,
    }).toEqual({
      products: 1,
      variants: 1,
      options: 0,
      values: 0,
    })
    expect(events.map((e) => e.type)).toEqual(['product.created'])
  })

  it('dryRun=true reports what would happen and writes nothing, with or without partial', async () => {
    for (const query of ['?dryRun=true', '?dryRun=true&partial=true']) {
      const { ok, file: body } = file()
      const before = await snapshot()
      const res = await upload(body, query)
      expect(res.json()).toMatchObject({ dryRun: true, applied: false, created: { products: 1, variants: 1 }, errors: [{ row: 3 }] })
      expect(await t.app.db.selectFrom('products').select('id').where('slug', '=', ok).executeTakeFirst()).toBeUndefined()
      expect(await snapshot()).toEqual(before)
    }
    expect(events).toEqual([])
  })
})

describe('the order of the products in the file', () => {
  it('products listed by descending id: applied in file order, so a SKU one frees another takes, and the first to claim a slug wins; the report names the same rows', async () => {
    const [p1, p2, p3, p4, p5] = [
      await makeProduct(t.app),
      await makeProduct(t.app),
      await makeProduct(t.app),
      await makeProduct(t.app),
      await makeProduct(t.app),
    ]
    const sku = unique('MOVED')
    await t.app.db.updateTable('product_variants').set({ sku, sku_key: sku.toLowerCase() }).where('product_id', '=', p4.id).execute()
    const renamed = unique('renamed')
    const price = (p: { priceCents: number }) => (p.priceCents / 100).toFixed(2)
    const file = csv([
      'product_id,slug,name,price,variant_id,sku',
      `${p5.id},,${p5.name},${price(p5)},999999,`,
      // The SKU leaves the higher id's variant, then the lower id's takes it.
      `${p4.id},,${p4.name},${price(p4)},,${sku}-2`,
      `${p3.id},,${p3.name},${price(p3)},,${sku}`,
      // The slug goes to the row that asks first: the existing product, then a new one is refused it.
      `${p2.id},${renamed},${p2.name},${price(p2)},,`,
      `,${renamed},Nuevo,5,,`,
      `${p1.id},,${p1.name},${price(p1)},,`,
    ])
    const expected = {
      rows: 6,
      created: { products: 0, variants: 0 },
      updated: { products: 1, variants: 2 },
      unchanged: 1,
      errors: [
        { row: 2, column: 'variant_id', message: messages.importVariantNotFound(999999) },
        { row: 6, column: 'slug', message: messages.slugTaken },
      ],
    }
    const before = await snapshot()
    expect((await upload(file)).json()).toEqual({ dryRun: false, partial: false, applied: false, ...expected })
    expect(await snapshot()).toEqual(before)
    events.length = 0
    expect((await upload(file, '?partial=true')).json()).toEqual({ dryRun: false, partial: true, applied: true, ...expected })
    const skuOf = async (productId: number) =>
      (await t.app.db.selectFrom('product_variants').select('sku').where('product_id', '=', productId).executeTakeFirstOrThrow()).sku
    expect([await skuOf(p4.id), await skuOf(p3.id)]).toEqual([`${sku}-2`, sku])
    expect((await getProduct(p2.id)).slug).toBe(renamed)
    // The events in the file's order too.
    expect(events.map((e) => [e.type, (e.data as { id: number }).id])).toEqual([
      ['product.updated', p4.id],
      ['product.updated', p3.id],
      ['product.updated', p2.id],
    ])
  })

  // Checkout locks the products it sells in ascending id order (each one's variants, then its row). An import that
  // locked them in its file's order could hold the higher id while waiting for the lower one that a checkout holds,
  // the checkout waiting for the higher: PostgreSQL aborted one of them (deadlock_detected). The interleaving is
  // forced: the checkout's locks are taken by the inventory, as checkout takes them, in two steps.
  it.skipIf(dialect !== 'postgres')('an import listing the higher id first never deadlocks with a checkout of both (PostgreSQL)', async () => {
    const [low, high] = [await makeProduct(t.app, { stock: 5 }), await makeProduct(t.app, { stock: 5 })]
    const lines = [
      { productId: low.id, variantId: await onlyVariantOf(t.app, low.id), quantity: 1 },
      { productId: high.id, variantId: await onlyVariantOf(t.app, high.id), quantity: 1 },
    ]
    let lowTaken!: () => void
    const lowTakenOnce = new Promise<void>((resolve) => (lowTaken = resolve))
    let importSent!: () => void
    const importSentOnce = new Promise<void>((resolve) => (importSent = resolve))
    const checkout = t.app.db.transaction().execute(async (trx) => {
      await t.app.services.inventory.reserve(trx, [lines[0]!])
      const pid = await backendPid(trx)
      lowTaken()
      await importSentOnce
      await waitUntilBlockedBy(t.app.db, pid) // the import now waits for the lower id
      await t.app.services.inventory.reserve(trx, [lines[1]!])
    })
    await lowTakenOnce
    const imported = upload(csv(['product_id,name,price,stock', `${high.id},${high.name},20,7`, `${low.id},${low.name},10,7`]))
    importSent()
    const [res] = await Promise.all([imported, checkout])
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ applied: true, updated: { products: 0, variants: 2 }, errors: [] })
    // The import came after the checkout: its stock is the file's.
    expect([await stockOf(t.app, low.id), await stockOf(t.app, high.id)]).toEqual([7, 7])
  })

  // Two writers each wanting a slug the other has written and not committed wait for each other through the unique
  // index, whatever order they lock products in: PostgreSQL aborts one. The interleaving is forced: another
  // transaction writes the import's second slug; the import writes its first and waits for the second; the other then
  // writes the first. The import waited first, so PostgreSQL's check finds the cycle there and aborts the import.
  it.skipIf(dialect !== 'postgres')('an import aborted to break a deadlock runs again and applies the file (PostgreSQL)', async () => {
    const stamp = `${Date.now()}-${process.pid}`
    const [alfa, beta] = [`alfa-${stamp}`, `beta-${stamp}`]
    class GiveBack extends Error {}
    let betaHeld!: () => void
    const betaHeldOnce = new Promise<void>((resolve) => (betaHeld = resolve))
    let importSent!: () => void
    const importSentOnce = new Promise<void>((resolve) => (importSent = resolve))
    const other = t.app.db
      .transaction()
      .execute(async (trx) => {
        await trx
          .insertInto('products')
          .values({ ...productRow({ name: 'Beta elsewhere' }), slug: beta })
          .execute()
        const pid = await backendPid(trx)
        betaHeld()
        await importSentOnce
        await waitUntilBlockedBy(t.app.db, pid, 10_000) // the import has written alfa and waits for beta
        // Answered once PostgreSQL has aborted the import (about deadlock_timeout, 1 s, after the import began waiting).
        await trx
          .insertInto('products')
          .values({ ...productRow({ name: 'Alfa elsewhere' }), slug: alfa })
          .execute()
        throw new GiveBack()
      })
      .catch((error: unknown) => {
        if (!(error instanceof GiveBack)) throw error
      })
    await betaHeldOnce
    const imported = upload(csv(['name,slug,price,stock', `Alfa,${alfa},10,1`, `Beta,${beta},20,1`]))
    importSent()
    const [res] = await Promise.all([imported, other])
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ applied: true, created: { products: 2, variants: 2 }, errors: [] })
    const made = await t.app.db.selectFrom('products').select(['id', 'name', 'slug']).where('slug', 'in', [alfa, beta]).orderBy('slug').execute()
    expect(made.map(({ name, slug }) => ({ name, slug }))).toEqual([
      { name: 'Alfa', slug: alfa },
      { name: 'Beta', slug: beta },
    ])
    // The round trip below exports every product: these two go.
    for (const { id } of made) expect((await t.app.inject({ method: 'DELETE', url: `/products/${id}`, headers: bearer(t.admin) })).statusCode).toBe(200)
  })
})

describe('the round trip', () => {
  it('re-importing an export reports 0 created, 0 updated, and writes and emits nothing; neutralised cells come back as they were', async () => {
    const odd = await makeProduct(t.app, { name: '+34 600', description: "'quoted\r\nand =formula", priceCents: 1999 })
    await t.app.db
      .updateTable('products')
      .set({ tags: JSON.stringify(['@tag', 'normal']) })
      .where('id', '=', odd.id)
      .execute()
    await t.app.db.deleteFrom('product_tags').where('product_id', '=', odd.id).execute()
    await t.app.db
      .insertInto('product_tags')
      .values([
        { product_id: odd.id, tag: '@tag', tag_key: '@tag', position: 0 },
        { product_id: odd.id, tag: 'normal', tag_key: 'normal', position: 1 },
      ])
      .execute()
    const exported = await t.app.inject({ url: '/exports/products.csv', headers: bearer(t.admin) })
    expect(exported.body).toContain("'+34 600")
    const before = await snapshot()
    const res = await upload(exported.rawPayload)
    const rows = (await t.app.db.selectFrom('product_variants').select('id').execute()).length
    expect(res.json()).toEqual({
      dryRun: false,
      partial: false,
      applied: true,
      rows,
      created: { products: 0, variants: 0 },
      updated: { products: 0, variants: 0 },
      unchanged: rows,
      errors: [],
    })
    expect(await snapshot()).toEqual(before)
    expect(events).toEqual([])
    expect(await getProduct(odd.id)).toMatchObject({ name: '+34 600', description: "'quoted\r\nand =formula", tags: ['@tag', 'normal'] })
  })
})

describe('runs of new products written together', () => {
  // A run of new products of one row each (no options, a slug of their own) is written in a few statements for the
  // whole run; anything a check would refuse sends the run product by product. Either way the result is the same.
  const columns = 'name,slug,description,price,stock,sku,compare_at_price,category,tags,tax_class,variant_tax_class'
  const comparable = (product: Product) => {
    const { id: _id, slug: _slug, createdAt: _c, updatedAt: _u, variants, ...rest } = product as Product & { createdAt: string; updatedAt: string }
    return {
      ...rest,
      variants: variants.map(({ id: _v, productId: _p, sku: _s, createdAt: _vc, updatedAt: _vu, ...variant }) => variant),
    }
  }

  it('each product as it would be alone: rows, tags, its variant, the old slug it takes, and the event that answers it', async () => {
    const category = await makeCategory(t.app)
    const reduced = `reducido_${++seq}_${process.pid}`
    expect(
      (await t.app.inject({ method: 'POST', url: '/tax-classes', headers: bearer(t.admin), payload: { code: reduced, name: 'Reducido' } })).statusCode,
    ).toBe(201)
    // Another product's old slug (a redirect): the new product takes it, and it no longer redirects.
    const renamed = await makeProduct(t.app)
    const oldSlug = unique('old')
    await t.app.db.updateTable('products').set({ slug: oldSlug }).where('id', '=', renamed.id).execute()
    expect(
      (await t.app.inject({ method: 'PATCH', url: `/products/${renamed.id}`, headers: bearer(t.admin), payload: { slug: unique('new') } })).statusCode,
    ).toBe(200)
    expect((await t.app.db.selectFrom('product_slugs').select('slug').where('slug', '=', oldSlug).execute()).length).toBe(1)
    events.length = 0
    const line = (slug: string, sku: string) => `Té verde,${slug},"Hojas, enteras",4.50,12,${sku},5.95,${category.slug},"té, verde",${reduced},${reduced}`
    const together = [oldSlug, unique('te'), unique('te')]
    const alone = unique('te')
    const res = await upload(csv([columns, ...together.map((slug, i) => line(slug, `${slug}-${i}`)), `Solo,${unique('solo')},,1,1,,,,,,`]))
    expect(res.json()).toMatchObject({ applied: true, created: { products: 4, variants: 4 }, errors: [] })
    // One product alone (a run of one goes product by product): the same cells give the same product.
    expect((await upload(csv([columns, line(alone, `${alone}-x`)]))).json()).toMatchObject({ created: { products: 1, variants: 1 } })
    const idOf = async (slug: string) => (await t.app.db.selectFrom('products').select('id').where('slug', '=', slug).executeTakeFirstOrThrow()).id
    const reference = await getProduct(await idOf(alone))
    expect(reference).toMatchObject({
      status: 'draft',
      categoryId: category.id,
      tags: ['té', 'verde'],
      taxClass: reduced,
      stock: 12,
      priceRange: { min: 4.5, max: 4.5 },
    })
    expect(reference.variants).toMatchObject([{ price: 4.5, compareAtPrice: 5.95, stock: 12, taxClass: reduced, title: null, position: 0, optionValues: [] }])
    for (const [i, slug] of together.entries()) {
      const product = await getProduct(await idOf(slug))
      expect(comparable(product)).toEqual(comparable(reference))
      expect(product.variants[0]!.sku).toBe(`${slug}-${i}`)
      // The event carries the product as GET answers it.
      expect(events.filter((e) => e.type === 'product.created').map((e) => e.data)).toContainEqual(product)
      expect(
        await t.app.db.selectFrom('product_tags').select(['tag', 'tag_key', 'position']).where('product_id', '=', product.id).orderBy('position').execute(),
      ).toEqual([
        { tag: 'té', tag_key: 'té', position: 0 },
        { tag: 'verde', tag_key: 'verde', position: 1 },
      ])
      const variant = await t.app.db.selectFrom('product_variants').selectAll().where('product_id', '=', product.id).executeTakeFirstOrThrow()
      expect(variant).toMatchObject({ sku_key: `${slug}-${i}`.toLowerCase(), values_key: '', image_id: null })
    }
    expect((await t.app.db.selectFrom('product_slugs').select('slug').where('slug', '=', oldSlug).execute()).length).toBe(0)
    expect(events.map((e) => e.type)).toEqual(Array(5).fill('product.created'))
  })

  it('a run with a SKU twice, or an unknown category, goes product by product: each error on its row; all or nothing, or partial', async () => {
    const sku = unique('DUP')
    const slugs = [unique('r'), unique('r'), unique('r'), unique('r')]
    const file = csv([
      'name,slug,price,sku,category',
      `Uno,${slugs[0]},1,${sku},`,
      `Dos,${slugs[1]},1,${sku.toLowerCase()},`,
      `Tres,${slugs[2]},1,,no-such-category`,
      `Cuatro,${slugs[3]},1,,`,
    ])
    const expected = [
      { row: 3, column: 'sku', message: messages.skuTaken(sku.toLowerCase()) },
      { row: 4, column: 'category', message: messages.importCategoryMissing('no-such-category') },
    ]
    const before = await snapshot()
    expect((await upload(file)).json()).toMatchObject({ applied: false, created: { products: 2, variants: 2 }, errors: expected })
    expect(await snapshot()).toEqual(before)
    expect(events).toEqual([])
    expect((await upload(file, '?partial=true')).json()).toMatchObject({ applied: true, created: { products: 2, variants: 2 }, errors: expected })
    const made = await t.app.db.selectFrom('products').select('slug').where('slug', 'in', slugs).orderBy('id').execute()
    expect(made.map((row) => row.slug)).toEqual([slugs[0], slugs[3]])
    expect(events.map((e) => e.type)).toEqual(['product.created', 'product.created'])
  })
})

describe('runs of new products across the run size', () => {
  const big = useTestApp({ IMPORT_MAX_ROWS: '500', IMPORT_MAX_BYTES: '100000' }, { outbox: { enabled: false } })
  const bigEvents = recordEvents(big)

  it('450 new products (runs of 200, 200 and 50), one of them refused in the second run: the others are written, each once', async () => {
    const tag = unique('lote')
    const lines = Array.from({ length: 450 }, (_, i) => `Producto ${i},${tag}-${i},${i + 1},${i % 7},${tag}-SKU-${i === 299 ? 100 : i},${tag}`)
    const file = csv(['name,slug,price,stock,sku,tags', ...lines])
    const error = { row: 301, column: 'sku', message: messages.skuTaken(`${tag}-SKU-100`) }
    const count = async () =>
      Number(
        (
          await big.app.db
            .selectFrom('products')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('slug', 'like', `${tag}-%`)
            .executeTakeFirstOrThrow()
        ).n,
      )
    const upload = async (query: string) => {
      const form = await multipart({}, [{ field: 'file', filename: 'products.csv', type: 'text/csv', data: file }])
      return big.app.inject({ method: 'POST', url: `/imports/products${query}`, headers: { ...form.headers, ...bearer(big.admin) }, payload: form.payload })
    }
    expect((await upload('')).json()).toMatchObject({ applied: false, created: { products: 449, variants: 449 }, errors: [error] })
    expect(await count()).toBe(0)
    expect(bigEvents).toEqual([])
    expect((await upload('?partial=true')).json()).toMatchObject({ applied: true, created: { products: 449, variants: 449 }, errors: [error] })
    expect(await count()).toBe(449)
    const rows = await big.app.db
      .selectFrom('products as p')
      .innerJoin('product_variants as v', 'v.product_id', 'p.id')
      .innerJoin('product_tags as t', 't.product_id', 'p.id')
      .select(['p.slug', 'p.price_cents', 'p.stock', 'v.sku', 'v.price_cents as variant_price', 'v.stock as variant_stock', 't.tag'])
      .where('p.slug', 'like', `${tag}-%`)
      .execute()
    expect(rows).toHaveLength(449)
    for (const row of rows) {
      const i = Number(row.slug!.slice(tag.length + 1))
      expect(row).toEqual({
        slug: `${tag}-${i}`,
        price_cents: (i + 1) * 100,
        stock: i % 7,
        sku: `${tag}-SKU-${i}`,
        variant_price: (i + 1) * 100,
        variant_stock: i % 7,
        tag,
      })
    }
    expect(rows.map((row) => row.slug)).not.toContain(`${tag}-299`)
    expect(bigEvents.filter((e) => e.type === 'product.created')).toHaveLength(449)
  })

  const bigUpload = async (file: Buffer) => {
    const form = await multipart({}, [{ field: 'file', filename: 'products.csv', type: 'text/csv', data: file }])
    return big.app.inject({ method: 'POST', url: '/imports/products', headers: { ...form.headers, ...bearer(big.admin) }, payload: form.payload })
  }
  const bigSnapshot = async () =>
    (await big.app.db.selectFrom('product_variants').select(['id', 'sku', 'updated_at']).orderBy('id').execute())
      .map((r) => `${r.id}:${r.sku}@${r.updated_at}`)
      .join(',')

  it('a variant named twice: the second row sees the variant as the first left it: a SKU given away in between is refused', async () => {
    const slug = unique('cam')
    const [a, b, x] = [unique('A'), unique('B'), unique('X')]
    const made = await bigUpload(csv(['name,slug,price,sku,option1_name,option1_value', `Cam,${slug},10,${a},Talla,S`, `Cam,${slug},10,${b},Talla,M`]))
    expect(made.json()).toMatchObject({ applied: true, errors: [] })
    const id = (await big.app.db.selectFrom('products').select('id').where('slug', '=', slug).executeTakeFirstOrThrow()).id
    const [v1, v2] = ((await big.app.inject({ url: `/products/${id}`, headers: bearer(big.admin) })).json() as Product).variants.map((v) => v.id)
    const before = await bigSnapshot()
    // V1 gives its SKU A away (to X), V2 takes A, then V1 asks for A again: V2 holds it now.
    const res = await bigUpload(csv(['product_id,variant_id,name,price,sku', `${id},${v1},Cam,10,${x}`, `${id},${v2},Cam,10,${a}`, `${id},${v1},Cam,10,${a}`]))
    expect(res.json()).toMatchObject({ applied: false, errors: [{ row: 4, column: 'sku', message: messages.importSkuOfAnotherVariant(a) }] })
    expect(await bigSnapshot()).toEqual(before)
  })

  it('200 new products of 50 tags each are still one run written together (their tag rows in several statements)', async () => {
    const tag = unique('etiquetas')
    const tags = Array.from({ length: 50 }, (_, i) => `t${i}`)
    const lines = Array.from({ length: 200 }, (_, i) => `P${i},${tag}-${i},1,"${tags.join(',')}"`)
    const form = await multipart({}, [{ field: 'file', filename: 'products.csv', type: 'text/csv', data: csv(['name,slug,price,tags', ...lines]) }])
    const res = await big.app.inject({ method: 'POST', url: '/imports/products', headers: { ...form.headers, ...bearer(big.admin) }, payload: form.payload })
    expect(res.json()).toMatchObject({ applied: true, created: { products: 200, variants: 200 }, errors: [] })
    const made = await big.app.db.selectFrom('products').select(['id', 'created_at']).where('slug', 'like', `${tag}-%`).execute()
    // Written together, the run's products share one time; product by product, each has its own.
    expect(new Set(made.map((row) => row.created_at)).size).toBe(1)
    const tagRows = await big.app.db
      .selectFrom('product_tags')
      .select(['product_id', 'tag', 'position'])
      .where(
        'product_id',
        'in',
        made.map((row) => row.id),
      )
      .execute()
    expect(tagRows).toHaveLength(200 * 50)
    expect(tagRows.every((row) => row.tag === `t${row.position}`)).toBe(true)
  })
})
