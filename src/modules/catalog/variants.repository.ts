import { type Insertable, type Kysely, type Selectable, sql, type Transaction, type Updateable } from 'kysely'
import type { Dialect } from '../../db/connect.js'
import { isPostgres } from '../../db/dialect.js'
import { prepared } from '../../db/prepared.js'
import type { Database, ProductOptionsTable, ProductOptionValuesTable, ProductRow, ProductVariantsTable, VariantRow } from '../../db/database.js'
import { loadVariantRows, PRODUCT_COLUMNS, variantValueLinksStatement } from './product-view.js'

type Db = Kysely<Database>

/** A product's default variant as a row: its price and stock, no options, the product's time. */
function defaultVariantRow(
  product: Pick<ProductRow, 'id' | 'price_cents' | 'stock' | 'created_at'>,
  own: { sku: string | null; compare_at_cents: number | null; image_id: number | null; tax_class: string | null },
): Insertable<ProductVariantsTable> {
  return {
    product_id: product.id,
    sku: own.sku,
    sku_key: own.sku?.toLowerCase() ?? null,
    title: null,
    price_cents: product.price_cents,
    compare_at_cents: own.compare_at_cents,
    stock: product.stock,
    image_id: own.image_id,
    tax_class: own.tax_class,
    position: 0,
    values_key: '',
    created_at: product.created_at,
    updated_at: product.created_at,
  }
}

/**
 * A product's first image and its default variant (no options, values_key ''), as every product without options
 * has: written with the product, in its transaction.
 */
export async function insertDefaultVariant(
  db: Db,
  product: Pick<ProductRow, 'id' | 'price_cents' | 'stock' | 'image_key' | 'image_url' | 'created_at'>,
  own: { sku?: string | null | undefined; compare_at_cents?: number | null | undefined } = {},
): Promise<void> {
  const image =
    product.image_key === ''
      ? undefined
      : await db
          .insertInto('product_images')
          .values({ product_id: product.id, image_key: product.image_key, url: product.image_url, position: 0, created_at: product.created_at })
          .returning('id')
          .executeTakeFirstOrThrow()
  await db
    .insertInto('product_variants')
    .values(defaultVariantRow(product, { sku: own.sku ?? null, compare_at_cents: own.compare_at_cents ?? null, image_id: image?.id ?? null, tax_class: null }))
    .execute()
}

/**
 * The default variants of new products without an image (the import's run of plain new products), in one
 * statement: each as insertDefaultVariant writes it, with its SKU, compare-at price and tax class.
 */
export async function insertDefaultVariants(
  db: Db,
  variants: ReadonlyArray<{
    product: Pick<ProductRow, 'id' | 'price_cents' | 'stock' | 'created_at'>
    sku: string | null
    compare_at_cents: number | null
    tax_class: string | null
  }>,
): Promise<VariantRow[]> {
  if (variants.length === 0) return []
  return db
    .insertInto('product_variants')
    .values(variants.map(({ product, sku, compare_at_cents, tax_class }) => defaultVariantRow(product, { sku, compare_at_cents, image_id: null, tax_class })))
    .returningAll()
    .execute()
}

/** Which of the SKU keys (lower case) variants hold now. */
export async function takenSkuKeys(db: Db, keys: readonly string[]): Promise<string[]> {
  if (keys.length === 0) return []
  return (await db.selectFrom('product_variants').select('sku_key').where('sku_key', 'in', keys).execute()).map((row) => row.sku_key as string)
}

/**
 * The first image and the default variant of every product that has no variant yet, in two statements: for rows
 * written in bulk (the seed of a benchmark, the tests' factory, a copy between databases).
 */
export async function addMissingDefaultVariants(db: Db): Promise<void> {
  await sql`insert into product_images (product_id, image_key, url, alt, position, created_at)
    select p.id, p.image_key, p.image_url, '', 0, p.created_at from products p
    where p.image_key <> '' and not exists (select 1 from product_images i where i.product_id = p.id)`.execute(db)
  await sql`insert into product_variants (product_id, sku, sku_key, title, price_cents, compare_at_cents, stock, image_id, tax_class,
      position, values_key, created_at, updated_at)
    select p.id, null, null, null, p.price_cents, null, p.stock,
      (select min(i.id) from product_images i where i.product_id = p.id and i.position = 0), null, 0, '', p.created_at, p.updated_at
    from products p where not exists (select 1 from product_variants v where v.product_id = p.id)`.execute(db)
}

/** The product's variants, by position. */
export async function countVariants(db: Db, productId: number): Promise<number> {
  const row = await db
    .selectFrom('product_variants')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('product_id', '=', productId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** The id of a one-variant product's variant (the caller checked there is one). */
export async function onlyVariantId(db: Db, productId: number): Promise<number | undefined> {
  const row = await db.selectFrom('product_variants').select('id').where('product_id', '=', productId).executeTakeFirst()
  return row?.id
}

/** Sets the one variant of a one-variant product (price, stock, SKU, compare-at price), the product's own copies with it. */
export async function updateOnlyVariant(
  db: Db,
  productId: number,
  changes: { price_cents?: number; stock?: number; sku?: string | null; sku_key?: string | null; compare_at_cents?: number | null; updated_at: string },
): Promise<void> {
  await db.updateTable('product_variants').set(changes).where('product_id', '=', productId).execute()
}

/**
 * The product's copies of its variants (lowest and highest price, total stock) made true again, after a write to
 * its variants; the product as it is afterwards.
 */
export async function refreshProductAggregates(db: Db, productId: number, updatedAt?: string): Promise<ProductRow | undefined> {
  const run = updatedAt === undefined ? refreshAggregatesStatement : refreshAggregatesAtStatement
  return (await run(db, { productId, updatedAt: updatedAt ?? '' })).rows[0]
}

// Compiled once each (`prepared`; named on PostgreSQL): every write to a product's variants runs them.
const aggregates = (productId: unknown) => ({
  price_cents: sql<number>`(select min(price_cents) from product_variants where product_id = ${productId})`,
  price_max_cents: sql<number>`(select max(price_cents) from product_variants where product_id = ${productId})`,
  stock: sql<number>`(select sum(stock) from product_variants where product_id = ${productId})`,
})
const refreshAggregatesStatement = prepared((db, v: { productId: number; updatedAt: string }) =>
  db.updateTable('products').set(aggregates(v.productId)).where('id', '=', v.productId).returning(PRODUCT_COLUMNS),
)
const refreshAggregatesAtStatement = prepared((db, v: { productId: number; updatedAt: string }) =>
  db
    .updateTable('products')
    .set({ ...aggregates(v.productId), updated_at: v.updatedAt })
    .where('id', '=', v.productId)
    .returning(PRODUCT_COLUMNS),
)

type Trx = Transaction<Database>

/**
 * Locks a product for a write to its options or variants, in the inventory's order: its variants (by id), then the
 * product (PostgreSQL; SQLite runs one write at a time). Every such write takes the product's lock, so two of them on
 * one product run one after the other and each sees the other's rows. The product, or undefined when it is gone.
 * A write to one variant's own fields locks that variant alone (lockVariantAndProduct).
 */
export async function lockProduct(trx: Trx, dialect: Dialect, productId: number): Promise<ProductRow | undefined> {
  if (dialect === 'postgres') await lockVariantsStatement(trx, { productId })
  return (await lockProductStatement(trx, { productId })).rows[0]
}

const lockVariantsStatement = prepared((db, v: { productId: number }) =>
  db.selectFrom('product_variants').select('id').where('product_id', '=', v.productId).orderBy('id').forUpdate(),
)
// FOR UPDATE on PostgreSQL only (SQLite runs one write at a time, and has no such clause): one form per dialect.
const lockProductStatement = prepared((db, v: { productId: number }) =>
  db
    .selectFrom('products')
    .select(PRODUCT_COLUMNS)
    .where('id', '=', v.productId)
    .$if(isPostgres(db), (qb) => qb.forUpdate()),
)

/**
 * A write to one variant's own fields: that variant's row, locked alone (PostgreSQL; as a checkout locks it: locking
 * a row writes it there, and a hundred variants are a hundred writes), then its product's, whose lock still orders
 * the writers of the product. Undefined when either is gone.
 */
export async function lockVariantAndProduct(trx: Trx, variantId: number): Promise<{ variant: VariantRow; product: ProductRow } | undefined> {
  const variant = (await variantRowStatement(trx, { variantId })).rows[0]
  if (!variant) return undefined
  // A variant never moves to another product: its row names the product to lock.
  const product = (await lockProductStatement(trx, { productId: variant.product_id })).rows[0]
  return product ? { variant, product } : undefined
}

const variantRowStatement = prepared((db, v: { variantId: number }) =>
  db
    .selectFrom('product_variants')
    .selectAll()
    .where('id', '=', v.variantId)
    .$if(isPostgres(db), (qb) => qb.forUpdate()),
)

/** The product a variant belongs to, if the variant exists. */
export async function findVariantProductId(db: Db, variantId: number): Promise<number | undefined> {
  return (await variantProductStatement(db, { variantId })).rows[0]?.product_id
}

const variantProductStatement = prepared((db, v: { variantId: number }) => db.selectFrom('product_variants').select('product_id').where('id', '=', v.variantId))

/** A product's options and their values, as rows, each by position. */
export async function findOptionRows(db: Db, productId: number) {
  const options = (await optionRowsStatement(db, { productId })).rows
  const values = options.length === 0 ? [] : (await optionValueRowsStatement(db, { productId })).rows
  return { options, values }
}

const optionRowsStatement = prepared((db, v: { productId: number }) =>
  db.selectFrom('product_options').selectAll().where('product_id', '=', v.productId).orderBy('position').orderBy('id'),
)
const optionValueRowsStatement = prepared((db, v: { productId: number }) =>
  db
    .selectFrom('product_option_values')
    .selectAll()
    .where('option_id', 'in', db.selectFrom('product_options').select('id').where('product_id', '=', v.productId))
    .orderBy('position')
    .orderBy('id'),
)

/** A product's variants (by position) and, for each, its option value ids. */
export async function findVariantRows(db: Db, productId: number): Promise<{ variants: VariantRow[]; links: Map<number, number[]> }> {
  const variants = await loadVariantRows(db, productId)
  const rows = (await variantValueLinksStatement(db, { productId })).rows
  const links = new Map<number, number[]>()
  for (const row of rows) links.set(row.variantId, [...(links.get(row.variantId) ?? []), row.valueId])
  return { variants, links }
}

/** What findOptionRows and findVariantRows answer for one product. */
export interface ProductRowsOf {
  options: Array<Selectable<ProductOptionsTable>>
  values: Array<Selectable<ProductOptionValuesTable>>
  variants: VariantRow[]
  links: Map<number, number[]>
}

/**
 * findOptionRows and findVariantRows of several products, in four statements for all of them (the import reads the
 * products it updates this way, under their locks), each product's rows in the same order as those give them.
 */
export async function findRowsOfProducts(db: Db, productIds: readonly number[]): Promise<Map<number, ProductRowsOf>> {
  const rowsOf = new Map<number, ProductRowsOf>(productIds.map((id) => [id, { options: [], values: [], variants: [], links: new Map() }]))
  if (productIds.length === 0) return rowsOf
  const options = await db.selectFrom('product_options').selectAll().where('product_id', 'in', productIds).orderBy('position').orderBy('id').execute()
  const productOf = new Map(options.map((option) => [option.id, option.product_id]))
  for (const option of options) rowsOf.get(option.product_id)!.options.push(option)
  if (options.length > 0) {
    const values = await db
      .selectFrom('product_option_values')
      .selectAll()
      .where('option_id', 'in', db.selectFrom('product_options').select('id').where('product_id', 'in', productIds))
      .orderBy('position')
      .orderBy('id')
      .execute()
    for (const value of values) rowsOf.get(productOf.get(value.option_id)!)!.values.push(value)
  }
  const variants = await db.selectFrom('product_variants').selectAll().where('product_id', 'in', productIds).orderBy('position').orderBy('id').execute()
  for (const variant of variants) rowsOf.get(variant.product_id)!.variants.push(variant)
  const links = await db
    .selectFrom('variant_option_values as l')
    .innerJoin('product_variants as pv', 'pv.id', 'l.variant_id')
    .select(['pv.product_id as productId', 'l.variant_id as variantId', 'l.option_value_id as valueId'])
    .where('pv.product_id', 'in', productIds)
    .execute()
  for (const link of links) {
    const of = rowsOf.get(link.productId)!.links
    of.set(link.variantId, [...(of.get(link.variantId) ?? []), link.valueId])
  }
  return rowsOf
}

export async function insertOption(db: Db, option: Insertable<ProductOptionsTable>): Promise<number> {
  return (await db.insertInto('product_options').values(option).returning('id').executeTakeFirstOrThrow()).id
}

export async function insertOptionValue(db: Db, value: Insertable<ProductOptionValuesTable>): Promise<number> {
  return (await db.insertInto('product_option_values').values(value).returning('id').executeTakeFirstOrThrow()).id
}

export async function updateOption(db: Db, id: number, changes: Updateable<ProductOptionsTable>): Promise<void> {
  await db.updateTable('product_options').set(changes).where('id', '=', id).execute()
}

export async function updateOptionValue(db: Db, id: number, changes: Updateable<ProductOptionValuesTable>): Promise<void> {
  await db.updateTable('product_option_values').set(changes).where('id', '=', id).execute()
}

/** Deletes an option, its values and the variants' links to them. */
export async function deleteOption(db: Db, optionId: number): Promise<void> {
  const values = db.selectFrom('product_option_values').select('id').where('option_id', '=', optionId)
  await db.deleteFrom('variant_option_values').where('option_value_id', 'in', values).execute()
  await db.deleteFrom('product_options').where('id', '=', optionId).execute()
}

export async function deleteOptionValue(db: Db, valueId: number): Promise<void> {
  await db.deleteFrom('product_option_values').where('id', '=', valueId).execute()
}

/** How many variants use an option value. */
export async function countValueUses(db: Db, valueId: number): Promise<number> {
  const row = await db
    .selectFrom('variant_option_values')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('option_value_id', '=', valueId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** Links variants to option values. */
export async function linkValues(db: Db, links: ReadonlyArray<{ variant_id: number; option_value_id: number }>): Promise<void> {
  for (let i = 0; i < links.length; i += 400)
    await db
      .insertInto('variant_option_values')
      .values(links.slice(i, i + 400))
      .execute()
}

/** Replaces a variant's option values. */
export async function setVariantValues(db: Db, variantId: number, valueIds: readonly number[]): Promise<void> {
  await db.deleteFrom('variant_option_values').where('variant_id', '=', variantId).execute()
  if (valueIds.length > 0)
    await linkValues(
      db,
      valueIds.map((id) => ({ variant_id: variantId, option_value_id: id })),
    )
}

export async function insertVariant(db: Db, variant: Insertable<ProductVariantsTable>): Promise<VariantRow> {
  return db.insertInto('product_variants').values(variant).returningAll().executeTakeFirstOrThrow()
}

export async function updateVariant(db: Db, id: number, changes: Updateable<ProductVariantsTable>): Promise<VariantRow | undefined> {
  return db.updateTable('product_variants').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
}

/** Deletes a variant; its cart lines go with it (ON DELETE CASCADE), order lines keep their copy. */
export async function deleteVariant(db: Db, id: number): Promise<void> {
  await db.deleteFrom('product_variants').where('id', '=', id).execute()
}

/** The variant holding a SKU (compared lower-cased), if any. */
export async function findVariantIdBySku(db: Db, skuKey: string): Promise<number | undefined> {
  return (await db.selectFrom('product_variants').select('id').where('sku_key', '=', skuKey).executeTakeFirst())?.id
}

/** The product an image belongs to, if the image exists. */
export async function findImageProduct(db: Db, imageId: number): Promise<number | undefined> {
  return (await db.selectFrom('product_images').select('product_id').where('id', '=', imageId).executeTakeFirst())?.product_id
}
