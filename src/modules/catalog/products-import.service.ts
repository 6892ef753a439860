import { Readable } from 'node:stream'
import { CsvError, parse } from 'csv-parse'
import { type Kysely, sql, type Transaction } from 'kysely'
import type { Dialect } from '../../db/connect.js'
import type { Database, ProductRow, VariantRow } from '../../db/database.js'
import { isDeadlock, isUniqueViolation } from '../../shared/db-errors.js'
import { retryAborted } from '../../db/transaction.js'
import { AppError, messages } from '../../shared/errors.js'
import type { EventSink } from '../../shared/event-sink.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { productFromRows, toProduct } from './product-view.js'
import { type ProductFieldsInput, parseProductFields } from './products.schemas.js'
import * as products from './products.repository.js'
import { freeSlugFor, takeSlug } from './products.service.js'
import * as variants from './variants.repository.js'
import { type VariantInput, parseVariantInput } from './variants.schemas.js'
import { addVariants, assertSkuFree, conflictOf, insertOptions, type VariantLimits } from './variants.service.js'
import { assertTaxClassExists } from '../taxes/taxes.service.js'
import { uncell } from '../csv/csv-format.js'
import { PRODUCT_COLUMNS } from '../csv/exports.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'

type Trx = Transaction<Database>

export interface ImportContext {
  db: Kysely<Database>
  dialect: Dialect
  events: EventSink
  limits: VariantLimits
  maxRows: number
  /** Who imports: an import that changes anything writes one audit entry, with its counts. */
  audit: AuditSource
}

export interface RowError {
  row: number
  column: string | null
  message: string
}

export interface ImportReport {
  dryRun: boolean
  partial: boolean
  applied: boolean
  rows: number
  created: { products: number; variants: number }
  updated: { products: number; variants: number }
  unchanged: number
  errors: RowError[]
}

/** The columns a product's rows must agree on: they describe the product, not the variant. */
const PRODUCT_LEVEL = [
  'product_id',
  'slug',
  'name',
  'description',
  'status',
  'category',
  'tags',
  'tax_class',
  'option1_name',
  'option2_name',
  'option3_name',
] as const
const OPTION_COLUMNS = [1, 2, 3].map((i) => [`option${i}_name`, `option${i}_value`] as const)

/** A row error whose column is known where it is raised. */
class RowFailure extends Error {
  /** The record it is about, when not the product's first. */
  rowNumber: number | undefined
  constructor(
    readonly column: string | null,
    message: string,
  ) {
    super(message)
  }
}

/** The CSV column of a field the API's rules name. */
const PRODUCT_FIELD_COLUMNS: Record<string, string> = { taxClass: 'tax_class', categoryId: 'category', options: 'option1_name', name: 'name' }
const VARIANT_FIELD_COLUMNS: Record<string, string> = {
  taxClass: 'variant_tax_class',
  compareAtPrice: 'compare_at_price',
  options: 'option1_value',
  name: 'option1_name',
  value: 'option1_value',
  imageId: 'image_urls',
}

/** Runs `step`, turning the API's own refusals into a row failure on the column its field names. */
async function onColumns<T>(columns: Record<string, string>, step: () => Promise<T> | T): Promise<T> {
  try {
    return await step()
  } catch (error) {
    if (error instanceof RowFailure) throw error
    if (error instanceof ValidationError || error instanceof AppError) {
      const field = error.field
      throw new RowFailure(field === undefined || field === 'body' ? null : (columns[field] ?? field), error.message)
    }
    throw error
  }
}

/** A record of the file: its number (the header is 1) and its cells by column, each with the export's `'` taken off. */
interface Row {
  n: number
  raw: Map<string, string>
  /** Filled by the first pass when the row's own cells are valid. */
  product?: ProductFieldsInput & { category?: string | null }
  variant?: VariantInput & { id?: number }
  /** Option names and values (null: the file has no option columns). */
  options?: Array<{ name: string; value: string }> | null
}

/**
 * Reads the file with csv-parse (RFC 4180, a byte order mark allowed), stopping past the row limit: its header's
 * columns and its records. A CSV error (an unclosed quote, a record of the wrong length) is the 422 with the parser's
 * detail; a header without `name` or `price`, or with a column no export has, is refused before any row is read.
 */
export async function readCsv(file: Buffer, maxRows: number): Promise<{ columns: string[]; records: string[][] }> {
  const parser = Readable.from(file).pipe(parse({ bom: true, skip_empty_lines: true, relax_column_count: false }))
  let columns: string[] | undefined
  const records: string[][] = []
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (columns === undefined) {
        columns = record.map((name) => name.trim().toLowerCase())
        checkHeader(columns)
        continue
      }
      if (records.length >= maxRows) {
        parser.destroy()
        throw new AppError(422, 'importTooManyRows', maxRows)
      }
      records.push(record)
    }
  } catch (error) {
    if (error instanceof CsvError) throw new AppError(422, 'importInvalidCsv', error.message)
    throw error
  }
  if (columns === undefined) checkHeader([])
  return { columns: columns ?? [], records }
}

function checkHeader(columns: readonly string[]): void {
  for (const required of ['name', 'price']) if (!columns.includes(required)) throw new AppError(422, 'importMissingColumn', required)
  const known = new Set<string>(PRODUCT_COLUMNS)
  for (const column of columns) if (!known.has(column)) throw new AppError(422, 'importUnknownColumn', column)
  const seen = new Set<string>()
  for (const column of columns) {
    if (seen.has(column)) throw new AppError(422, 'importInvalidCsv', `duplicate column ${column}`)
    seen.add(column)
  }
}

/** A cell as a number when it is an integer, else as written (the API's rule then says what is wrong). */
const integerCell = (text: string): string | number => (/^-?\d{1,15}$/.test(text.trim()) ? Number(text.trim()) : text)

/** The row's own cells checked by the API's rules (no database): its product fields, its variant fields, its options. */
function readRow(row: Row, hasOptions: boolean): RowError[] {
  const errors: RowError[] = []
  const get = (column: string) => row.raw.get(column)
  const attempt = (columns: Record<string, string>, step: () => void) => {
    try {
      step()
    } catch (error) {
      if (error instanceof ValidationError || error instanceof AppError) {
        errors.push({ row: row.n, column: error.field === undefined ? null : (columns[error.field] ?? error.field), message: error.message })
      } else if (error instanceof RowFailure) {
        errors.push({ row: row.n, column: error.column, message: error.message })
      } else throw error
    }
  }
  attempt(PRODUCT_FIELD_COLUMNS, () => {
    const raw: Record<string, unknown> = {}
    for (const [column, field] of [
      ['name', 'name'],
      ['description', 'description'],
      ['tags', 'tags'],
    ] as const) {
      const value = get(column)
      if (value !== undefined) raw[field] = value
    }
    // An empty slug, status or tax class is no change (there is no product without one).
    for (const [column, field] of [
      ['slug', 'slug'],
      ['status', 'status'],
      ['tax_class', 'taxClass'],
    ] as const) {
      const value = get(column)?.trim()
      if (value) raw[field] = value
    }
    const category = get('category')
    row.product = { ...parseProductFields(raw, { create: false, text: true }), ...(category !== undefined ? { category: category.trim() || null } : {}) }
  })
  attempt(VARIANT_FIELD_COLUMNS, () => {
    const raw: Record<string, unknown> = {}
    const price = get('price') ?? ''
    if (price.trim() === '') throw new ValidationError('price should not be empty', 'price')
    raw.price = price.trim()
    const compareAt = get('compare_at_price')
    if (compareAt !== undefined) raw.compareAtPrice = compareAt.trim() === '' ? null : compareAt.trim()
    const stock = get('stock')
    if (stock !== undefined && stock.trim() !== '') raw.stock = integerCell(stock)
    const sku = get('sku')
    if (sku !== undefined) raw.sku = sku.trim() === '' ? null : sku.trim()
    const taxClass = get('variant_tax_class')
    if (taxClass !== undefined) raw.taxClass = taxClass.trim() === '' ? null : taxClass
    const position = get('position')
    if (position !== undefined && position.trim() !== '') raw.position = integerCell(position)
    const variant: VariantInput & { id?: number } = parseVariantInput(raw, false)
    const id = get('variant_id')?.trim()
    if (id) {
      if (!/^\d{1,10}$/.test(id)) throw new ValidationError('variant_id must be an integer number', 'variant_id')
      variant.id = Number(id)
    }
    row.variant = variant
  })
  attempt(VARIANT_FIELD_COLUMNS, () => {
    if (!hasOptions) {
      row.options = null
      return
    }
    const options: Array<{ name: string; value: string }> = []
    for (const [nameColumn, valueColumn] of OPTION_COLUMNS) {
      const name = get(nameColumn)?.trim() ?? ''
      const value = get(valueColumn)?.trim() ?? ''
      if (name === '' && value === '') continue
      if (name === '') throw new RowFailure(nameColumn, messages.optionsIncomplete)
      if (value === '') throw new RowFailure(valueColumn, messages.optionsIncomplete)
      options.push({ name, value })
    }
    // No option cell filled: the row does not say (a variant found by id or SKU keeps its values).
    row.options = options.length === 0 ? null : options
  })
  return errors
}

/** One product of the file: an existing one (`productId`) or a new one, and its rows in file order. */
interface Group {
  productId: number | undefined
  /** How messages name the product: its slug (the file's for a new one), else its name. */
  label: string
  rows: Row[]
  failed: boolean
}

/**
 * Which product each row is about: by `slug` when a product has it, else by `product_id` when that product exists,
 * else a new product (rows of one new slug make one product; a row with neither slug nor id is a product of its own).
 */
async function groupRows(db: Kysely<Database>, rows: Row[]): Promise<Group[]> {
  const groups = new Map<string, Group>()
  const slugOf = (row: Row) => row.raw.get('slug')?.trim() ?? ''
  const idOf = (row: Row) => {
    const text = row.raw.get('product_id')?.trim() ?? ''
    return /^\d{1,10}$/.test(text) ? Number(text) : undefined
  }
  // Every product the file names, in a few statements rather than one per row.
  const found = await products.findProductsBySlugsOrIds(
    db,
    [...new Set(rows.map(slugOf).filter((slug) => slug !== ''))],
    [...new Set(rows.map(idOf).filter((id): id is number => id !== undefined))],
  )
  const bySlug = new Map(found.map((product) => [product.slug, product]))
  const byId = new Map(found.map((product) => [product.id, product]))
  for (const row of rows) {
    const slug = slugOf(row)
    const id = idOf(row)
    const product = (slug !== '' ? bySlug.get(slug) : undefined) ?? (id !== undefined ? byId.get(id) : undefined)
    const key = product ? `p:${product.id}` : slug !== '' ? `new:${slug}` : `row:${row.n}`
    let group = groups.get(key)
    if (!group) {
      group = { productId: product?.id, label: product?.slug ?? (slug || (row.raw.get('name')?.trim() ?? '')), rows: [], failed: false }
      groups.set(key, group)
    }
    group.rows.push(row)
  }
  return [...groups.values()]
}

/** The rows of one product must agree on its own columns: each row that differs from the first is an error. */
function checkAgreement(group: Group, columns: readonly string[]): RowError[] {
  const errors: RowError[] = []
  const first = group.rows[0]!
  for (const row of group.rows.slice(1)) {
    for (const column of PRODUCT_LEVEL) {
      if (!columns.includes(column)) continue
      const a = (first.raw.get(column) ?? '').trim()
      const b = (row.raw.get(column) ?? '').trim()
      // The keys a row is matched by may be left empty on some rows: the row found its product by the other one.
      if ((column === 'product_id' || column === 'slug') && (a === '' || b === '')) continue
      const same = column.endsWith('_name') ? a.toLowerCase() === b.toLowerCase() : a === b
      if (!same) {
        errors.push({ row: row.n, column, message: messages.importRowsDisagree(group.label, column) })
        break
      }
    }
  }
  return errors
}

interface Counts {
  createdProducts: number
  createdVariants: number
  updatedProducts: number
  updatedVariants: number
  unchanged: number
}

const keyOf = (text: string) => text.toLowerCase()

/** The id of the category a file names by slug (the row fails for an unknown one). */
async function categoryId(trx: Trx, cache: Map<string, number | undefined>, slug: string | null): Promise<number | null> {
  if (slug === null) return null
  if (!cache.has(slug)) {
    cache.set(slug, (await trx.selectFrom('categories').select('id').where('slug', '=', slug).executeTakeFirst())?.id)
  }
  const id = cache.get(slug)
  if (id === undefined) throw new RowFailure('category', messages.importCategoryMissing(slug))
  return id
}

/** Whether the row's options name exactly the product's options (ignoring case and order). */
function sameOptionNames(row: Row, names: readonly string[]): boolean {
  const sent = (row.options ?? []).map((o) => keyOf(o.name)).sort()
  const own = names.map(keyOf).sort()
  return sent.length === own.length && sent.every((name, i) => name === own[i])
}

/**
 * Applies an existing product's rows inside the import's transaction, `locked` being the product as lockExisting
 * locked and read it (undefined: deleted since the file was read). Only what differs is written: a row equal to the
 * product is unchanged and writes nothing.
 */
async function applyExisting(
  trx: Trx,
  ctx: ImportContext,
  group: Group,
  locked: ProductRow | undefined,
  counts: Counts,
  categories: Map<string, number | undefined>,
  /** Its options and variants as read under its lock (lockExisting), when read then. */
  lockedRows?: variants.ProductRowsOf,
): Promise<void> {
  const productId = group.productId!
  if (!locked) throw new RowFailure(null, messages.productNotFound)
  const now = nowIso()
  const first = group.rows[0]!
  const fields = first.product!
  const changes: Partial<Omit<ProductRow, 'id' | 'created_at'>> = {}
  await onColumns(PRODUCT_FIELD_COLUMNS, async () => {
    if (fields.name !== undefined && fields.name !== locked.name) changes.name = fields.name
    if (fields.description !== undefined && fields.description !== locked.description) changes.description = fields.description
    if (fields.taxClass !== undefined && fields.taxClass !== locked.tax_class) {
      await assertTaxClassExists(trx, fields.taxClass)
      changes.tax_class = fields.taxClass
    }
    if (fields.category !== undefined) {
      const id = await categoryId(trx, categories, fields.category)
      if (id !== locked.category_id) changes.category_id = id
    }
    if (fields.status !== undefined && fields.status !== locked.status) {
      if (fields.status !== 'draft' && locked.image_key === '') throw new AppError(409, 'imagelessProduct')
      changes.status = fields.status
    }
    if (fields.slug !== undefined && fields.slug !== locked.slug) {
      await takeSlug(trx, fields.slug, productId)
      await products.keepOldSlug(trx, productId, locked.slug, now)
      changes.slug = fields.slug
    }
  })
  const tagsChange = fields.tags !== undefined && JSON.stringify(fields.tags) !== locked.tags
  const productChanged = Object.keys(changes).length > 0 || tagsChange
  if (Object.keys(changes).length > 0) await products.updateProductById(trx, productId, { ...changes, updated_at: now })
  if (tagsChange) await products.replaceTags(trx, productId, fields.tags!)

  // Only this product's rows change its options and variants, so those read under its lock are still true here.
  const { options, values } = lockedRows ?? (await variants.findOptionRows(trx, productId))
  let { variants: rows, links } = lockedRows ?? (await variants.findVariantRows(trx, productId))
  const optionNames = options.map((o) => o.name)
  let variantsChanged = false
  for (const row of group.rows) {
    try {
      variantsChanged = (await applyRow(row)) || variantsChanged
    } catch (error) {
      if (error instanceof RowFailure) error.rowNumber = row.n
      throw error
    }
  }
  async function applyRow(row: Row): Promise<boolean> {
    let variantsChanged = false
    if (row.options && !sameOptionNames(row, optionNames)) {
      throw new RowFailure('option1_name', messages.importOptionsDisagree(group.label))
    }
    const input = row.variant!
    const valueKeysOf = (variantId: number) =>
      options.map((o) => values.find((v) => v.option_id === o.id && (links.get(variantId) ?? []).includes(v.id))?.value_key ?? '')
    const sentKeys = row.options ? options.map((o) => keyOf(row.options!.find((s) => keyOf(s.name) === o.name_key)?.value ?? '')) : undefined
    let variant: VariantRow | undefined
    if (input.id !== undefined) {
      variant = rows.find((v) => v.id === input.id)
      if (!variant) throw new RowFailure('variant_id', messages.importVariantNotFound(input.id))
    } else {
      if (input.sku) {
        const holder = await variants.findVariantIdBySku(trx, keyOf(input.sku))
        if (holder !== undefined) {
          variant = rows.find((v) => v.id === holder)
          if (!variant) throw new RowFailure('sku', messages.importSkuOfAnotherVariant(input.sku))
        }
      }
      // A product of one variant: the row is about it, unless it names other option values (a new variant).
      if (!variant && rows.length === 1 && (sentKeys === undefined || sentKeys.join('\u0000') === valueKeysOf(rows[0]!.id).join('\u0000'))) variant = rows[0]
      if (!variant && !input.sku && rows.length > 1 && sentKeys === undefined) throw new RowFailure('sku', messages.importNoSku(group.label))
    }
    // The variant's own SKU (its key, as locked) is held by no other variant: only another SKU is looked up.
    if (variant && input.sku && keyOf(input.sku) !== variant.sku_key) {
      const holder = await variants.findVariantIdBySku(trx, keyOf(input.sku))
      if (holder !== undefined && holder !== variant.id) throw new RowFailure('sku', messages.importSkuOfAnotherVariant(input.sku))
    }
    if (!variant) {
      // A new variant of the product: POST /products/:id/variants' checks and rows.
      await onColumns(VARIANT_FIELD_COLUMNS, () => addVariants(trx, ctx.limits, productId, [newVariant(input, row.options ?? [])]))
      counts.createdVariants += 1
      ;({ variants: rows, links } = await variants.findVariantRows(trx, productId))
      return true
    }
    if (sentKeys !== undefined && sentKeys.join('\u0000') !== valueKeysOf(variant.id).join('\u0000')) {
      throw new RowFailure('option1_value', messages.importOptionsDisagree(group.label))
    }
    const update: Parameters<typeof variants.updateVariant>[2] = {}
    if (input.priceCents !== undefined && input.priceCents !== Number(variant.price_cents)) update.price_cents = input.priceCents
    if (input.compareAtCents !== undefined && input.compareAtCents !== (variant.compare_at_cents === null ? null : Number(variant.compare_at_cents))) {
      update.compare_at_cents = input.compareAtCents
    }
    if (input.stock !== undefined && input.stock !== variant.stock) update.stock = input.stock
    if (input.sku !== undefined && input.sku !== variant.sku) {
      await onColumns(VARIANT_FIELD_COLUMNS, () => assertSkuFree(trx, input.sku, variant.id))
      update.sku = input.sku
      update.sku_key = input.sku === null ? null : keyOf(input.sku)
    }
    if (input.taxClass !== undefined && input.taxClass !== variant.tax_class) {
      if (input.taxClass !== null) await onColumns(VARIANT_FIELD_COLUMNS, () => assertTaxClassExists(trx, input.taxClass!))
      update.tax_class = input.taxClass
    }
    if (input.position !== undefined && input.position !== variant.position) update.position = input.position
    if (Object.keys(update).length > 0) {
      const updated = await variants.updateVariant(trx, variant.id, { ...update, updated_at: now })
      // A later row of the file may name the variant again: it sees the variant as this row left it.
      if (updated) rows = rows.map((v) => (v.id === updated.id ? updated : v))
      counts.updatedVariants += 1
      variantsChanged = true
    } else if (!productChanged) counts.unchanged += 1
    return variantsChanged
  }
  if (productChanged) counts.updatedProducts += 1
  if (!productChanged && !variantsChanged) return
  const row = await variants.refreshProductAggregates(trx, productId, now)
  if (!row) throw new RowFailure(null, messages.productNotFound)
  const product = await toProduct(trx, row)
  await ctx.events.emit(trx, { type: 'product.updated', data: product })
  await ctx.events.stockChanged(trx, product, locked.stock)
}

/**
 * Creates a new product from its rows, as a JSON create does: a draft (a file brings no images, and only a draft may
 * be without), its options from the rows' option names and values, a variant per row (or its default variant).
 */
async function applyNew(trx: Trx, ctx: ImportContext, group: Group, counts: Counts, categories: Map<string, number | undefined>): Promise<void> {
  const first = group.rows[0]!
  const fields = first.product!
  const now = nowIso()
  const names = first.options ?? []
  for (const row of group.rows) {
    if (
      !sameOptionNames(
        row,
        names.map((o) => o.name),
      )
    )
      throw new RowFailure('option1_name', messages.importOptionsDisagree(group.label))
  }
  if (names.length === 0 && group.rows.length > 1) throw new RowFailure('sku', messages.importNoSku(group.label))
  const category = fields.category === undefined ? null : await categoryId(trx, categories, fields.category)
  const product = await onColumns(PRODUCT_FIELD_COLUMNS, async () => {
    if (fields.name === undefined) throw new ValidationError('name should not be empty', 'name')
    if (fields.status !== undefined && fields.status !== 'draft') throw new AppError(409, 'imagelessProduct')
    if (fields.taxClass !== undefined) await assertTaxClassExists(trx, fields.taxClass)
    if (fields.slug !== undefined) await takeSlug(trx, fields.slug)
    const slug = fields.slug ?? (await freeSlugFor(trx, fields.name))
    const price = first.variant!.priceCents ?? 0
    let row = await products.insertProduct(trx, {
      name: fields.name,
      description: fields.description ?? '',
      price_cents: price,
      price_max_cents: price,
      stock: first.variant!.stock ?? 0,
      image_key: '',
      image_url: '',
      category_id: category,
      created_at: now,
      updated_at: now,
      slug: slug ?? `product-new-${first.n}-${Date.now()}`,
      status: 'draft',
      ...(fields.taxClass !== undefined ? { tax_class: fields.taxClass } : {}),
    })
    if (slug === undefined) row = (await products.updateProductById(trx, row.id, { slug: `product-${row.id}`, updated_at: now })) ?? row
    if (fields.tags !== undefined && fields.tags.length > 0) await products.replaceTags(trx, row.id, fields.tags)
    return row
  })
  let currentRow = first
  try {
    if (names.length > 0) {
      const optionValues = names.map((o) => ({ name: o.name, values: [] as string[] }))
      for (const row of group.rows) {
        for (const option of optionValues) option.values.push(row.options!.find((o) => keyOf(o.name) === keyOf(option.name))!.value)
      }
      await onColumns(VARIANT_FIELD_COLUMNS, () => insertOptions(trx, ctx.limits, product.id, optionValues))
      for (const row of group.rows) {
        currentRow = row
        await onColumns(VARIANT_FIELD_COLUMNS, () => addVariants(trx, ctx.limits, product.id, [newVariant(row.variant!, row.options ?? [])]))
      }
    } else {
      const input = first.variant!
      await onColumns(VARIANT_FIELD_COLUMNS, () => assertSkuFree(trx, input.sku))
      await variants.insertDefaultVariant(trx, product, { sku: input.sku, compare_at_cents: input.compareAtCents })
      if (input.taxClass) {
        const taxClass = input.taxClass
        await onColumns(VARIANT_FIELD_COLUMNS, () => assertTaxClassExists(trx, taxClass))
        await trx.updateTable('product_variants').set({ tax_class: taxClass }).where('product_id', '=', product.id).execute()
      }
    }
  } catch (error) {
    if (error instanceof RowFailure) error.rowNumber = currentRow.n
    throw error
  }
  counts.createdProducts += 1
  counts.createdVariants += group.rows.length
  const row = await variants.refreshProductAggregates(trx, product.id, now)
  const view = await toProduct(trx, row ?? product)
  await ctx.events.emit(trx, { type: 'product.created', data: view })
}

/** The most plain new products written together (applyNewTogether); well under either database's bound values. */
const TOGETHER_MAX = 200

/**
 * A new product applyNewTogether can write with its neighbours: one row (its default variant, no options), the slug
 * the file gives it, a draft. Anything else goes product by product (applyNew).
 */
function isPlainNew(group: Group): boolean {
  if (group.failed || group.productId !== undefined || group.rows.length !== 1) return false
  const row = group.rows[0]!
  const fields = row.product
  return (
    fields !== undefined &&
    row.variant !== undefined &&
    (row.options ?? []).length === 0 &&
    fields.name !== undefined &&
    fields.slug !== undefined &&
    (fields.status === undefined || fields.status === 'draft')
  )
}

/**
 * A run of plain new products (isPlainNew) written together, each as applyNew writes it, in a few statements for the
 * whole run instead of about fifteen a product (on PostgreSQL each is a round trip). Checks first: when any product
 * would fail one (a slug or SKU taken, or twice in the run, an unknown category or tax class), nothing is written
 * and the answer is false, so that the run goes product by product and each failure is reported on its row.
 */
async function applyNewTogether(
  trx: Trx,
  ctx: ImportContext,
  run: readonly Group[],
  counts: Counts,
  caches: { categories: Map<string, number | undefined>; taxClasses: Set<string> },
): Promise<boolean> {
  const now = nowIso()
  const planned: Array<{ fields: ProductFieldsInput & { category?: string | null }; variant: VariantInput; category: number | null }> = []
  const skuKeys = new Set<string>()
  try {
    for (const group of run) {
      const { product: fields, variant } = group.rows[0]!
      if (!fields || !variant) return false
      const category = fields.category === undefined ? null : await categoryId(trx, caches.categories, fields.category)
      for (const taxClass of [fields.taxClass, variant.taxClass]) {
        if (taxClass === undefined || taxClass === null || caches.taxClasses.has(taxClass)) continue
        await assertTaxClassExists(trx, taxClass)
        caches.taxClasses.add(taxClass)
      }
      if (variant.sku !== undefined && variant.sku !== null) {
        if (skuKeys.has(keyOf(variant.sku))) return false
        skuKeys.add(keyOf(variant.sku))
      }
      planned.push({ fields, variant, category })
    }
  } catch (error) {
    if (error instanceof RowFailure || error instanceof AppError) return false
    throw error
  }
  const slugs = planned.map(({ fields }) => fields.slug!)
  if ((await products.takenSlugs(trx, slugs)).length > 0) return false
  if ((await variants.takenSkuKeys(trx, [...skuKeys])).length > 0) return false

  await products.forgetOldSlugs(trx, slugs)
  const rows = await products.insertProducts(
    trx,
    planned.map(({ fields, variant, category }) => ({
      name: fields.name!,
      description: fields.description ?? '',
      price_cents: variant.priceCents ?? 0,
      price_max_cents: variant.priceCents ?? 0,
      stock: variant.stock ?? 0,
      image_key: '',
      image_url: '',
      category_id: category,
      created_at: now,
      updated_at: now,
      slug: fields.slug!,
      status: 'draft' as const,
      tax_class: fields.taxClass ?? 'standard',
      tags: JSON.stringify(fields.tags ?? []),
    })),
  )
  const bySlug = new Map(rows.map((row) => [row.slug, row]))
  const made = planned.map(({ fields, variant }) => ({ product: bySlug.get(fields.slug!)!, variant, tags: fields.tags ?? [] }))
  await products.insertTagRows(
    trx,
    made.map(({ product, tags }) => ({ productId: product.id, tags })),
  )
  const variantRows = await variants.insertDefaultVariants(
    trx,
    made.map(({ product, variant }) => ({
      product,
      sku: variant.sku ?? null,
      compare_at_cents: variant.compareAtCents ?? null,
      tax_class: variant.taxClass ?? null,
    })),
  )
  const variantOf = new Map(variantRows.map((row) => [row.product_id, row]))
  counts.createdProducts += made.length
  counts.createdVariants += made.length
  // Each product's one variant is its price and stock, so its aggregates are the row's as written; the product as
  // answered is made from the rows written (no images, options or links yet).
  for (const { product } of made) {
    const view = productFromRows(product, [], { options: [], values: [], variants: [variantOf.get(product.id)!], links: new Map() })
    await ctx.events.emit(trx, { type: 'product.created', data: view })
  }
  return true
}

/** A row's variant as POST /products/:id/variants takes it: a new variant comes last, so its position is not sent. */
function newVariant(input: VariantInput, options: Array<{ name: string; value: string }>): VariantInput {
  const out: VariantInput = { options }
  if (input.priceCents !== undefined) out.priceCents = input.priceCents
  if (input.compareAtCents !== undefined) out.compareAtCents = input.compareAtCents
  if (input.stock !== undefined) out.stock = input.stock
  if (input.sku !== undefined) out.sku = input.sku
  if (input.taxClass !== undefined) out.taxClass = input.taxClass
  return out
}

/**
 * Locks the existing products the import will apply, as every catalog write locks one (its variants, then its row),
 * in ascending id order, before anything is written; answers each one's row as locked (none when deleted since).
 *
 * Checkout locks the products it sells in that order too (the inventory): an import that locked them in its file's
 * order, product by product, could hold 20 and wait for 10 while a checkout holds 10 and waits for 20, and PostgreSQL
 * aborted one of them (deadlock_detected). The products are still applied in the file's order, not by id: the order
 * decides who wins what two rows ask for (a SKU one product gives up and a later row takes, a slug two rows want),
 * so sorting the writes would change the report. Taking every lock first orders the waits and changes nothing else.
 */
async function lockExisting(
  trx: Trx,
  dialect: Dialect,
  groups: readonly Group[],
): Promise<{ locked: Map<number, ProductRow | undefined>; rowsOf: Map<number, variants.ProductRowsOf> }> {
  const ids = groups.flatMap((group) => (group.failed || group.productId === undefined ? [] : [group.productId])).sort((a, b) => a - b)
  const locked = new Map<number, ProductRow | undefined>()
  for (const id of ids) locked.set(id, await variants.lockProduct(trx, dialect, id))
  // Their options and variants, read under the locks a few hundred products at a time.
  const rowsOf = new Map<number, variants.ProductRowsOf>()
  const present = ids.filter((id) => locked.get(id) !== undefined)
  for (let i = 0; i < present.length; i += READ_MANY) {
    for (const [id, rows] of await variants.findRowsOfProducts(trx, present.slice(i, i + READ_MANY))) rowsOf.set(id, rows)
  }
  return { locked, rowsOf }
}

/** How many products' rows one statement reads (lockExisting). */
const READ_MANY = 500

/** Thrown to roll the transaction back when the import must write nothing (a dry run, or an error without `partial`). */
class RollBack extends Error {}

/**
 * The product import: reads and checks the file, then applies it in the file's order in one transaction (the
 * existing products locked first, by id: lockExisting), in runs of products each behind a savepoint, and product by
 * product behind savepoints of their own when a run fails (applyFile), so that a failing product leaves nothing
 * behind. Without `partial`, one error rolls the whole transaction back; a dry run always does, after doing
 * everything (so it finds what the database would refuse).
 */
export async function importProducts(ctx: ImportContext, file: Buffer, options: { dryRun: boolean; partial: boolean }): Promise<ImportReport> {
  const { columns, records } = await readCsv(file, ctx.maxRows)
  const hasOptions = columns.some((c) => c.startsWith('option'))
  const rows: Row[] = records.map((record, index) => {
    const raw = new Map<string, string>()
    for (const [i, column] of columns.entries()) raw.set(column, uncell(record[i] ?? ''))
    return { n: index + 2, raw }
  })
  const errors: RowError[] = []
  for (const row of rows) errors.push(...readRow(row, hasOptions))
  const groups = await groupRows(ctx.db, rows)
  for (const group of groups) errors.push(...checkAgreement(group, columns))
  const failedRows = new Set(errors.map((e) => e.row))
  for (const group of groups) if (group.rows.some((row) => failedRows.has(row.n))) group.failed = true
  const counts: Counts = { createdProducts: 0, createdVariants: 0, updatedProducts: 0, updatedVariants: 0, unchanged: 0 }
  let applied = false
  // PostgreSQL: two writers each wanting a unique key the other holds (two imports renaming products to each other's
  // slugs, an import and an admin's edit) deadlock, and PostgreSQL aborts one. The import then runs again from the
  // file's checks: its transaction rolled back whole, and it makes no network call.
  const checked = { errors: [...errors], failed: groups.map((group) => group.failed) }
  await retryAborted(async () => {
    errors.splice(0, errors.length, ...checked.errors)
    for (const [i, group] of groups.entries()) group.failed = checked.failed[i] === true
    Object.assign(counts, { createdProducts: 0, createdVariants: 0, updatedProducts: 0, updatedVariants: 0, unchanged: 0 })
    applied = await applyFile(ctx, { rows, groups, counts, errors, options })
  })
  errors.sort((a, b) => a.row - b.row)
  return {
    dryRun: options.dryRun,
    partial: options.partial,
    applied,
    rows: rows.length,
    created: { products: counts.createdProducts, variants: counts.createdVariants },
    updated: { products: counts.updatedProducts, variants: counts.updatedVariants },
    unchanged: counts.unchanged,
    errors,
  }
}

/**
 * The checked file applied in one transaction (see importProducts): whether it was committed (false for a dry run
 * or an error without `partial`, which roll it back).
 */
async function applyFile(
  ctx: ImportContext,
  run: { rows: Row[]; groups: Group[]; counts: Counts; errors: RowError[]; options: { dryRun: boolean; partial: boolean } },
): Promise<boolean> {
  const { rows, groups, counts, errors, options } = run
  try {
    await ctx.db.transaction().execute(async (trx) => {
      const categories = new Map<string, number | undefined>()
      // A product's events wait for its rows to succeed, and all of them for the decision to commit: a dry run, or a
      // product rolled back to its savepoint, emits nothing (not even to in-process listeners).
      const kept: Array<(trx: Trx) => Promise<void>> = []
      let pending: Array<(trx: Trx) => Promise<void>> = []
      const events: EventSink = {
        emit: async (_trx, event) => void pending.push((t) => ctx.events.emit(t, event)),
        // Data to be loaded is read now, as of this product's change, not when the import ends.
        emitLoaded: async (_trx, type, load) => {
          const data = await load()
          pending.push((t) => ctx.events.emit(t, { type, data }))
        },
        stockChanged: async (_trx, product, before, load) => {
          const data = load ? await load() : undefined
          pending.push((t) => ctx.events.stockChanged(t, product, before, load ? async () => data : undefined))
        },
      }
      const buffered = { ...ctx, events }
      // Before the first savepoint: a product rolled back to its savepoint stays locked until the import ends.
      const { locked, rowsOf } = await lockExisting(trx, ctx.dialect, groups)
      /** Runs `apply` behind a savepoint: whether it succeeded; when not, it left nothing (rows, counts, events). */
      const behindSavepoint = async (apply: () => Promise<boolean>, failed: (error: unknown) => void): Promise<boolean> => {
        const before = { ...counts }
        pending = []
        await sql`savepoint csv_import_product`.execute(trx)
        try {
          const done = await apply()
          await sql`release savepoint csv_import_product`.execute(trx)
          if (done) kept.push(...pending)
          return done
        } catch (error) {
          // The transaction is the deadlock's victim: rolled back whole, and run again.
          if (isDeadlock(error)) throw error
          await sql`rollback to savepoint csv_import_product`.execute(trx)
          await sql`release savepoint csv_import_product`.execute(trx)
          Object.assign(counts, before)
          failed(error)
          return false
        }
      }
      const caches = { categories, taxClasses: new Set<string>() }
      const apply = async (group: Group) => {
        if (group.productId === undefined) await applyNew(trx, buffered, group, counts, caches.categories)
        else await applyExisting(trx, buffered, group, locked.get(group.productId), counts, caches.categories, rowsOf.get(group.productId))
      }
      // The products go in runs of up to TOGETHER_MAX, each run behind one savepoint: a run of plain new products
      // written together (applyNewTogether), any other run product by product. When a run fails anywhere (a check, a
      // row's error, a statement), it is rolled back and its products are applied again one at a time, each behind a
      // savepoint of its own, so that each failure is reported on its row and leaves nothing behind.
      for (let i = 0; i < groups.length;) {
        const plain = isPlainNew(groups[i]!)
        let end = i + 1
        while (end < groups.length && end - i < TOGETHER_MAX && isPlainNew(groups[end]!) === plain) end += 1
        const run = groups.slice(i, end).filter((group) => !group.failed)
        i = end
        const together = plain
          ? () => applyNewTogether(trx, buffered, run, counts, caches)
          : async () => {
              for (const group of run) await apply(group)
              return true
            }
        if (run.length > 1 && (await behindSavepoint(together, () => {}))) continue
        for (const group of run) {
          await behindSavepoint(
            async () => {
              await apply(group)
              return true
            },
            (error) => {
              group.failed = true
              errors.push(rowErrorOf(error, group))
            },
          )
        }
      }
      if (options.dryRun || (errors.length > 0 && !options.partial)) throw new RollBack()
      for (const emit of kept) await emit(trx)
      const changed = counts.createdProducts + counts.createdVariants + counts.updatedProducts + counts.updatedVariants
      if (changed > 0) {
        const after = {
          partial: options.partial,
          rows: rows.length,
          created: { products: counts.createdProducts, variants: counts.createdVariants },
          updated: { products: counts.updatedProducts, variants: counts.updatedVariants },
          unchanged: counts.unchanged,
          errors: errors.length,
        }
        await recordAudit(trx, { by: ctx.audit, action: 'import.products', entityType: 'import', entityId: null, before: null, after })
      }
    })
    return true
  } catch (error) {
    if (!(error instanceof RollBack)) throw error
    return false
  }
}

/** A product's failure as a row error: its row (where known, else the product's first), its column and message. */
function rowErrorOf(error: unknown, group: Group): RowError {
  const first = group.rows[0]!.n
  if (error instanceof RowFailure) return { row: error.rowNumber ?? first, column: error.column, message: error.message }
  const rowNumber = first
  const conflict = conflictOf(
    error,
    group.rows.map((row) => ({ sku: row.variant?.sku })),
  )
  if (conflict instanceof AppError) return { row: rowNumber, column: conflict.field ?? null, message: conflict.message }
  if (isUniqueViolation(error)) return { row: rowNumber, column: 'slug', message: messages.slugTaken }
  throw error
}
