import { randomUUID } from 'node:crypto'
import { createReadStream } from 'node:fs'
import type { FastifyBaseLogger } from 'fastify'
import type { Kysely, Transaction } from 'kysely'
import type { Dialect } from '../../db/connect.js'
import type { Database, ProductStatus } from '../../db/database.js'
import { isForeignKeyViolation, isUniqueViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import { parseCents } from '../../shared/money.js'
import { numberedSlug, slugify } from '../../shared/slug.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import type { ImageHost } from '../images/image-host.js'
import { discardSpooledImage, type ProductForm, productImageKey, type SpooledImage } from '../images/image-upload.js'
import { ImageKeyTakenError } from '../images/image-key-taken.js'
import { assertTaxClassExists } from '../taxes/taxes.service.js'
import type { EventSink } from '../../shared/event-sink.js'
import { type AuditSource, auditLogWrites, recordAudit } from '../staff/audit-log.js'
import { categoryExists, subtreeIds } from './categories.repository.js'
import * as images from './product-images.repository.js'
import * as repo from './products.repository.js'
import { productRowToSummary, toProduct } from './product-view.js'
import {
  type ListProductsInput,
  MAX_OPTION_FILTER_VALUES,
  OPTION_PARAM,
  PRODUCT_FIELDS,
  type ProductFacetsInput,
  VARIANT_FIELDS_OF_PRODUCT,
  type Product,
  type ProductFieldsInput,
  type ProductSummary,
  parseProductFields,
} from './products.schemas.js'
import * as variants from './variants.repository.js'
import { addVariants, assertSkuFree, conflictOf, insertOptions, type VariantLimits } from './variants.service.js'
import { parseCreateOptions, parseCreateVariants, type VariantInput } from './variants.schemas.js'

/** What the product use cases need: the database, the image host and a logger for non-fatal failures. */
export interface CatalogContext {
  db: Kysely<Database>
  dialect: Dialect
  images: ImageHost
  log: FastifyBaseLogger
  /** Where product.created, product.updated, product.deleted and stock.low go (the outbox). */
  events: EventSink
  /** MAX_OPTIONS_PER_PRODUCT and MAX_VARIANTS_PER_PRODUCT, for a create with options. */
  limits: VariantLimits
  /** Who asks: each change writes its audit entry in its transaction. */
  audit: AuditSource
}

/** A product as the API shows it (typed from its response schema). */
export type { Product, ProductSummary }

/** A product as lists, events and the inventory show it: productRowToSummary (product-view.ts). */
export const productRowToProduct = productRowToSummary

export interface ProductListResult {
  items: ProductSummary[]
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
    // The trigram table counts every product, drafts and archived ones too: the total is counted with the status.
    const total = await repo.countProducts(ctx.db, ctx.dialect, filter, { walkPrice: false, walkSearch })
    return { total, plan: { walkSearch, walkPrice: total > WIDE_MATCH } }
  }
  const total = await repo.countProducts(ctx.db, ctx.dialect, filter)
  const wide = total > WIDE_MATCH
  return { total, plan: { walkSearch: wide && filter.q !== undefined && repo.canSearchByLike(filter.q), walkPrice: wide } }
}

/** The filters GET /products and GET /products/facets share, as the query string gives them. */
export type ProductFilterInput = ProductFacetsInput

/** The `option.<Name>` parameters of a query: each name (lower-cased, merged ignoring case) with its values. */
export function optionFilters(input: Record<string, unknown>): repo.OptionFilter[] {
  const byName = new Map<string, Set<string>>()
  let count = 0
  for (const [key, value] of Object.entries(input)) {
    if (!OPTION_PARAM.test(key)) continue
    const values = Array.isArray(value) ? (value as string[]) : [String(value)]
    count += values.length
    const nameKey = key.slice('option.'.length).toLowerCase()
    const set = byName.get(nameKey) ?? new Set<string>()
    for (const v of values) set.add(v.toLowerCase())
    byName.set(nameKey, set)
  }
  if (count > MAX_OPTION_FILTER_VALUES) {
    throw new ValidationError(`option.* must contain no more than ${MAX_OPTION_FILTER_VALUES} elements`, 'option.*')
  }
  return [...byName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([nameKey, values]) => ({ nameKey, valueKeys: [...values].sort() }))
}

/** `tag` values as they are searched: trimmed, lower-cased, once each, sorted. */
export function tagFilter(tags: readonly string[] | undefined): string[] {
  return [...new Set((tags ?? []).map((tag) => tag.trim().toLowerCase()))].sort()
}

/**
 * The repository's filter for a validated query: amounts in cents (422 with more than two decimals), the options and
 * tags as keys, and `category` as the ids of its subtree (none for an unknown one). Only what is given is set (the
 * list's fast path recognises its classic shapes by their keys).
 */
export async function readFilter(ctx: Pick<CatalogContext, 'db'>, input: ProductFilterInput): Promise<repo.ProductFilter> {
  const filter: repo.ProductFilter = {}
  const options = optionFilters(input)
  const minPriceCents = parseAmountFilter('minPrice', input.minPrice)
  const maxPriceCents = parseAmountFilter('maxPrice', input.maxPrice)
  if (input.categoryId !== undefined) filter.categoryId = input.categoryId
  const q = input.q?.trim()
  if (q) filter.q = q
  if (minPriceCents !== undefined) filter.minPriceCents = minPriceCents
  if (maxPriceCents !== undefined) filter.maxPriceCents = maxPriceCents
  if (input.category !== undefined) filter.categoryIds = await subtreeIds(ctx.db, input.category)
  const tagKeys = tagFilter(input.tag)
  if (tagKeys.length > 0) filter.tagKeys = tagKeys
  if (input.inStock !== undefined) filter.inStock = input.inStock
  if (options.length > 0) filter.options = options
  if (input.status !== undefined && input.status !== 'active') filter.status = input.status
  return filter
}

/** One page of the catalog (the public one unless `status` says otherwise) and the number of matches. */
export async function listProducts(ctx: Pick<CatalogContext, 'db' | 'dialect'>, input: ListProductsInput): Promise<ProductListResult> {
  const filter = await readFilter(ctx, input)
  const page = { limit: input.limit, offset: input.offset, sort: input.sort }
  if (filter.categoryIds?.length === 0) return { items: [], total: 0 }
  if (filter.minPriceCents !== undefined || filter.maxPriceCents !== undefined || filter.q !== undefined) {
    const { total, plan } = await countAndPlan(ctx, filter)
    const rows = await repo.listProducts(ctx.db, ctx.dialect, filter, { ...page, plan })
    return { items: rows.map(productRowToProduct), total }
  }
  const rows = await repo.listProducts(ctx.db, ctx.dialect, filter, page)
  // A first page that is not full already says how many match: no count query needed.
  const total = input.offset === 0 && rows.length < input.limit ? rows.length : await repo.countProducts(ctx.db, ctx.dialect, filter)
  return { items: rows.map(productRowToProduct), total }
}

/** What GET /products/:idOrSlug answers: the product, or where an old slug now lives. */
/** Which of `ids` name a product, whatever its status (in no order): for another module's references to products. */
export async function existingProductIds(db: Kysely<Database>, ids: readonly number[]): Promise<number[]> {
  return repo.existingProductIds(db, ids)
}

export type ProductLookup = { product: Product } | { movedTo: string }

/**
 * A product by id (digits) or slug (any other text). Drafts and archived products are shown to admins only
 * (`showHidden`); to others they do not exist. An old slug answers where the product lives now; a product that
 * took the slug since wins.
 */
export async function getProduct(ctx: Pick<CatalogContext, 'db'>, idOrSlug: string, showHidden: boolean): Promise<ProductLookup> {
  const id = /^[0-9]{1,10}$/.test(idOrSlug) ? Number(idOrSlug) : undefined
  const row = id !== undefined ? await repo.findProductById(ctx.db, id) : await repo.findProductBySlug(ctx.db, idOrSlug)
  if (row && (row.status === 'active' || showHidden)) return { product: await toProduct(ctx.db, row) }
  if (!row && id === undefined) {
    const current = await repo.findRenamedSlug(ctx.db, idOrSlug)
    if (current !== undefined) return { movedTo: current }
  }
  throw new AppError(404, 'productNotFound')
}

/**
 * The slug for a new product named `name`: its name's, with `-2`, `-3`… when taken (now or before); undefined when
 * the name has no letter (the product is then `product-<id>`, set once its id is known).
 */
export async function freeSlugFor(db: Kysely<Database>, name: string): Promise<string | undefined> {
  const base = slugify(name)
  if (base === null) return undefined
  let slug = base
  for (let n = 2; slug === 'facets' || (await repo.productSlugTaken(db, slug)); n += 1) slug = numberedSlug(base, n)
  return slug
}

/** Takes `slug` for a product: 409 when another product has it now; an old slug of another product moves here. */
export async function takeSlug(db: Kysely<Database>, slug: string, productId?: number): Promise<void> {
  if (await repo.currentSlugTaken(db, slug, productId)) throw new AppError(409, 'slugTaken')
  await repo.forgetOldSlug(db, slug)
}

/** A new product's own values; its slug, its default variant and its image row follow from them. */
export interface NewProductValues {
  name: string
  description: string
  price_cents: number
  stock: number
  image_key: string
  image_url: string
  category_id: number | null
  created_at: string
  /** Chosen by the admin; made from the name when left out. */
  slug?: string | undefined
  status?: ProductStatus | undefined
  tags?: readonly string[] | undefined
  tax_class?: string | undefined
  /** The default variant's. */
  sku?: string | null | undefined
  compare_at_cents?: number | null | undefined
  /** Options and variants in place of the default variant (a JSON create), within `limits`. */
  structure?: { options: Array<{ name: string; values: string[] }>; variants: VariantInput[]; limits: VariantLimits } | undefined
}

/**
 * Writes a new product in one transaction: its row with a free slug, its first image and its default variant, then
 * `then` (the caller's event) in the same transaction; answers the product whole. Two products named alike at
 * once: the slug's unique key refuses the second, which takes the next number.
 */
export async function insertNewProduct(
  db: Kysely<Database>,
  values: NewProductValues,
  then?: (trx: Transaction<Database>, product: Product) => Promise<void>,
): Promise<Product> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await db.transaction().execute(async (trx) => {
        const { slug: chosen, tags, status, tax_class, sku, compare_at_cents, structure, ...own } = values
        if (chosen !== undefined) await takeSlug(trx, chosen)
        await assertSkuFree(trx, sku)
        const slug = chosen ?? (await freeSlugFor(trx, values.name))
        let row = await repo.insertProduct(trx, {
          ...own,
          ...(status !== undefined ? { status } : {}),
          ...(tax_class !== undefined ? { tax_class } : {}),
          slug: slug ?? `product-new-${randomUUID()}`,
          price_max_cents: values.price_cents,
          updated_at: values.created_at,
        })
        if (slug === undefined) row = (await repo.updateProductById(trx, row.id, { slug: `product-${row.id}`, updated_at: row.updated_at })) ?? row
        if (tags !== undefined && tags.length > 0) {
          await repo.replaceTags(trx, row.id, tags)
          row = { ...row, tags: JSON.stringify(tags) }
        }
        if (structure) {
          await insertOptions(trx, structure.limits, row.id, structure.options)
          await addVariants(trx, structure.limits, row.id, structure.variants)
          row = (await variants.refreshProductAggregates(trx, row.id)) ?? row
        } else {
          await variants.insertDefaultVariant(trx, row, { sku, compare_at_cents })
        }
        const product = await toProduct(trx, row)
        await then?.(trx, product)
        return product
      })
    } catch (error) {
      // A SKU or a combination another transaction took meanwhile: the 409 the checks would have answered.
      const conflict = conflictOf(error, [...(values.structure?.variants ?? []), { sku: values.sku }])
      if (conflict !== error) throw conflict
      // Each retry finds the slugs the others took; a burst of n products of one name needs n - 1 retries at worst.
      if (attempt < 20 && isUniqueViolation(error)) continue
      throw error
    }
  }
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

/** The category and the tax class a product names exist (else 422), checked together where the category is. */
async function assertReferencesExist(ctx: CatalogContext, fields: ProductFieldsInput): Promise<void> {
  await assertCategoryExists(ctx, fields.categoryId)
  if (fields.taxClass !== undefined) await assertTaxClassExists(ctx.db, fields.taxClass)
}

/** Stores a spooled image under a fresh key; any host failure is the documented upload-failure 500. */
export async function storeImage(ctx: Pick<CatalogContext, 'images' | 'log'>, image: SpooledImage): Promise<{ key: string; url: string }> {
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
export async function removeImageQuietly(ctx: Pick<CatalogContext, 'images' | 'log'>, key: string, reason: string): Promise<void> {
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
    await assertReferencesExist(ctx, fields)
    const stored = await storeImage(ctx, image)
    try {
      return await createFromFields(ctx, fields, stored)
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

/**
 * Creates a product from a JSON body: without an image it can only be a draft (the default), else
 * 409 `Un producto sin imágenes solo puede estar en borrador`; its images come later (POST /products/:id/images).
 */
export async function createProductFromJson(ctx: CatalogContext, body: unknown): Promise<Product> {
  const raw = jsonFields(body, [...PRODUCT_FIELDS, 'options', 'variants'])
  // With options, the variants carry price, stock, SKU and compare-at price; without, the product's make its default variant.
  const withOptions = raw.options !== undefined
  const fields = parseProductFields(raw, { create: true, text: false, priceRequired: !withOptions })
  let structure: NewProductValues['structure']
  if (withOptions) {
    const options = parseCreateOptions(raw.options)
    if (raw.variants === undefined) throw new ValidationError('variants should not be empty', 'variants')
    const inputs = parseCreateVariants(raw.variants)
    if (VARIANT_FIELDS_OF_PRODUCT.some((field) => fields[field] !== undefined)) throw new AppError(422, 'severalVariantsPriceStock')
    structure = { options, variants: inputs, limits: ctx.limits }
  } else if (raw.variants !== undefined) {
    throw new ValidationError('options should not be empty', 'options')
  }
  await assertReferencesExist(ctx, fields)
  if (fields.status !== undefined && fields.status !== 'draft') throw new AppError(409, 'imagelessProduct')
  try {
    return await createFromFields(ctx, { ...fields, status: 'draft' }, null, structure)
  } catch (error) {
    if (isForeignKeyViolation(error)) throw new AppError(422, 'categoryMissing')
    throw error
  }
}

/** A new product from checked fields and its stored image (none: a draft), with its `product.created` event. */
function createFromFields(
  ctx: CatalogContext,
  fields: ProductFieldsInput,
  image: { key: string; url: string } | null,
  structure?: NewProductValues['structure'],
): Promise<Product> {
  return insertNewProduct(
    ctx.db,
    {
      name: fields.name ?? '',
      description: fields.description ?? '',
      price_cents: fields.priceCents ?? 0,
      stock: fields.stock ?? 0,
      image_key: image?.key ?? '',
      image_url: image?.url ?? '',
      category_id: fields.categoryId ?? null,
      created_at: nowIso(),
      slug: fields.slug,
      status: fields.status,
      tags: fields.tags,
      tax_class: fields.taxClass,
      sku: fields.sku,
      compare_at_cents: fields.compareAtCents,
      structure,
    },
    // A new product never fires stock.low.
    async (trx, product) => {
      await ctx.events.emit(trx, { type: 'product.created', data: product })
      await recordAudit(trx, { by: ctx.audit, action: 'product.create', entityType: 'product', entityId: product.id, before: null, after: product })
    },
  )
}

/** A JSON body's product fields; any other property is refused, as a list refuses an unknown parameter. */
function jsonFields(body: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationError('body must be an object', 'body')
  }
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw new ValidationError(`property ${key} should not exist`, key)
  }
  return body as Record<string, unknown>
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
  await assertReferencesExist(ctx, fields)
  // Active and archived products are shown with their image: one without (a draft made in JSON) stays a draft.
  if (fields.status !== undefined && fields.status !== 'draft' && current.image_key === '' && !image) throw new AppError(409, 'imagelessProduct')
  // A product of several variants has a price, a stock, a SKU and a compare-at price per variant.
  const changesVariant = VARIANT_FIELDS_OF_PRODUCT.some((field) => fields[field] !== undefined)
  if (changesVariant && (await variants.countVariants(ctx.db, id)) > 1) throw new AppError(422, 'severalVariantsPriceStock')
  const stored = image ? await storeImage(ctx, image) : null
  let row: Product | undefined
  try {
    // With its events (product.updated; stock.low when this took the stock to the threshold), in one transaction.
    row = await ctx.db.transaction().execute(async (trx) => {
      // The stock as this transaction's update finds it (locked on PostgreSQL), so that stock.low fires once.
      // Its variants, then the product, locked as the inventory and the variant writes lock them (no cycle); the
      // stock as this transaction finds it, so that stock.low fires once.
      const locked = await variants.lockProduct(trx, ctx.dialect, id)
      if (!locked) return undefined
      // A variant added since the check above.
      if (changesVariant && (await variants.countVariants(trx, id)) > 1) throw new AppError(422, 'severalVariantsPriceStock')
      if (fields.sku) await assertSkuFree(trx, fields.sku, await variants.onlyVariantId(trx, id))
      const before = fields.stock !== undefined ? locked.stock : undefined
      // The product as it was answered before this change, for the audit log (under the locks). Its images, options and
      // variants are read now only when this changes them; otherwise they are the answer's (four queries saved).
      const partsBefore = auditLogWrites.on && (changesVariant || stored !== null) ? await toProduct(trx, locked) : undefined
      const now = nowIso()
      if (fields.slug !== undefined && fields.slug !== current.slug) {
        await takeSlug(trx, fields.slug, id)
        // The old slug keeps answering, with a 301 to the new one.
        await repo.keepOldSlug(trx, id, current.slug, now)
      }
      let updated = await repo.updateProductById(trx, id, {
        ...(fields.name !== undefined ? { name: fields.name } : {}),
        ...(fields.description !== undefined ? { description: fields.description } : {}),
        ...(fields.categoryId !== undefined ? { category_id: fields.categoryId } : {}),
        ...(fields.slug !== undefined ? { slug: fields.slug } : {}),
        ...(fields.status !== undefined ? { status: fields.status } : {}),
        ...(fields.taxClass !== undefined ? { tax_class: fields.taxClass } : {}),
        ...(stored ? { image_key: stored.key, image_url: stored.url } : {}),
        updated_at: now,
      })
      if (!updated) return undefined
      if (fields.tags !== undefined) {
        await repo.replaceTags(trx, id, fields.tags)
        updated = { ...updated, tags: JSON.stringify(fields.tags) }
      }
      if (changesVariant) {
        // The one variant, and the product's copies of it.
        await variants.updateOnlyVariant(trx, id, {
          ...(fields.priceCents !== undefined ? { price_cents: fields.priceCents } : {}),
          ...(fields.stock !== undefined ? { stock: fields.stock } : {}),
          ...(fields.sku !== undefined ? { sku: fields.sku, sku_key: fields.sku?.toLowerCase() ?? null } : {}),
          ...(fields.compareAtCents !== undefined ? { compare_at_cents: fields.compareAtCents } : {}),
          updated_at: now,
        })
        updated = (await variants.refreshProductAggregates(trx, id)) ?? updated
      }
      if (stored) await images.replaceMainImage(trx, id, stored, now)
      const product = await toProduct(trx, updated)
      await ctx.events.emit(trx, { type: 'product.updated', data: product })
      if (before !== undefined) await ctx.events.stockChanged(trx, product, before)
      const shownBefore = partsBefore ?? { ...productRowToSummary(locked), images: product.images, options: product.options, variants: product.variants }
      await recordAudit(trx, { by: ctx.audit, action: 'product.update', entityType: 'product', entityId: id, before: shownBefore, after: product })
      return product
    })
  } catch (error) {
    if (stored) await removeImageQuietly(ctx, stored.key, 'product update failed')
    if (isForeignKeyViolation(error)) throw new AppError(422, 'categoryMissing')
    throw conflictOf(error, [{ sku: fields.sku }])
  }
  if (!row) {
    // Deleted while we uploaded.
    if (stored) await removeImageQuietly(ctx, stored.key, 'product deleted during update')
    throw new AppError(404, 'productNotFound')
  }
  if (stored && current.image_key !== '' && current.image_key !== stored.key) await removeImageQuietly(ctx, current.image_key, 'image replaced')
  return row
}

/** Deletes the product and its cart lines; order lines keep their copy. Its images go last, non-fatally. */
export async function deleteProduct(ctx: CatalogContext, id: number): Promise<void> {
  const keys = await ctx.db.transaction().execute(async (trx) => {
    // Its variants, then the product, as every other writer locks them: the delete then cascades to locked rows.
    const locked = await variants.lockProduct(trx, ctx.dialect, id)
    if (!locked) return undefined
    const imageKeys = await images.imageKeysOf(trx, id)
    const shownBefore = await toProduct(trx, locked)
    const deleted = await repo.deleteProductById(trx, id)
    if (!deleted) return undefined
    await ctx.events.emit(trx, { type: 'product.deleted', data: { id } })
    await recordAudit(trx, { by: ctx.audit, action: 'product.delete', entityType: 'product', entityId: id, before: shownBefore, after: null })
    return imageKeys
  })
  if (!keys) throw new AppError(404, 'productNotFound')
  for (const key of keys) await removeImageQuietly(ctx, key, 'product deleted')
}

/** Whether a product or a variant names the tax class (the taxes module then keeps the class). */
export async function catalogUsesTaxClass(db: Kysely<Database>, code: string): Promise<boolean> {
  return repo.usesTaxClass(db, code)
}
