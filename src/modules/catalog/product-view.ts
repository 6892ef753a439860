import type { Kysely, Selectable } from 'kysely'
import type { Database, ProductImageRow, ProductOptionsTable, ProductOptionValuesTable, ProductRow, VariantRow } from '../../db/database.js'
import { prepared } from '../../db/prepared.js'
import { centsToAmount } from '../../shared/money.js'
import type { Product, ProductImageView, ProductOptionView, ProductSummary, VariantView } from './products.schemas.js'

type Db = Kysely<Database>

/** The product columns every read selects. */
export const PRODUCT_COLUMNS = [
  'id',
  'name',
  'slug',
  'description',
  'status',
  'price_cents',
  'price_max_cents',
  'stock',
  'image_key',
  'image_url',
  'category_id',
  'tax_class',
  'tags',
  'created_at',
  'updated_at',
] as const

/** A product as lists, events and the cart show it (no images, options or variants). */
export function productRowToSummary(row: ProductRow): ProductSummary {
  const min = centsToAmount(Number(row.price_cents))
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    status: row.status,
    price: min,
    stock: row.stock,
    // '' in the row: a draft without images.
    imageUrl: row.image_url === '' ? null : row.image_url,
    categoryId: row.category_id,
    taxClass: row.tax_class,
    tags: JSON.parse(row.tags) as string[],
    priceRange: { min, max: centsToAmount(Number(row.price_max_cents)) },
    inStock: row.stock > 0,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

export function imageRowToImage(row: Pick<ProductImageRow, 'id' | 'url' | 'alt' | 'position'>): ProductImageView {
  return { id: row.id, url: row.url, alt: row.alt, position: row.position }
}

export interface OptionValueRow {
  optionId: number
  optionName: string
  optionPosition: number
  valueId: number
  value: string
  valuePosition: number
}

const imagesStatement = prepared((db, v: { productId: number }) =>
  db.selectFrom('product_images').select(['id', 'url', 'alt', 'position']).where('product_id', '=', v.productId).orderBy('position').orderBy('id'),
)
const optionValuesStatement = prepared((db, v: { productId: number }) =>
  db
    .selectFrom('product_options as o')
    .leftJoin('product_option_values as v', 'v.option_id', 'o.id')
    .select(['o.id as optionId', 'o.name as optionName', 'o.position as optionPosition', 'v.id as valueId', 'v.value as value', 'v.position as valuePosition'])
    .where('o.product_id', '=', v.productId)
    .orderBy('o.position')
    .orderBy('o.id')
    .orderBy('v.position')
    .orderBy('v.id'),
)
const variantsStatement = prepared((db, v: { productId: number }) =>
  db.selectFrom('product_variants').selectAll().where('product_id', '=', v.productId).orderBy('position').orderBy('id'),
)
let variantListReads = 0
/** A product's variant rows, by position (the product's reads, and the variant writes that change more than one). */
export async function loadVariantRows(db: Db, productId: number): Promise<VariantRow[]> {
  variantListReads += 1
  return (await variantsStatement(db, { productId })).rows
}
/** How many times this process has read a product's variants all together, for tests: a variant's new price reads none. */
export const variantListReadCount = (): number => variantListReads
/** Each variant of a product with one of its option value ids, a row a link. */
export const variantValueLinksStatement = prepared((db, v: { productId: number }) =>
  db
    .selectFrom('variant_option_values as l')
    .innerJoin('product_variants as pv', 'pv.id', 'l.variant_id')
    .select(['l.variant_id as variantId', 'l.option_value_id as valueId'])
    .where('pv.product_id', '=', v.productId),
)

/** One variant's option values, with their options' names and places (a write to that variant's own fields). */
const oneVariantValuesStatement = prepared((db, v: { variantId: number }) =>
  db
    .selectFrom('variant_option_values as l')
    .innerJoin('product_option_values as v', 'v.id', 'l.option_value_id')
    .innerJoin('product_options as o', 'o.id', 'v.option_id')
    .select(['o.id as optionId', 'o.name as optionName', 'o.position as optionPosition', 'v.id as valueId', 'v.value as value', 'v.position as valuePosition'])
    .where('l.variant_id', '=', v.variantId),
)

/** A variant's option values, as variantRowToVariant takes them. */
export async function loadVariantValues(db: Db, variantId: number): Promise<OptionValueRow[]> {
  return (await oneVariantValuesStatement(db, { variantId })).rows
}

/**
 * A product's images, options and variants, read in four queries, each compiled once (`prepared`: on PostgreSQL a
 * named statement, planned once per connection; planning the four took ~5 ms of the server's time a read).
 */
export async function loadProductParts(
  db: Db,
  productId: number,
): Promise<{ images: ProductImageView[]; options: ProductOptionView[]; variants: VariantView[] }> {
  const [images, values, variants, links] = await Promise.all([
    imagesStatement(db, { productId }).then((result) => result.rows),
    optionValuesStatement(db, { productId }).then((result) => result.rows),
    loadVariantRows(db, productId),
    variantValueLinksStatement(db, { productId }).then((result) => result.rows),
  ])
  const options: ProductOptionView[] = []
  const valueById = new Map<number, OptionValueRow>()
  for (const row of values) {
    let option = options.at(-1)
    if (option?.id !== row.optionId) {
      option = { id: row.optionId, name: row.optionName, position: row.optionPosition, values: [] }
      options.push(option)
    }
    if (row.valueId === null || row.value === null || row.valuePosition === null) continue
    option.values.push({ id: row.valueId, value: row.value, position: row.valuePosition })
    valueById.set(row.valueId, { ...row, valueId: row.valueId, value: row.value, valuePosition: row.valuePosition })
  }
  const valuesOf = new Map<number, OptionValueRow[]>()
  for (const link of links) {
    const value = valueById.get(link.valueId)
    if (value) valuesOf.set(link.variantId, [...(valuesOf.get(link.variantId) ?? []), value])
  }
  return {
    images: images.map(imageRowToImage),
    options,
    variants: variants.map((v) => variantRowToVariant(v, valuesOf.get(v.id) ?? [])),
  }
}

/** A variant as the API shows it; its option values in option order. */
export function variantRowToVariant(row: VariantRow, values: readonly OptionValueRow[]): VariantView {
  return {
    id: row.id,
    productId: row.product_id,
    sku: row.sku,
    title: row.title,
    price: centsToAmount(Number(row.price_cents)),
    compareAtPrice: row.compare_at_cents === null ? null : centsToAmount(Number(row.compare_at_cents)),
    stock: row.stock,
    optionValues: [...values]
      .sort((a, b) => a.optionPosition - b.optionPosition || a.optionId - b.optionId)
      .map((v) => ({ optionId: v.optionId, name: v.optionName, valueId: v.valueId, value: v.value })),
    imageId: row.image_id,
    taxClass: row.tax_class,
    position: row.position,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** A product's option, value and variant rows as a write holds them (locked), with each variant's value ids. */
export interface ProductRows {
  options: ReadonlyArray<Selectable<ProductOptionsTable>>
  values: ReadonlyArray<Selectable<ProductOptionValuesTable>>
  variants: readonly VariantRow[]
  links: ReadonlyMap<number, readonly number[]>
}

/**
 * The product whole from rows a write already holds, as loadProductParts would read them again: options and values
 * by position (then id), variants by position (then id). A write that keeps its rows true answers without reading
 * the product twice.
 */
export function productFromRows(row: ProductRow, images: readonly ProductImageView[], rows: ProductRows): Product {
  const byPlace = <T extends { position: number; id: number }>(a: T, b: T) => a.position - b.position || a.id - b.id
  const options = [...rows.options].sort(byPlace)
  const valueRows = new Map<number, OptionValueRow>()
  const optionViews: ProductOptionView[] = options.map((option) => {
    const values = rows.values.filter((v) => v.option_id === option.id).sort(byPlace)
    for (const v of values) {
      valueRows.set(v.id, {
        optionId: option.id,
        optionName: option.name,
        optionPosition: option.position,
        valueId: v.id,
        value: v.value,
        valuePosition: v.position,
      })
    }
    return { id: option.id, name: option.name, position: option.position, values: values.map((v) => ({ id: v.id, value: v.value, position: v.position })) }
  })
  const variants = [...rows.variants].sort(byPlace).map((variant) =>
    variantRowToVariant(
      variant,
      (rows.links.get(variant.id) ?? []).map((id) => valueRows.get(id)).filter((v): v is OptionValueRow => v !== undefined),
    ),
  )
  return { ...productRowToSummary(row), images: [...images], options: optionViews, variants }
}

/** A product's images, by position. */
export async function loadImages(db: Db, productId: number): Promise<ProductImageView[]> {
  return (await imagesStatement(db, { productId })).rows.map(imageRowToImage)
}

/** The product alone, whole: the summary with its images, options and variants. */
export async function toProduct(db: Db, row: ProductRow): Promise<Product> {
  return { ...productRowToSummary(row), ...(await loadProductParts(db, row.id)) }
}
