import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Insertable } from 'kysely'
import type { Config } from '../../src/config.js'
import type { ProductsTable } from '../../src/db/database.js'
import type { ImageHost } from '../../src/modules/images/image-host.js'
import { renderPng } from '../../src/modules/images/png.js'
import { type Category, createCategory } from '../../src/modules/catalog/categories.service.js'
import { type Product, productRowToProduct, type ProductSummary } from '../../src/modules/catalog/products.service.js'
import { addMissingDefaultVariants, insertDefaultVariant, refreshProductAggregates } from '../../src/modules/catalog/variants.repository.js'
import { nowIso } from '../../src/shared/time.js'
import { bearer } from './factories.js'

let sequence = 0

/** A small valid PNG. */
export const PNG = renderPng(4, 4, [200, 30, 30], [30, 30, 200])

/** Makes a category through the service, with a unique name unless one is given. */
export async function makeCategory(app: FastifyInstance, name?: string, description = ''): Promise<Category> {
  sequence += 1
  return createCategory(app.db, { name: name ?? `Category ${sequence}-${process.pid}`, description }, null)
}

/** What a test may choose of a product row; every other column gets a default. */
export interface ProductValues {
  name?: string
  description?: string
  priceCents?: number
  stock?: number
  categoryId?: number | null
  createdAt?: string
  updatedAt?: string
}

/**
 * The row behind the one product factory of the tests (makeProduct): a `products` row with a fresh name and image
 * key (no image file behind it).
 */
export function productRow(values: ProductValues = {}): Insertable<ProductsTable> {
  sequence += 1
  const createdAt = values.createdAt ?? nowIso()
  return {
    name: values.name ?? `Product ${sequence}`,
    slug: `product-${sequence}-${process.pid}`,
    price_max_cents: values.priceCents ?? 1000,
    description: values.description ?? '',
    price_cents: values.priceCents ?? 1000,
    stock: values.stock ?? 10,
    image_key: `products/0-seeded-${sequence}.png`,
    image_url: `http://shop.test/uploads/products/0-seeded-${sequence}.png`,
    category_id: values.categoryId ?? null,
    created_at: createdAt,
    updated_at: values.updatedAt ?? createdAt,
  }
}

/** A product as the factory made it: the service's shape, with its price in cents. */
export type TestProduct = ProductSummary & { priceCents: number }

/** The one product factory of the tests: inserts a product row directly (no image file behind it), at 10.00 unless told. */
export async function makeProduct(app: FastifyInstance, values: ProductValues = {}): Promise<TestProduct> {
  const row = await app.db.insertInto('products').values(productRow(values)).returningAll().executeTakeFirstOrThrow()
  // Every product has a variant: its default one (no options), with its price, stock and image.
  await insertDefaultVariant(app.db, row)
  // Written behind the service's back: the product read cache must hear of it.
  app.catalogCache.invalidate()
  return { ...productRowToProduct(row), priceCents: row.price_cents }
}

/** Inserts many product rows directly, a few hundred per statement; the products by id. */
export async function makeProducts(app: FastifyInstance, values: ProductValues[]): Promise<ProductSummary[]> {
  const products: ProductSummary[] = []
  // 300 rows of 9 columns stay under every driver's limit on bound parameters.
  for (let i = 0; i < values.length; i += 300) {
    const rows = await app.db
      .insertInto('products')
      .values(values.slice(i, i + 300).map(productRow))
      .returningAll()
      .execute()
    products.push(...rows.map(productRowToProduct))
  }
  await addMissingDefaultVariants(app.db)
  app.catalogCache.invalidate()
  return products.sort((a, b) => a.id - b.id)
}

/** POST /products or PUT /products/:id with a multipart form, as `user` (null: anonymous). */
export async function sendProductForm(
  app: FastifyInstance,
  options: { method?: 'POST' | 'PUT'; url?: string; user: { token: string } | null; fields: Record<string, string | string[]>; files?: FilePart[] },
) {
  const form = await multipart(options.fields, options.files ?? [pngPart()])
  return app.inject({
    method: options.method ?? 'POST',
    url: options.url ?? '/products',
    headers: { ...form.headers, ...(options.user ? bearer(options.user) : {}) },
    payload: form.payload,
  })
}

/** Creates a product through the API, as an admin would (with a PNG unless `files` says otherwise). */
export async function createProductViaApi(
  app: FastifyInstance,
  admin: { token: string },
  fields: Record<string, string | string[]>,
  files?: FilePart[],
): Promise<Product> {
  const response = await sendProductForm(app, { user: admin, fields, ...(files ? { files } : {}) })
  if (response.statusCode !== 201) throw new Error(`POST /products answered ${response.statusCode}: ${response.body}`)
  return response.json() as Product
}

export interface FilePart {
  field?: string
  filename: string
  type: string
  data: Buffer | Uint8Array
}

/** A multipart/form-data body for app.inject, built with the platform's FormData. */
export async function multipart(
  fields: Record<string, string | string[]>,
  files: FilePart[] = [],
): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields)) {
    for (const v of Array.isArray(value) ? value : [value]) form.append(name, v)
  }
  for (const file of files) {
    form.append(file.field ?? 'image', new Blob([new Uint8Array(file.data)], { type: file.type }), file.filename)
  }
  const request = new Request('http://localhost/', { method: 'POST', body: form })
  return {
    payload: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type') ?? '' },
  }
}

/** A PNG image part. */
export function pngPart(filename = 'photo.png', field = 'image'): FilePart {
  return { field, filename, type: 'image/png', data: PNG }
}

/** The files the local image host holds, as keys (`products/<name>`). */
export function storedImages(config: Config): string[] {
  if (config.storage.driver !== 'local') throw new Error('local image host only')
  const dir = join(config.storage.uploadDir, 'products')
  return existsSync(dir)
    ? readdirSync(dir)
        .map((name) => `products/${name}`)
        .sort()
    : []
}

/** An image host that wraps another and fails on purpose when told to; `afterStore` runs after a successful store. */
export function failingHost(inner: ImageHost) {
  const host = {
    failStore: false,
    failDelete: false,
    stored: [] as string[],
    deleted: [] as string[],
    afterStore: null as null | ((key: string) => Promise<void>),
    async store(...args: Parameters<ImageHost['store']>) {
      if (host.failStore) {
        args[1].destroy()
        throw new Error('image host down (test)')
      }
      await inner.store(...args)
      host.stored.push(args[0])
      if (host.afterStore) await host.afterStore(args[0])
    },
    async delete(key: string) {
      host.deleted.push(key)
      if (host.failDelete) throw new Error('image host down (test)')
      return inner.delete(key)
    },
    publicUrl: (key: string) => inner.publicUrl(key),
    list: (prefix: string) => inner.list(prefix),
  }
  return host satisfies ImageHost
}

/**
 * Sets a product's stock and/or price behind the service's back (as an outside writer would), on its one variant,
 * the product's copies with it.
 */
export async function setVariantStockAndPrice(app: FastifyInstance, productId: number, values: { stock?: number; priceCents?: number }): Promise<void> {
  await app.db
    .updateTable('product_variants')
    .set({ ...(values.stock !== undefined ? { stock: values.stock } : {}), ...(values.priceCents !== undefined ? { price_cents: values.priceCents } : {}) })
    .where('product_id', '=', productId)
    .execute()
  await refreshProductAggregates(app.db, productId)
  app.catalogCache.invalidate()
}

/** The id of the one (default) variant of a product made by makeProduct. */
export async function onlyVariantOf(app: FastifyInstance, productId: number): Promise<number> {
  const rows = await app.db.selectFrom('product_variants').select('id').where('product_id', '=', productId).execute()
  if (rows.length !== 1) throw new Error(`product ${productId} has ${rows.length} variants, not one`)
  return rows[0]!.id
}
