import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Kysely, sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { refreshProductAggregates } from '../../src/modules/catalog/variants.repository.js'
import { catalogCacheOn, testConfig } from '../helpers/app.js'
import { type Row, useMigrationDatabase } from '../helpers/migrations.js'
import { bearer, makeUser } from '../helpers/factories.js'

// The catalog migration on a shop with data: seeded at the schema before it, migrated up, checked row by row, used by
// the service, taken down (everything as it was, schema included) and up again. `down` refuses, changing nothing,
// when two categories of one name live under different parents, and merges the cart lines of one product's variants.

const CATALOG = '2026-11-28T0000-catalog'
const BEFORE = '2026-11-27T0000-order-lifecycle'
const now = '2026-11-24T10:00:00.000Z'

const migrating = useMigrationDatabase()

/** Every row of the tables the migration reads or rewrites (and a few it must leave alone), in key order. */
async function dataOf(db: Kysely<any>): Promise<Record<string, Row[]>> {
  const keys: Record<string, string> = {
    users: 'id',
    categories: 'id',
    products: 'id',
    cart_items: 'id',
    orders: 'id',
    order_items: 'id',
    payments: 'order_id',
    product_counts: 'category_id',
  }
  const data: Record<string, Row[]> = {}
  for (const [table, key] of Object.entries(keys)) data[table] = await db.selectFrom(table).selectAll().orderBy(key).execute()
  // A count of 0 and no count read alike (the list answers 0): the migration recounts, keeping no zeros.
  data.product_counts = data.product_counts!.filter((count) => Number(count.total) !== 0)
  data.sequences = await idSequences(db)
  return data
}

/** Where each table's ids go on from: an id once used is never given again (SQLite's AUTOINCREMENT, PostgreSQL's serial). */
async function idSequences(db: Kysely<any>): Promise<Row[]> {
  const tables = ['categories', 'products', 'cart_items', 'orders', 'order_items']
  if (!migrating.isPg) {
    return (await sql<Row>`select name, seq from sqlite_sequence where name in (${sql.join(tables)}) order by name`.execute(db)).rows
  }
  const rows: Row[] = []
  for (const table of tables) {
    const { rows: found } = await sql<Row>`select last_value, is_called from ${sql.table(`${table}_id_seq`)}`.execute(db)
    rows.push({ name: table, ...found[0] })
  }
  return rows
}

/** The seeded shop's ids, by the names the test gives them. */
const ids = {} as Record<
  | 'cafeYTe'
  | 'te'
  | 'teBang'
  | 'digits'
  | 'facetsCategory'
  | 'deletedCategory'
  | 'molido'
  | 'molido2'
  | 'molido3'
  | 'teVerde'
  | 'number'
  | 'facets'
  | 'taza'
  | 'long'
  | 'gone'
  | 'ana'
  | 'bea'
  | 'anaMolido'
  | 'anaTeVerde'
  | 'anaGoneLine'
  | 'deletedLine'
  | 'beaMolido'
  | 'beaFacets'
  | 'pendingOrder'
  | 'paidOrder',
  number
>
const longName = `${'Ä'.repeat(60)} ${'b'.repeat(60)}`
let seeded: Record<string, Row[]>
let schemaBefore: Row[]

async function insert(table: string, values: Row): Promise<number> {
  const row = await migrating.raw.insertInto(table).values(values).returning('id').executeTakeFirstOrThrow()
  return Number(row.id)
}

function category(name: string): Row {
  return { name, name_key: name.toLowerCase(), description: `${name}…`, created_at: now, updated_at: now }
}

function product(name: string, priceCents: number, stock: number, categoryId: number | null, key: string): Row {
  return {
    name,
    description: `Sobre ${name}`,
    price_cents: priceCents,
    stock,
    image_key: `products/${key}.png`,
    image_url: `http://shop.test/uploads/products/${key}.png`,
    category_id: categoryId,
    created_at: now,
    updated_at: '2026-11-24T11:00:00.000Z',
  }
}

/** The shop at the schema before the catalog: categories, products, carts, orders (one with a line of a deleted product), a payment. */
async function seedShop(): Promise<void> {
  ids.cafeYTe = await insert('categories', category('Café y Té'))
  ids.te = await insert('categories', category('Té'))
  ids.teBang = await insert('categories', category('Te!'))
  ids.digits = await insert('categories', category('123'))
  ids.facetsCategory = await insert('categories', category('Facets'))
  // The last category made, deleted: its id is never given again.
  ids.deletedCategory = await insert('categories', category('Borrada'))
  await migrating.raw.deleteFrom('categories').where('id', '=', ids.deletedCategory).execute()

  ids.molido = await insert('products', product('Café molido', 1250, 10, ids.cafeYTe, 'molido'))
  ids.molido2 = await insert('products', product('Café Molido', 1300, 4, ids.cafeYTe, 'molido-2'))
  ids.molido3 = await insert('products', product('CAFÉ MOLIDO!!', 1399, 7, ids.te, 'molido-3'))
  ids.teVerde = await insert('products', product('¡Té verde!', 450, 5, ids.te, 'te-verde'))
  ids.number = await insert('products', product('42', 4200, 1, ids.digits, '42'))
  ids.facets = await insert('products', product('Facets', 990, 3, null, 'facets'))
  ids.taza = await insert('products', product('Taza', 800, 0, ids.facetsCategory, 'taza'))
  ids.long = await insert('products', product(longName, 100, 2, null, 'long'))
  ids.gone = await insert('products', product('Descatalogado', 500, 9, ids.teBang, 'gone'))

  ids.ana = await insert('users', {
    name: 'Ana',
    email: 'ana@shop.test',
    password_hash: 'x',
    role: 'customer',
    created_at: now,
    updated_at: now,
    credentials_changed_at: now,
  })
  ids.bea = await insert('users', {
    name: 'Bea',
    email: 'bea@shop.test',
    password_hash: 'x',
    role: 'customer',
    created_at: now,
    updated_at: now,
    credentials_changed_at: now,
  })
  const line = (userId: number, productId: number, quantity: number) => ({ user_id: userId, product_id: productId, quantity, created_at: now, updated_at: now })
  ids.anaMolido = await insert('cart_items', line(ids.ana, ids.molido, 2))
  ids.beaMolido = await insert('cart_items', line(ids.bea, ids.molido, 1))
  ids.anaTeVerde = await insert('cart_items', line(ids.ana, ids.teVerde, 1))
  ids.beaFacets = await insert('cart_items', line(ids.bea, ids.facets, 3))
  // A line of the product deleted below goes with it; the last line made, removed: its id is never given again.
  ids.anaGoneLine = await insert('cart_items', line(ids.ana, ids.gone, 1))
  ids.deletedLine = await insert('cart_items', line(ids.bea, ids.taza, 1))
  await migrating.raw.deleteFrom('cart_items').where('id', '=', ids.deletedLine).execute()

  const order = (userId: number, totalCents: number, status: string) => ({ user_id: userId, total_cents: totalCents, status, created_at: now, updated_at: now })
  ids.pendingOrder = await insert('orders', order(ids.ana, 2250, 'pending'))
  await migrating.raw
    .insertInto('order_items')
    .values([
      { order_id: ids.pendingOrder, product_id: ids.molido, quantity: 1, price_cents: 1250, name: 'Café molido' },
      { order_id: ids.pendingOrder, product_id: ids.gone, quantity: 2, price_cents: 500, name: 'Descatalogado' },
    ])
    .execute()
  ids.paidOrder = await insert('orders', {
    ...order(ids.bea, 1490, 'paid'),
    subtotal_cents: 990,
    shipping_cents: 500,
    shipping_address: JSON.stringify({ fullName: 'Bea', line1: 'Calle 1', city: 'Madrid', postalCode: '28001', country: 'ES' }),
    shipping_method: JSON.stringify({ id: 1, name: 'Correos', price: 5 }),
    note: 'Por la tarde',
  })
  await migrating.raw
    .insertInto('order_items')
    .values({ order_id: ids.paidOrder, product_id: ids.facets, quantity: 1, price_cents: 990, name: 'Facets' })
    .execute()
  await migrating.raw
    .insertInto('payments')
    .values({
      order_id: ids.paidOrder,
      provider: 'manual',
      status: 'paid',
      amount_cents: 1490,
      currency: 'EUR',
      created_at: now,
      updated_at: now,
      paid_manually: 1,
    })
    .execute()
  // Deleted since: its order line stays, its cart line went with it.
  await migrating.raw.deleteFrom('products').where('id', '=', ids.gone).execute()
}

/** The slugs the rules give the seeded rows (lower case, accents removed, `-2` on a clash, `<kind>-<id>` without a letter, never `facets`). */
function expectedSlugs(): { products: Record<number, string>; categories: Record<number, string> } {
  return {
    categories: {
      [ids.cafeYTe]: 'cafe-y-te',
      [ids.te]: 'te',
      [ids.teBang]: 'te-2',
      [ids.digits]: `category-${ids.digits}`,
      [ids.facetsCategory]: 'facets-2',
    },
    products: {
      [ids.molido]: 'cafe-molido',
      [ids.molido2]: 'cafe-molido-2',
      [ids.molido3]: 'cafe-molido-3',
      [ids.teVerde]: 'te-verde',
      [ids.number]: `product-${ids.number}`,
      [ids.facets]: 'facets-2',
      [ids.taza]: 'taza',
      // 100 characters at most, no hyphen left at the end.
      [ids.long]: `${'a'.repeat(60)}-${'b'.repeat(39)}`,
    },
  }
}

/** The rows the migration must have written, from the rows seeded before it. */
async function expectMigratedShop(): Promise<void> {
  const slugs = expectedSlugs()
  const products = await migrating.raw.selectFrom('products').selectAll().orderBy('id').execute()
  expect(products).toEqual(
    seeded.products!.map((p) => ({ ...p, slug: slugs.products[p.id], status: 'active', tax_class: 'standard', price_max_cents: p.price_cents, tags: '[]' })),
  )
  const images = await migrating.raw.selectFrom('product_images').selectAll().orderBy('product_id').execute()
  expect(images).toEqual(
    seeded.products!.map((p) => ({
      id: expect.any(Number),
      product_id: p.id,
      image_key: p.image_key,
      url: p.image_url,
      alt: '',
      position: 0,
      created_at: p.created_at,
    })),
  )
  const imageOf = new Map(images.map((image) => [image.product_id, image.id]))
  const variants = await migrating.raw.selectFrom('product_variants').selectAll().orderBy('product_id').execute()
  expect(variants).toEqual(
    seeded.products!.map((p) => ({
      id: expect.any(Number),
      product_id: p.id,
      sku: null,
      sku_key: null,
      title: null,
      price_cents: p.price_cents,
      compare_at_cents: null,
      stock: p.stock,
      image_id: imageOf.get(p.id),
      tax_class: null,
      position: 0,
      values_key: '',
      created_at: p.created_at,
      updated_at: p.updated_at,
    })),
  )
  const variantOf = new Map(variants.map((v) => [v.product_id, v.id]))
  for (const table of ['product_options', 'product_option_values', 'variant_option_values', 'product_tags', 'product_slugs', 'category_slugs']) {
    expect(await migrating.raw.selectFrom(table).selectAll().execute()).toEqual([])
  }

  const categories = await migrating.raw.selectFrom('categories').selectAll().orderBy('id').execute()
  expect(categories).toEqual(seeded.categories!.map((c) => ({ ...c, slug: slugs.categories[c.id], parent_id: null, position: 0, path: `/${c.id}/` })))

  // Every product is active: the counts are those of before.
  expect((await dataOf(migrating.raw)).product_counts).toEqual(seeded.product_counts)
  expect(await migrating.raw.selectFrom('cart_items').selectAll().orderBy('id').execute()).toEqual(
    seeded.cart_items!.map((line) => ({ ...line, variant_id: variantOf.get(line.product_id) })),
  )
  expect(await migrating.raw.selectFrom('order_items').selectAll().orderBy('id').execute()).toEqual(
    seeded.order_items!.map((line) => ({ ...line, variant_id: variantOf.get(line.product_id) ?? null, sku: null, variant_title: null })),
  )
  for (const table of ['users', 'orders', 'payments']) expect(await migrating.raw.selectFrom(table).selectAll().execute()).toEqual(seeded[table])
  // Rebuilt tables go on from the ids they had reached: a deleted category's or cart line's id is not given again.
  expect(await idSequences(migrating.raw)).toEqual(seeded.sequences)
}

describe(`migration ${CATALOG}`, () => {
  it('gives every product of a shop a default variant, an image row and a slug; categories a slug and a path; lines their variant', async () => {
    expect((await migrating.migrator.migrateTo(BEFORE)).error).toBeUndefined()
    expect(await migrating.applied()).not.toContain(CATALOG)
    await seedShop()
    seeded = await dataOf(migrating.raw)
    schemaBefore = await migrating.schemaOf()
    // The description names the shop-wide unique name of categories (what `down` must bring back).
    expect(schemaBefore).toContainEqual(
      migrating.isPg
        ? expect.objectContaining({ kind: 'constraint', name: 'categories', detail: 'categories_name_key_key', def: 'UNIQUE (name_key)' })
        : expect.objectContaining({ type: 'index', name: 'sqlite_autoindex_categories_1', tbl_name: 'categories' }),
    )
    expect(seeded.product_counts).toEqual(
      [
        { category_id: 0, total: 8 },
        { category_id: ids.cafeYTe, total: 2 },
        { category_id: ids.te, total: 2 },
        { category_id: ids.digits, total: 1 },
        { category_id: ids.facetsCategory, total: 1 },
      ].sort((a, b) => a.category_id - b.category_id),
    )

    const up = await migrating.migrator.migrateTo(CATALOG)
    expect(up.error).toBeUndefined()
    expect(up.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[CATALOG, 'Up', 'Success']])
    await expectMigratedShop()

    // Names are unique among siblings (roots are siblings). An explicit id: a refused insert takes no number of a
    // PostgreSQL sequence, which the comparisons below read.
    await expect(
      migrating.raw
        .insertInto('categories')
        .values({ id: 1000, ...category('té'), slug: 'te-root', path: '/1000/' })
        .execute(),
    ).rejects.toThrow()
    // The counts follow the status: a draft leaves them, back to active joins them again.
    await migrating.raw.updateTable('products').set({ status: 'draft' }).where('id', '=', ids.molido).execute()
    const counts = async () =>
      Object.fromEntries((await migrating.raw.selectFrom('product_counts').selectAll().execute()).map((c) => [c.category_id, Number(c.total)]))
    expect(await counts()).toMatchObject({ 0: 7, [ids.cafeYTe]: 1 })
    await migrating.raw.updateTable('products').set({ status: 'active' }).where('id', '=', ids.molido).execute()
    expect(await counts()).toMatchObject({ 0: 8, [ids.cafeYTe]: 2 })
  })

  it('goes down to the shop as it was, rows and schema, and up again', async () => {
    const down = await migrating.migrator.migrateDown()
    expect(down.error).toBeUndefined()
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[CATALOG, 'Down', 'Success']])
    expect(await dataOf(migrating.raw)).toEqual(seeded)
    expect(await migrating.schemaOf()).toEqual(schemaBefore)
    // The shop-wide unique name of categories is back.
    await expect(
      migrating.raw
        .insertInto('categories')
        .values({ id: 1000, ...category('té') })
        .execute(),
    ).rejects.toThrow()

    expect((await migrating.migrator.migrateTo(CATALOG)).error).toBeUndefined()
    await expectMigratedShop()
  })

  it('serves the migrated shop: lists, product pages by slug, cart, order, cancel with the stock back', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'shop-test-'))
    // buildApp runs what comes after (if anything), as a start-up does.
    const app = await buildApp(testConfig({}, dataDir), { database: migrating.opened.handle, logger: false, catalogCache: catalogCacheOn })
    try {
      const slugs = expectedSlugs()
      const variantOf = async (productId: number) =>
        (await migrating.raw.selectFrom('product_variants').select('id').where('product_id', '=', productId).executeTakeFirstOrThrow()).id
      const stocks = async (productId: number) => ({
        product: (await migrating.raw.selectFrom('products').select('stock').where('id', '=', productId).executeTakeFirstOrThrow()).stock,
        variant: (await migrating.raw.selectFrom('product_variants').select('stock').where('product_id', '=', productId).executeTakeFirstOrThrow()).stock,
      })

      const list = await app.inject({ method: 'GET', url: '/products?limit=100' })
      expect(list.statusCode).toBe(200)
      expect(list.headers['x-total-count']).toBe('8')
      const items = (list.json() as Row[]).map((p) => ({ id: p.id, slug: p.slug, status: p.status, price: p.price, stock: p.stock, imageUrl: p.imageUrl }))
      expect(items.sort((a, b) => a.id - b.id)).toEqual(
        seeded.products!.map((p) => ({
          id: p.id,
          slug: slugs.products[p.id],
          status: 'active',
          price: p.price_cents / 100,
          stock: p.stock,
          imageUrl: p.image_url,
        })),
      )
      const inCategory = await app.inject({ method: 'GET', url: `/products?categoryId=${ids.cafeYTe}` })
      expect(inCategory.headers['x-total-count']).toBe('2')
      expect((inCategory.json() as Row[]).map((p) => p.id).sort((a, b) => a - b)).toEqual([ids.molido, ids.molido2])
      // The category whose only product was deleted counts none.
      const none = await app.inject({ method: 'GET', url: `/products?categoryId=${ids.teBang}` })
      expect(none.headers['x-total-count']).toBe('0')
      expect(none.json()).toEqual([])

      for (const p of seeded.products!) {
        const page = await app.inject({ method: 'GET', url: `/products/${slugs.products[p.id]}` })
        expect(page.statusCode).toBe(200)
        const body = page.json()
        const image = await migrating.raw.selectFrom('product_images').select('id').where('product_id', '=', p.id).executeTakeFirstOrThrow()
        expect(body).toMatchObject({
          id: p.id,
          name: p.name,
          slug: slugs.products[p.id],
          status: 'active',
          price: p.price_cents / 100,
          stock: p.stock,
          imageUrl: p.image_url,
          categoryId: p.category_id,
          taxClass: 'standard',
          tags: [],
          priceRange: { min: p.price_cents / 100, max: p.price_cents / 100 },
          inStock: p.stock > 0,
          images: [{ id: image.id, url: p.image_url, alt: '', position: 0 }],
          options: [],
          variants: [
            {
              id: await variantOf(p.id),
              productId: p.id,
              sku: null,
              title: null,
              price: p.price_cents / 100,
              compareAtPrice: null,
              stock: p.stock,
              optionValues: [],
              imageId: image.id,
              taxClass: null,
              position: 0,
              createdAt: p.created_at,
              updatedAt: p.updated_at,
            },
          ],
          createdAt: p.created_at,
          updatedAt: p.updated_at,
        })
        // By id as well.
        expect((await app.inject({ method: 'GET', url: `/products/${p.id}` })).json()).toEqual(body)
      }
      const categories = await app.inject({ method: 'GET', url: '/categories' })
      expect(categories.statusCode).toBe(200)
      expect(
        (categories.json() as Row[]).map((c) => ({ id: c.id, slug: c.slug, parentId: c.parentId, position: c.position })).sort((a, b) => a.id - b.id),
      ).toEqual(seeded.categories!.map((c) => ({ id: c.id, slug: slugs.categories[c.id], parentId: null, position: 0 })))
      const teBang = await app.inject({ method: 'GET', url: `/categories/${ids.teBang}` })
      expect(teBang.statusCode).toBe(200)
      expect(teBang.json()).toEqual({
        id: ids.teBang,
        name: 'Te!',
        slug: 'te-2',
        description: 'Te!…',
        parentId: null,
        position: 0,
        createdAt: now,
        updatedAt: now,
      })

      // Ana's cart, as it was before the migration, one line per variant.
      const ana = { token: app.signToken({ id: ids.ana, role: 'customer' }) }
      const cart = await app.inject({ method: 'GET', url: '/cart', headers: bearer(ana) })
      expect(cart.statusCode).toBe(200)
      expect(cart.json().items.map((line: Row) => [line.id, line.productId, line.variantId, line.quantity])).toEqual([
        [ids.anaMolido, ids.molido, await variantOf(ids.molido), 2],
        [ids.anaTeVerde, ids.teVerde, await variantOf(ids.teVerde), 1],
      ])
      // Adding a product already in it combines with the migrated line; a new one makes a line with an id never used.
      const more = await app.inject({ method: 'POST', url: '/cart/add', headers: bearer(ana), payload: { productId: ids.teVerde, quantity: 1 } })
      expect(more.statusCode).toBe(200)
      expect(more.json()).toMatchObject({ id: ids.anaTeVerde, variantId: await variantOf(ids.teVerde), quantity: 2 })
      const added = await app.inject({ method: 'POST', url: '/cart/add', headers: bearer(ana), payload: { productId: ids.molido2, quantity: 3 } })
      expect(added.statusCode).toBe(201)
      expect(added.json().id).toBeGreaterThan(ids.deletedLine)

      const before = { molido: await stocks(ids.molido), teVerde: await stocks(ids.teVerde), molido2: await stocks(ids.molido2) }
      expect(before).toEqual({ molido: { product: 10, variant: 10 }, teVerde: { product: 5, variant: 5 }, molido2: { product: 4, variant: 4 } })
      const placed = await app.inject({ method: 'POST', url: '/orders', headers: bearer(ana) })
      expect(placed.statusCode).toBe(201)
      const order = placed.json()
      expect(order).toMatchObject({ userId: ids.ana, status: 'pending', total: 25 + 9 + 39 })
      expect(order.items.map((line: Row) => [line.productId, line.quantity, line.price, line.name]).sort((a: any[], b: any[]) => a[0] - b[0])).toEqual([
        [ids.molido, 2, 12.5, 'Café molido'],
        [ids.molido2, 3, 13, 'Café Molido'],
        [ids.teVerde, 2, 4.5, '¡Té verde!'],
      ])
      const lines = await migrating.raw
        .selectFrom('order_items')
        .select(['product_id', 'variant_id'])
        .where('order_id', '=', order.id)
        .orderBy('product_id')
        .execute()
      expect(lines).toEqual([
        { product_id: ids.molido, variant_id: await variantOf(ids.molido) },
        { product_id: ids.molido2, variant_id: await variantOf(ids.molido2) },
        { product_id: ids.teVerde, variant_id: await variantOf(ids.teVerde) },
      ])
      expect(await stocks(ids.molido)).toEqual({ product: 8, variant: 8 })
      expect(await stocks(ids.molido2)).toEqual({ product: 1, variant: 1 })
      expect(await stocks(ids.teVerde)).toEqual({ product: 3, variant: 3 })
      expect((await app.inject({ method: 'GET', url: `/products/${slugs.products[ids.molido2]}` })).json()).toMatchObject({
        stock: 1,
        variants: [{ stock: 1 }],
      })

      const cancelled = await app.inject({ method: 'POST', url: `/orders/${order.id}/cancel`, headers: bearer(ana) })
      expect(cancelled.statusCode).toBe(200)
      expect(cancelled.json()).toMatchObject({ id: order.id, status: 'cancelled' })
      expect(await stocks(ids.molido)).toEqual(before.molido)
      expect(await stocks(ids.molido2)).toEqual(before.molido2)
      expect(await stocks(ids.teVerde)).toEqual(before.teVerde)
      expect((await app.inject({ method: 'GET', url: `/products/${slugs.products[ids.molido2]}` })).json()).toMatchObject({
        stock: 4,
        variants: [{ stock: 4 }],
      })

      // The order placed before the migration cancels too: its line's stock goes back to the variant, the deleted
      // product's line has nothing to go back to.
      const old = await app.inject({ method: 'POST', url: `/orders/${ids.pendingOrder}/cancel`, headers: bearer(ana) })
      expect(old.statusCode).toBe(200)
      expect(old.json()).toMatchObject({ id: ids.pendingOrder, status: 'cancelled' })
      expect(await stocks(ids.molido)).toEqual({ product: 11, variant: 11 })

      // A category made now gets an id never used before.
      const admin = await makeUser(app, 'admin')
      const made = await app.inject({ method: 'POST', url: '/categories', headers: bearer(admin), payload: { name: 'Nueva' } })
      expect(made.statusCode).toBe(201)
      expect(made.json().id).toBeGreaterThan(ids.deletedCategory)
    } finally {
      await app.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('refuses to go down, changing nothing, while two categories under different parents share a name', async () => {
    const child = async (parentId: number, slug: string) => {
      const id = await insert('categories', { ...category('Molido'), parent_id: parentId, slug, position: 0, path: '/' })
      await migrating.raw
        .updateTable('categories')
        .set({ path: `/${parentId}/${id}/` })
        .where('id', '=', id)
        .execute()
      return id
    }
    const first = await child(ids.cafeYTe, 'molido')
    await child(ids.te, 'molido-2')
    expect(await migrating.applied()).toContain(CATALOG)
    // The migrations after this one (if any) go first, so that the down below is this one's.
    expect((await migrating.migrator.migrateTo(CATALOG)).error).toBeUndefined()
    const data = await dataOf(migrating.raw)
    const schema = await migrating.schemaOf()
    const appliedBefore = await migrating.applied()

    const down = await migrating.migrator.migrateDown()
    expect(down.error).toBeInstanceOf(Error)
    expect((down.error as Error).message).toBe('catalog migration down: two categories share a name; rename one first')
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[CATALOG, 'Down', 'Error']])
    expect(await dataOf(migrating.raw)).toEqual(data)
    expect(await migrating.schemaOf()).toEqual(schema)
    expect(await migrating.applied()).toEqual(appliedBefore)
    if (!migrating.isPg) expect((await sql<Row>`pragma foreign_keys`.execute(migrating.raw)).rows).toEqual([{ foreign_keys: 1 }])

    // Renamed, it goes down.
    await migrating.raw.updateTable('categories').set({ name: 'Molido fino', name_key: 'molido fino' }).where('id', '=', first).execute()
    const retried = await migrating.migrator.migrateDown()
    expect(retried.error).toBeUndefined()
    expect(await migrating.applied()).not.toContain(CATALOG)
    expect(
      await migrating.raw.selectFrom('categories').select(['name', 'name_key']).where('name_key', 'like', 'molido%').orderBy('name_key').execute(),
    ).toEqual([
      { name: 'Molido', name_key: 'molido' },
      { name: 'Molido fino', name_key: 'molido fino' },
    ])
    expect((await migrating.migrator.migrateTo(CATALOG)).error).toBeUndefined()
  })

  it('merges the cart lines of one product’s variants on the way down, quantities added', async () => {
    // A second variant of "Café molido", cheaper, in Bea's cart beside the default one.
    const later = '2026-11-24T12:00:00.000Z'
    const variant = await insert('product_variants', {
      product_id: ids.molido,
      sku: 'CM-250',
      sku_key: 'cm-250',
      title: '250 g',
      price_cents: 1100,
      stock: 4,
      position: 1,
      values_key: '1',
      created_at: later,
      updated_at: later,
    })
    const stockBefore = (await migrating.raw.selectFrom('products').select('stock').where('id', '=', ids.molido).executeTakeFirstOrThrow()).stock
    await refreshProductAggregates(migrating.opened.handle.db, ids.molido)
    const beaLine = await migrating.raw
      .selectFrom('cart_items')
      .selectAll()
      .where('user_id', '=', ids.bea)
      .where('product_id', '=', ids.molido)
      .executeTakeFirstOrThrow()
    await insert('cart_items', { user_id: ids.bea, product_id: ids.molido, variant_id: variant, quantity: 2, created_at: later, updated_at: later })
    const product = await migrating.raw.selectFrom('products').select(['price_cents', 'stock']).where('id', '=', ids.molido).executeTakeFirstOrThrow()
    expect(product).toEqual({ price_cents: 1100, stock: stockBefore + 4 })

    expect((await migrating.migrator.migrateDown()).error).toBeUndefined()
    // One line per user and product again: the first one, holding both quantities.
    expect(await migrating.raw.selectFrom('cart_items').selectAll().where('user_id', '=', ids.bea).where('product_id', '=', ids.molido).execute()).toEqual([
      { id: beaLine.id, user_id: ids.bea, product_id: ids.molido, quantity: beaLine.quantity + 2, created_at: beaLine.created_at, updated_at: later },
    ])
    // The product keeps its lowest price and its whole stock.
    expect(await migrating.raw.selectFrom('products').select(['price_cents', 'stock']).where('id', '=', ids.molido).executeTakeFirstOrThrow()).toEqual(product)

    expect((await migrating.migrator.migrateTo(CATALOG)).error).toBeUndefined()
    expect(
      await migrating.raw.selectFrom('product_variants').select(['price_cents', 'stock', 'values_key']).where('product_id', '=', ids.molido).execute(),
    ).toEqual([{ price_cents: 1100, stock: stockBefore + 4, values_key: '' }])
  })
})
