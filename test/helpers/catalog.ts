import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../src/config.js'
import type { ImageHost } from '../../src/modules/images/image-host.js'
import { renderPng } from '../../src/modules/images/png.js'
import { type Category, createCategory } from '../../src/modules/catalog/categories.service.js'
import { productRowToProduct, type Product } from '../../src/modules/catalog/products.service.js'
import { nowIso } from '../../src/shared/time.js'

let sequence = 0

/** A small valid PNG. */
export const PNG = renderPng(4, 4, [200, 30, 30], [30, 30, 200])

/** Makes a category through the service, with a unique name unless one is given. */
export async function makeCategory(app: FastifyInstance, name?: string, description = ''): Promise<Category> {
  sequence += 1
  return createCategory(app.db, { name: name ?? `Category ${sequence}-${process.pid}`, description })
}

/** Inserts a product row directly (no image file behind it). */
export async function makeProduct(
  app: FastifyInstance,
  values: { name?: string; description?: string; priceCents?: number; stock?: number; categoryId?: number | null; createdAt?: string } = {},
): Promise<Product> {
  sequence += 1
  const now = values.createdAt ?? nowIso()
  const row = await app.db
    .insertInto('products')
    .values({
      name: values.name ?? `Product ${sequence}`,
      description: values.description ?? '',
      price_cents: values.priceCents ?? 1000,
      stock: values.stock ?? 10,
      image_key: `products/0-seeded-${sequence}.png`,
      image_url: `http://shop.test/uploads/products/0-seeded-${sequence}.png`,
      category_id: values.categoryId ?? null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
  return productRowToProduct(row)
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
  return existsSync(dir) ? readdirSync(dir).map((name) => `products/${name}`).sort() : []
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
