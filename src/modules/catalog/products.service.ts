import { createReadStream } from 'node:fs'
import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Dialect } from '../../db/connect.js'
import type { Database, ProductRow } from '../../db/database.js'
import { isForeignKeyViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import { centsToAmount, parseCents } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import type { ImageHost } from '../images/image-host.js'
import { discardSpooledImage, type ProductForm, productImageKey, type SpooledImage } from '../images/image-upload.js'
import { ImageKeyTakenError } from '../images/image-key-taken.js'
import type { EventSink } from '../../shared/event-sink.js'
import { categoryExists } from './categories.repository.js'
import * as repo from './products.repository.js'
import { type ListProductsInput, PRODUCT_FIELDS, type Product, type ProductFieldsInput, parseProductFields } from './products.schemas.js'

/** What the product use cases need: the database, the image host and a logger for non-fatal failures. */
export interface CatalogContext {
  db: Kysely<Database>
  dialect: Dialect
  images: ImageHost
  log: FastifyBaseLogger
  /** Where product.created, product.updated, product.deleted and stock.low go (the outbox). */
  events: EventSink
}

/** A product as the API shows it (typed from its response schema). */
export type { Product }

export function productRowToProduct(row: ProductRow): Product {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    price: centsToAmount(Number(row.price_cents)),
    stock: row.stock,
    imageUrl: row.image_url,
    categoryId: row.category_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

export interface ProductListResult {
  items: Product[]
  /** Matches before paging (X-Total-Count). */
  total: number
}

/** `minPrice`/`maxPrice` of the list: non-negative amounts with at most 2 decimals. */
function parseAmountFilter(field: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined
  const cents = parseCents(value)
  if (cents === null) throw new ValidationError(`${field} must be a number conforming to the specified constraints`, field)
  return cents
}

/** Above this many matches a price range or a search is walked in sort order rather than sorted (see ProductPage). */
const WIDE_MATCH = 1000

/**
 * Counts the matches of a price range or a search, and decides from the counts whether the page is
 * found by walking the sort's index (many matches) or by collecting the matches and sorting them.
 */
async function countAndPlan(ctx: Pick<CatalogContext, 'db' | 'dialect'>, filter: repo.ProductFilter) {
  if (ctx.dialect === 'sqlite' && filter.q !== undefined && repo.isTrigramSearchable(filter.q)) {
    const searchMatches = await repo.countSearchMatches(ctx.db, filter.q)
    const walkSearch = searchMatches > WIDE_MATCH && repo.canSearchByLike(filter.q)
    const onlySearch = Object.keys(filter).length === 1
    const total = onlySearch ? searchMatches : await repo.countProducts(ctx.db, ctx.dialect, filter, { walkPrice: false, walkSearch })
    return { total, plan: { walkSearch, walkPrice: total > WIDE_MATCH } }
  }
  const total = await repo.countProducts(ctx.db, ctx.dialect, filter)
  const wide = total > WIDE_MATCH
  return { total, plan: { walkSearch: wide && filter.q !== undefined && repo.canSearchByLike(filter.q), walkPrice: wide } }
}

/** One page of the public catalog and the number of matches. */
export async function listProducts(ctx: Pick<CatalogContext, 'db' | 'dialect'>, input: ListProductsInput): Promise<ProductListResult> {
  const q = input.q?.trim()
  const filter: repo.ProductFilter = {
    ...(input.categoryId !== undefined ? { categoryId: input.categoryId } : {}),
    ...(q ? { q } : {}),
  }
  const minPriceCents = parseAmountFilter('minPrice', input.minPrice)
  const maxPriceCents = parseAmountFilter('maxPrice', input.maxPrice)
  if (minPriceCents !== undefined) filter.minPriceCents = minPriceCents
  if (maxPriceCents !== undefined) filter.maxPriceCents = maxPriceCents
  const page = { limit: input.limit, offset: input.offset, sort: input.sort }
  if (minPriceCents !== undefined || maxPriceCents !== undefined || filter.q !== undefined) {
    const { total, plan } = await countAndPlan(ctx, filter)
    const rows = await repo.listProducts(ctx.db, ctx.dialect, filter, { ...page, plan })
    return { items: rows.map(productRowToProduct), total }
  }
  const rows = await repo.listProducts(ctx.db, ctx.dialect, filter, page)
  // A first page that is not full already says how many match: no count query needed.
  const total = input.offset === 0 && rows.length < input.limit ? rows.length : await repo.countProducts(ctx.db, ctx.dialect, filter)
  return { items: rows.map(productRowToProduct), total }
}

export async function getProduct(ctx: Pick<CatalogContext, 'db'>, id: number): Promise<Product> {
  const row = await repo.findProductById(ctx.db, id)
  if (!row) throw new AppError(404, 'productNotFound')
  return productRowToProduct(row)
}

/** The text fields of a multipart form, each sent at most once, as the raw values of parseProductFields. */
function formFields(form: ProductForm): Record<string, unknown> {
  const raw: Record<string, unknown> = {}
  for (const field of PRODUCT_FIELDS) {
    const values = form.fields[field]
    if (!values) continue
    if (values.length > 1) throw new ValidationError(`${field} must be sent only once`, field)
    raw[field] = values[0]
  }
  return raw
}

async function assertCategoryExists(ctx: CatalogContext, categoryId: number | null | undefined): Promise<void> {
  if (categoryId != null && !(await categoryExists(ctx.db, categoryId))) throw new AppError(422, 'categoryMissing')
}

/** Stores a spooled image under a fresh key; any host failure is the documented upload-failure 500. */
async function storeImage(ctx: CatalogContext, image: SpooledImage): Promise<{ key: string; url: string }> {
  for (let attempt = 0; ; attempt += 1) {
    const key = productImageKey(image.fileName)
    try {
      await ctx.images.store(key, createReadStream(image.path), image.contentType, image.size)
      return { key, url: ctx.images.publicUrl(key) }
    } catch (error) {
      if (error instanceof ImageKeyTakenError && attempt < 5) continue
      ctx.log.error({ err: error, key }, 'image upload failed')
      throw new AppError(500, 'imageUploadFailed')
    }
  }
}

/** Removes an image whose product is gone or replaced; a failure is logged, never fatal. */
async function removeImageQuietly(ctx: CatalogContext, key: string, reason: string): Promise<void> {
  try {
    await ctx.images.delete(key)
  } catch (error) {
    ctx.log.warn({ err: error, key, reason }, 'could not delete image from the image host')
  }
}

/**
 * Creates a product from a multipart form. Checks in the documented order (the image's own rules
 * already ran while reading): image present (400), fields (422), category exists (422); then the
 * image is stored, then the row written. A failed upload writes no row; a failed write removes the image.
 */
export async function createProduct(ctx: CatalogContext, form: ProductForm): Promise<Product> {
  try {
    if (!form.image) throw new AppError(400, 'imageRequired')
    const image = form.image
    const fields = parseProductFields(formFields(form), { create: true, text: true })
    await assertCategoryExists(ctx, fields.categoryId)
    const stored = await storeImage(ctx, image)
    try {
      const now = nowIso()
      // With its event (product.created; a new product never fires stock.low), in one transaction.
      return await ctx.db.transaction().execute(async (trx) => {
        const row = await repo.insertProduct(trx, {
          name: fields.name ?? '',
          description: fields.description ?? '',
          price_cents: fields.priceCents ?? 0,
          stock: fields.stock ?? 0,
          image_key: stored.key,
          image_url: stored.url,
          category_id: fields.categoryId ?? null,
          created_at: now,
          updated_at: now,
        })
        const product = productRowToProduct(row)
        await ctx.events.emit(trx, { type: 'product.created', data: product })
        return product
      })
    } catch (error) {
      await removeImageQuietly(ctx, stored.key, 'product insert failed')
      // The category was deleted between the check and the insert.
      if (isForeignKeyViolation(error)) throw new AppError(422, 'categoryMissing')
      throw error
    }
  } finally {
    await discardSpooledImage(form.image)
  }
}

/** Updates from a multipart form (with or without a new image). */
export async function updateProductFromForm(ctx: CatalogContext, id: number, form: ProductForm): Promise<Product> {
  try {
    if (form.strayFileField !== null) throw new ValidationError(messages.strayFileField(form.strayFileField), form.strayFileField)
    const fields = parseProductFields(formFields(form), { create: false, text: true })
    return await applyUpdate(ctx, id, fields, form.image)
  } finally {
    await discardSpooledImage(form.image)
  }
}

/** Updates from a JSON body (no image). */
export async function updateProductFromJson(ctx: CatalogContext, id: number, body: unknown): Promise<Product> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationError('body must be an object', 'body')
  }
  const raw: Record<string, unknown> = {}
  for (const field of PRODUCT_FIELDS) if (field in body) raw[field] = (body as Record<string, unknown>)[field]
  return applyUpdate(ctx, id, parseProductFields(raw, { create: false, text: false }), null)
}

/** Update, in order: unknown id (404), category exists (422), store the new image, write, then drop the old image. */
async function applyUpdate(ctx: CatalogContext, id: number, fields: ProductFieldsInput, image: SpooledImage | null): Promise<Product> {
  if (Object.keys(fields).length === 0 && !image) throw new ValidationError('body must contain at least one field', 'body')
  const current = await repo.findProductById(ctx.db, id)
  if (!current) throw new AppError(404, 'productNotFound')
  await assertCategoryExists(ctx, fields.categoryId)
  const stored = image ? await storeImage(ctx, image) : null
  let row: ProductRow | undefined
  try {
    // With its events (product.updated; stock.low when this took the stock to the threshold), in one transaction.
    row = await ctx.db.transaction().execute(async (trx) => {
      // The stock as this transaction's update finds it (locked on PostgreSQL), so that stock.low fires once.
      const before = fields.stock !== undefined ? await repo.findProductStockForUpdate(trx, ctx.dialect, id) : undefined
      const updated = await repo.updateProductById(trx, id, {
        ...(fields.name !== undefined ? { name: fields.name } : {}),
        ...(fields.description !== undefined ? { description: fields.description } : {}),
        ...(fields.priceCents !== undefined ? { price_cents: fields.priceCents } : {}),
        ...(fields.stock !== undefined ? { stock: fields.stock } : {}),
        ...(fields.categoryId !== undefined ? { category_id: fields.categoryId } : {}),
        ...(stored ? { image_key: stored.key, image_url: stored.url } : {}),
        updated_at: nowIso(),
      })
      if (!updated) return undefined
      const product = productRowToProduct(updated)
      await ctx.events.emit(trx, { type: 'product.updated', data: product })
      if (before !== undefined) await ctx.events.stockChanged(trx, product, before)
      return updated
    })
  } catch (error) {
    if (stored) await removeImageQuietly(ctx, stored.key, 'product update failed')
    if (isForeignKeyViolation(error)) throw new AppError(422, 'categoryMissing')
    throw error
  }
  if (!row) {
    // Deleted while we uploaded.
    if (stored) await removeImageQuietly(ctx, stored.key, 'product deleted during update')
    throw new AppError(404, 'productNotFound')
  }
  if (stored && current.image_key !== stored.key) await removeImageQuietly(ctx, current.image_key, 'image replaced')
  return productRowToProduct(row)
}

/** Deletes the product and its cart lines; order lines keep their copy. The image goes last, non-fatally. */
export async function deleteProduct(ctx: CatalogContext, id: number): Promise<void> {
  const row = await ctx.db.transaction().execute(async (trx) => {
    const deleted = await repo.deleteProductById(trx, id)
    if (deleted) await ctx.events.emit(trx, { type: 'product.deleted', data: { id } })
    return deleted
  })
  if (!row) throw new AppError(404, 'productNotFound')
  await removeImageQuietly(ctx, row.image_key, 'product deleted')
}
