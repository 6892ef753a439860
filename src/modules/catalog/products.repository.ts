import {
  CompiledQuery,
  type Expression,
  type Insertable,
  type Kysely,
  type RawBuilder,
  type Transaction,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely'
import type { Database, ProductRow, ProductStatus, ProductsTable } from '../../db/database.js'
import type { Dialect } from '../../db/connect.js'
import { prepared } from '../../db/prepared.js'
import { PRODUCT_COLUMNS } from './product-view.js'
import type { ProductSort } from './products.schemas.js'

type Db = Kysely<Database>

export interface ProductFilter {
  categoryId?: number
  /** `category=`: the ids of the category and its descendants (empty: an unknown category, nothing matches). */
  categoryIds?: readonly number[]
  /** Matched against name or description, case-insensitively, or a whole SKU. */
  q?: string
  /** Lower-cased tags: a product with any of them. */
  tagKeys?: readonly string[]
  /** Lowest and highest price of one same variant (with `inStock` and `options`). */
  minPriceCents?: number
  maxPriceCents?: number
  inStock?: boolean
  /** One same variant has, for each option (its name lower-cased), one of the values (lower-cased). */
  options?: readonly OptionFilter[]
  /** Which products: `active` (the default, the public catalog), another status, or all. */
  status?: ProductStatus | 'any'
}

export interface OptionFilter {
  nameKey: string
  valueKeys: readonly string[]
}

export interface ProductPage {
  limit: number
  offset: number
  sort: ProductSort
  /** How to find the page; by default the planner's choice. */
  plan?: ProductListPlan
}

/**
 * When many rows match, walking the sort's index and filtering on the way finds a page sooner than
 * collecting every match and sorting it. SQLite's planner cannot tell, so the service decides from
 * counts (PostgreSQL's planner weighs the LIMIT itself and ignores these).
 */
export interface ProductListPlan {
  /** Keep SQLite off the price index for a price range. */
  walkPrice: boolean
  /** Match `q` with LIKE on the way instead of through the trigram index. */
  walkSearch: boolean
}

const PLANNER: ProductListPlan = { walkPrice: false, walkSearch: false }

const COLUMNS = PRODUCT_COLUMNS

/** `%` and `_` in the search text are literal characters, not wildcards. */
function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/** The conditions on one variant `v` (besides its product): a price range, stock, option values. */
export interface VariantCondition {
  minPriceCents?: number
  maxPriceCents?: number
  inStock?: boolean
  options?: readonly OptionFilter[]
}

const hasVariantCondition = (c: VariantCondition): boolean =>
  c.minPriceCents !== undefined || c.maxPriceCents !== undefined || c.inStock !== undefined || (c.options?.length ?? 0) > 0

/** `v` (a variant) has, for option `nameKey` of its product, one of `valueKeys`. */
function variantHasOption(option: OptionFilter): RawBuilder<SqlBool> {
  return sql<SqlBool>`exists (select 1 from variant_option_values fvo
    join product_option_values fov on fov.id = fvo.option_value_id
    join product_options fo on fo.id = fov.option_id
    where fvo.variant_id = v.id and fo.name_key = ${option.nameKey} and fov.value_key in (${sql.join(option.valueKeys)}))`
}

/**
 * FROM and WHERE of the variants `v` of product `product` meeting `c` (stock > 0 when `inStock` is given: the
 * caller says what it means). With options the walk starts from the product's first named option and its values
 * (product_options by (product_id, name_key), values by (option_id, value_key), variants by value): a product without
 * that option or value costs two index probes, whatever its number of variants.
 */
export function variantsWhere(product: Expression<unknown>, c: VariantCondition, stock: boolean): RawBuilder<unknown> {
  const { from, where } = variantSource(product, c, stock)
  return sql`from ${from} where ${where}`
}

/** variantsWhere's FROM (its tables, `v` last) and WHERE apart. */
function variantSource(product: Expression<unknown>, c: VariantCondition, stock: boolean): { from: RawBuilder<unknown>; where: RawBuilder<SqlBool> } {
  const where: RawBuilder<SqlBool>[] = []
  if (c.minPriceCents !== undefined) where.push(sql<SqlBool>`v.price_cents >= ${c.minPriceCents}`)
  if (c.maxPriceCents !== undefined) where.push(sql<SqlBool>`v.price_cents <= ${c.maxPriceCents}`)
  if (stock) where.push(sql<SqlBool>`v.stock > 0`)
  const [first, ...others] = c.options ?? []
  for (const option of others) where.push(variantHasOption(option))
  if (first === undefined) return { from: sql`product_variants v`, where: sql.join([sql<SqlBool>`v.product_id = ${product}`, ...where], sql` and `) }
  return {
    from: sql`product_options fo1
    join product_option_values fov1 on fov1.option_id = fo1.id
    join variant_option_values fvo1 on fvo1.option_value_id = fov1.id
    join product_variants v on v.id = fvo1.variant_id`,
    where: sql.join(
      [
        sql<SqlBool>`fo1.product_id = ${product}`,
        sql<SqlBool>`fo1.name_key = ${first.nameKey}`,
        sql<SqlBool>`fov1.value_key in (${sql.join(first.valueKeys)})`,
        ...where,
      ],
      sql` and `,
    ),
  }
}

/**
 * Whether variant_filters answers the filter's conditions on one same variant: it has options (a variant without any
 * has no rows there) and does not ask for products with none in stock (a product-wide "none", read from the variants).
 */
export function usesVariantFilters(filter: ProductFilter): boolean {
  return (filter.options?.length ?? 0) > 0 && filter.inStock !== false
}

/** One option and no other condition on the variant: a product having one of its values (productHasOptionValue). */
function isOptionAlone(filter: ProductFilter): boolean {
  return filter.options?.length === 1 && filter.minPriceCents === undefined && filter.maxPriceCents === undefined && filter.inStock === undefined
}

/**
 * The filter's conditions on the product itself (search, tags) for the product of variant_filters' row `f`: one probe of
 * the product, if any (the row carries the rest).
 */
export function ownProductConditions(dialect: Dialect, filter: ProductFilter, f: string): RawBuilder<SqlBool>[] {
  const own: ProductFilter = { status: 'any', ...(filter.q !== undefined ? { q: filter.q } : {}), ...(filter.tagKeys ? { tagKeys: filter.tagKeys } : {}) }
  if (own.q === undefined && (own.tagKeys?.length ?? 0) === 0) return []
  const conditions = productConditions('p', dialect, own)
  return [sql<SqlBool>`exists (select 1 from products p where p.id = ${sql.ref(`${f}.product_id`)} and ${sql.join(conditions, sql` and `)})`]
}

/**
 * FROM and WHERE of the rows `f1` of variant_filters of the variants having, for each of `options` (at least one),
 * one of its values, and meeting the filter's status, categories, stock (`inStock: true`) and price range: `f1` is the
 * row of the first option's value, one range of variant_filters_value_idx; each other option is a probe of the same
 * variant's rows (`f2`, `f3`… by primary key). The conditions on the product itself (search, tags) are not here.
 */
export function variantFilterRows(
  filter: ProductFilter,
  options: readonly OptionFilter[],
  categories: RowCategories = 'filter',
): { from: RawBuilder<unknown>; where: RawBuilder<SqlBool>[] } {
  const [first, ...others] = options
  if (first === undefined) throw new Error('variantFilterRows needs an option')
  const where: RawBuilder<SqlBool>[] = [
    sql<SqlBool>`f1.name_key = ${first.nameKey}`,
    sql<SqlBool>`f1.value_key in (${sql.join(first.valueKeys)})`,
    ...variantRowConditions('f1', filter, categories),
  ]
  const tables: RawBuilder<unknown>[] = [sql`variant_filters f1`]
  others.forEach((option, i) => {
    const f = sql.ref(`f${i + 2}`)
    tables.push(sql`variant_filters ${f}`)
    where.push(sql<SqlBool>`${sql.ref(`f${i + 2}.variant_id`)} = f1.variant_id`)
    where.push(sql<SqlBool>`${sql.ref(`f${i + 2}.name_key`)} = ${option.nameKey}`)
    where.push(sql<SqlBool>`${sql.ref(`f${i + 2}.value_key`)} in (${sql.join(option.valueKeys)})`)
  })
  // CROSS JOIN: SQLite joins in the order written (the first option's range, then probes); PostgreSQL plans it.
  return { from: sql.join(tables, sql` cross join `), where }
}

/**
 * Which categories the rows of variant_filters are taken from: the filter's (`filter`: any without a category filter),
 * every category one at a time (`each`: for a count per category, the price range then stays a range of the index in
 * each), the category `c.id` of an enclosing query over `categories c` (`outer`: the same, one subquery per
 * category), or none (`none`: the products without a category). The last three are for a filter without categories.
 */
export type RowCategories = 'filter' | 'each' | 'outer' | 'none'

/** The conditions of the filter that one row `f` of variant_filters carries: status, categories, stock, price. */
export function variantRowConditions(f: string, filter: ProductFilter, categories: RowCategories = 'filter'): RawBuilder<SqlBool>[] {
  const col = (name: string) => sql.ref(`${f}.${name}`)
  const conditions: RawBuilder<SqlBool>[] = []
  const status = filter.status ?? 'active'
  if (status !== 'any') conditions.push(sql<SqlBool>`${col('status')} = ${status}`)
  if (filter.categoryId !== undefined) conditions.push(sql<SqlBool>`${col('category_id')} = ${filter.categoryId}`)
  if (filter.categoryIds !== undefined) {
    conditions.push(filter.categoryIds.length === 0 ? sql<SqlBool>`1 = 0` : sql<SqlBool>`${col('category_id')} in (${sql.join(filter.categoryIds)})`)
  }
  if (categories === 'each') conditions.push(sql<SqlBool>`${col('category_id')} in (select id from categories)`)
  if (categories === 'outer') conditions.push(sql<SqlBool>`${col('category_id')} = c.id`)
  if (categories === 'none') conditions.push(sql<SqlBool>`${col('category_id')} is null`)
  if (filter.inStock === true) conditions.push(sql<SqlBool>`${col('in_stock')} = 1`)
  // Without a category the price is read in the index on the way, never a range of its own: SQLite would otherwise
  // skip-scan the index for it (every category in turn), several times slower than reading the value's rows.
  const ranged = categories !== 'filter' || filter.categoryId !== undefined || filter.categoryIds !== undefined
  const price = ranged ? col('price_cents') : sql`+${col('price_cents')}`
  if (filter.minPriceCents !== undefined) conditions.push(sql<SqlBool>`${price} >= ${filter.minPriceCents}`)
  if (filter.maxPriceCents !== undefined) conditions.push(sql<SqlBool>`${price} <= ${filter.maxPriceCents}`)
  return conditions
}

/**
 * The conditions on product `p` (`products` in a list query, an alias in the facets) for `filter`: the status, the
 * categories, the search, the tags, and one same variant meeting the price range, the stock and the options. The
 * product's copies (lowest and highest price, total stock) answer alone what they can: they are necessary conditions,
 * and sufficient when one variant condition is given alone.
 */
export function productConditions(p: string, dialect: Dialect, filter: ProductFilter, plan: ProductListPlan = PLANNER): RawBuilder<SqlBool>[] {
  const col = (name: string) => sql.ref(`${p}.${name}`)
  const conditions: RawBuilder<SqlBool>[] = []
  // Only active products are public (a literal: cached page queries take no other parameters).
  const status = filter.status ?? 'active'
  if (status === 'active') conditions.push(sql<SqlBool>`${col('status')} = 'active'`)
  else if (status !== 'any') conditions.push(sql<SqlBool>`${col('status')} = ${status}`)
  // SQLite: a unary plus keeps the planner off the price index for this term.
  const price = plan.walkPrice && dialect === 'sqlite' ? sql`+${col('price_cents')}` : col('price_cents')
  if (filter.categoryId !== undefined) conditions.push(sql<SqlBool>`${col('category_id')} = ${filter.categoryId}`)
  if (filter.categoryIds !== undefined) {
    conditions.push(filter.categoryIds.length === 0 ? sql<SqlBool>`1 = 0` : sql<SqlBool>`${col('category_id')} in (${sql.join(filter.categoryIds)})`)
  }
  if (filter.tagKeys !== undefined && filter.tagKeys.length > 0) {
    conditions.push(sql<SqlBool>`${col('id')} in (select product_id from product_tags where tag_key in (${sql.join(filter.tagKeys)}))`)
  }
  const { minPriceCents: min, maxPriceCents: max, inStock } = filter
  const options = filter.options ?? []
  const [first] = options
  if (first !== undefined && isOptionAlone(filter)) {
    // One option alone: a product with one of the values that a variant uses (the values by key, one probe each), not
    // every variant having it.
    conditions.push(productHasOptionValue(col('id'), first, { usedByVariant: true }))
  } else if (usesVariantFilters(filter)) {
    // One same variant with the options, the stock and the price, in this product's categories and status: the
    // products of one range of variant_filters' index (its rows carry the product's category and status too).
    const rows = variantFilterRows(filter, options)
    const ids = sql`select f1.product_id from ${rows.from} where ${sql.join(rows.where, sql` and `)}`
    // PostgreSQL: as an array, the matches are probes of the products' primary key. As `in (…)` the planner hashed
    // them and read every product of the categories to join (at 100,000 products, 10,000 rows for 831 matches: the
    // page 19 → 12 ms), or the whole table when it guessed more matches.
    conditions.push(dialect === 'postgres' ? sql<SqlBool>`${col('id')} = any(array(${ids}))` : sql<SqlBool>`${col('id')} in (${ids})`)
  } else {
    // No option, or none in stock: the product's copies, then a walk of its variants where they do not decide.
    // Necessary for any one variant: the product's lowest price is the least, its highest the most, its stock the sum.
    if (max !== undefined) conditions.push(sql<SqlBool>`${price} <= ${max}`)
    if (min !== undefined) conditions.push(sql<SqlBool>`${col('price_max_cents')} >= ${min}`)
    if (inStock === true) conditions.push(sql<SqlBool>`${col('stock')} > 0`)
    const priceConditions = (min !== undefined ? 1 : 0) + (max !== undefined ? 1 : 0)
    const variant: VariantCondition = { minPriceCents: min, maxPriceCents: max, options }
    if (inStock === false) {
      // Some variant meets the other conditions, and none of those has stock.
      const others = hasVariantCondition(variant)
      if (!others) conditions.push(sql<SqlBool>`${col('stock')} = 0`)
      else {
        conditions.push(sql<SqlBool>`exists (select 1 ${variantsWhere(col('id'), variant, false)})`)
        conditions.push(sql<SqlBool>`not exists (select 1 ${variantsWhere(col('id'), variant, true)})`)
      }
    } else if (priceConditions + (inStock === true ? 1 : 0) > 1) {
      // One condition alone is the product's copy's; several must hold for one same variant. A product whose variants
      // all cost the same needs no walk for the price range.
      const exists = sql<SqlBool>`exists (select 1 ${variantsWhere(col('id'), variant, inStock === true)})`
      if (inStock !== true) conditions.push(sql<SqlBool>`(${col('price_cents')} = ${col('price_max_cents')} or ${exists})`)
      else conditions.push(exists)
    }
    if (first !== undefined && startFromOptionValue(dialect, filter)) conditions.push(productHasOptionValue(col('id'), first))
  }
  if (filter.q !== undefined) conditions.push(searchCondition(col, dialect, filter.q, plan))
  return conditions
}

/**
 * Whether to add "has the first option's value" (necessary for the variant walk) to a product query: the products having
 * it are found from the values by key (product_option_values (value_key, option_id)), so the planner can start there
 * instead of trying the variants of every product. On SQLite only without a category: a category's index finds its
 * products sooner than the value's (at 100,000 products, 9,000 lookups of product rows by id cost 20 ms, the
 * category's 5,000 index entries 2 ms); PostgreSQL's planner weighs both sides itself.
 */
export function startFromOptionValue(dialect: Dialect, filter: ProductFilter): boolean {
  return dialect === 'postgres' || (filter.categoryId === undefined && filter.categoryIds === undefined)
}

/** The product `id` has option `nameKey` with one of `valueKeys`: used by a variant, or by any or none unless told. */
export function productHasOptionValue(id: Expression<unknown>, option: OptionFilter, { usedByVariant = false } = {}): RawBuilder<SqlBool> {
  const used = usedByVariant ? sql` and exists (select 1 from variant_option_values kl where kl.option_value_id = kov.id)` : sql``
  return sql<SqlBool>`${id} in (select ko.product_id from product_option_values kov join product_options ko on ko.id = kov.option_id
    where kov.value_key in (${sql.join(option.valueKeys)}) and ko.name_key = ${option.nameKey}${used})`
}

/** `q` in the name or the description, or a whole SKU. */
function searchCondition(col: (name: string) => RawBuilder<unknown>, dialect: Dialect, q: string, plan: ProductListPlan): RawBuilder<SqlBool> {
  const pattern = likePattern(q)
  const name = col('name')
  const description = col('description')
  // A SKU is unique ignoring case: one product at most, found by its key.
  const sku = sql<SqlBool>`${col('id')} = (select product_id from product_variants where sku_key = ${q.toLowerCase()})`
  if (dialect === 'postgres') {
    // pg_trgm GIN indexes on name and description serve ILIKE '%...%'.
    return sql<SqlBool>`(${name} ilike ${pattern} or ${description} ilike ${pattern} or ${sku})`
  }
  if (isTrigramSearchable(q) && !plan.walkSearch) {
    // The FTS5 trigram table: a quoted phrase is a case-insensitive substring match in either column.
    const phrase = `"${q.replace(/"/g, '""')}"`
    return sql<SqlBool>`(${col('id')} in (select rowid from products_search where products_search match ${phrase}) or ${sku})`
  }
  if (canSearchByLike(q)) {
    // Shorter than a trigram, or so common that walking the sort's index finds the page sooner:
    // LIKE (it ignores ASCII case; its escape character must be named). The pattern is cast so that SQLite does not
    // prepare the statement again at each run (src/db/sqlite-compiler.ts).
    return sql<SqlBool>`(${name} like cast(${pattern} as text) escape '\\' or ${description} like cast(${pattern} as text) escape '\\' or ${sku})`
  }
  // Shorter than a trigram and not ASCII ("ñ", "él"): LIKE would not fold its case, so both sides are
  // folded by fold_case (src/db/connect.ts), a scan like LIKE's.
  const folded = likePattern(q.toLowerCase())
  return sql<SqlBool>`(fold_case(${name}) like cast(${folded} as text) escape '\\' or fold_case(${description}) like cast(${folded} as text) escape '\\' or ${sku})`
}

function applyFilter<O>(query: SelectQueryBuilder<Database, 'products', O>, dialect: Dialect, filter: ProductFilter, plan: ProductListPlan = PLANNER) {
  let q = query
  for (const condition of productConditions('products', dialect, filter, plan)) q = q.where(condition)
  return q
}

type PageQuery = SelectQueryBuilder<Database, 'products', ProductRow>

function pageQuery(db: Db, dialect: Dialect, filter: ProductFilter, page: ProductPage, limit: number, offset: number): PageQuery {
  const plan = page.plan ?? PLANNER
  const walkPrice = plan.walkPrice && page.sort !== 'price_asc' && page.sort !== 'price_desc'
  let query = applyFilter(db.selectFrom('products').select(COLUMNS), dialect, filter, { ...plan, walkPrice })
  switch (page.sort) {
    case 'price_asc':
      query = query.orderBy('price_cents', 'asc').orderBy('id', 'asc')
      break
    case 'price_desc':
      query = query.orderBy('price_cents', 'desc').orderBy('id', 'desc')
      break
    case 'name':
      query = query.orderBy('name_key', 'asc').orderBy('id', 'asc')
      break
    default:
      query = query.orderBy('created_at', 'desc').orderBy('id', 'desc')
  }
  return query.limit(limit).offset(offset)
}

/** Stand-ins compiled into cached page queries, replaced by the request's values when run. */
const SLOT = { categoryId: '\u0000categoryId', min: '\u0000min', max: '\u0000max', limit: '\u0000limit', offset: '\u0000offset' } as const
const compiledPages = new Map<string, CompiledQuery<ProductRow>>()

/**
 * One page of products. Every sort ends on `id`, so pages are stable, and each sort has an index
 * on (sort key, id) and (category_id, sort key, id), so the first page never sorts the table.
 * Without a search, the SQL depends only on which filters are present: it is built once per shape
 * and reused (building a query costs more than running it on SQLite).
 */
export async function listProducts(db: Db, dialect: Dialect, filter: ProductFilter, page: ProductPage): Promise<ProductRow[]> {
  if (!isClassicFilter(filter)) return pageQuery(db, dialect, filter, page, page.limit, page.offset).execute()
  const has = { categoryId: filter.categoryId !== undefined, min: filter.minPriceCents !== undefined, max: filter.maxPriceCents !== undefined }
  const key = `${dialect}|${has.categoryId}|${has.min}|${has.max}|${page.sort}|${page.plan?.walkPrice === true}`
  let compiled = compiledPages.get(key)
  if (!compiled) {
    const slots = {
      ...(has.categoryId ? { categoryId: SLOT.categoryId as unknown as number } : {}),
      ...(has.min ? { minPriceCents: SLOT.min as unknown as number } : {}),
      ...(has.max ? { maxPriceCents: SLOT.max as unknown as number } : {}),
    }
    compiled = pageQuery(db, dialect, slots, page, SLOT.limit as unknown as number, SLOT.offset as unknown as number).compile()
    compiledPages.set(key, compiled)
  }
  const values: Record<string, unknown> = {
    [SLOT.categoryId]: filter.categoryId,
    [SLOT.min]: filter.minPriceCents,
    [SLOT.max]: filter.maxPriceCents,
    [SLOT.limit]: page.limit,
    [SLOT.offset]: page.offset,
  }
  const parameters = compiled.parameters.map((p) => {
    if (typeof p !== 'string' || !(p in values)) throw new Error(`unexpected parameter in a cached page query: ${String(p)}`)
    return values[p]
  })
  return (await db.executeQuery<ProductRow>(CompiledQuery.raw(compiled.sql, parameters))).rows
}

/** Only the filters the list has always had, without `q`: their page query is compiled once and kept. */
function isClassicFilter(filter: ProductFilter): boolean {
  for (const key of Object.keys(filter)) {
    if (key !== 'categoryId' && key !== 'minPriceCents' && key !== 'maxPriceCents') return false
  }
  return true
}

/** `q` is long enough for the trigram index (three characters). */
export function isTrigramSearchable(q: string): boolean {
  return [...q].length >= 3
}

/** LIKE agrees with the trigram index's case folding only on ASCII text. */
export function canSearchByLike(q: string): boolean {
  return /^[\x20-\x7e]*$/.test(q)
}

/** SQLite: how many products match `q` alone, counted on the trigram table (it mirrors products row for row). */
export async function countSearchMatches(db: Db, q: string): Promise<number> {
  const phrase = `"${q.replace(/"/g, '""')}"`
  const { rows } = await sql<{ count: number }>`select count(*) as count from products_search where products_search match ${phrase}`.execute(db)
  return Number(rows[0]?.count ?? 0)
}

export async function countProducts(db: Db, dialect: Dialect, filter: ProductFilter, plan: ProductListPlan = PLANNER): Promise<number> {
  const keys = Object.keys(filter)
  if (keys.length === 0 || (keys.length === 1 && filter.categoryId !== undefined)) {
    // No filter, or only a category: the trigger-kept counts answer with one key lookup.
    const row = await db
      .selectFrom('product_counts')
      .select('total')
      .where('category_id', '=', filter.categoryId ?? 0)
      .executeTakeFirst()
    return Number(row?.total ?? 0)
  }
  if (usesVariantFilters(filter) && !isOptionAlone(filter)) {
    // Counted on variant_filters' rows alone (they carry the product's status and category), each product once; the
    // product is read only for a search or tags. On PostgreSQL the same count joined to the products read every
    // product of the categories (at 100,000 products, 10,000 for 648 matches: 10 ms, 4 this way).
    const rows = variantFilterRows(filter, filter.options ?? [])
    const conditions = [...rows.where, ...ownProductConditions(dialect, filter, 'f1')]
    const { rows: counted } = await sql<{ count: number | string }>`select count(distinct f1.product_id) as count from ${rows.from}
      where ${sql.join(conditions, sql` and `)}`.execute(db)
    return Number(counted[0]?.count ?? 0)
  }
  const count = async (executor: Db) => {
    const row = await applyFilter(executor.selectFrom('products'), dialect, filter, { ...plan, walkPrice: false })
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow()
    return Number(row.count)
  }
  if (dialect === 'postgres' && filter.q !== undefined) {
    // PostgreSQL underestimates ILIKE's cost and, for a common term, prefers a sequential scan
    // (60 ms at 100,000 rows) to the trigram indexes (5 ms): keep it on the indexes for this count.
    return db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx)
      return count(trx)
    })
  }
  return count(db)
}

/** Which of `ids` name a product, whatever its status (in no order). */
export async function existingProductIds(db: Db, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return []
  return (await db.selectFrom('products').select('id').where('id', 'in', ids).execute()).map((row) => row.id)
}

// Compiled once (`prepared`): every product read that misses the cache starts with one of these.
const productByIdStatement = prepared((db, v: { id: number }) => db.selectFrom('products').select(COLUMNS).where('id', '=', v.id))
const productBySlugStatement = prepared((db, v: { slug: string }) => db.selectFrom('products').select(COLUMNS).where('slug', '=', v.slug))

export async function findProductById(db: Db, id: number): Promise<ProductRow | undefined> {
  return (await productByIdStatement(db, { id })).rows[0]
}

/** The products with these slugs or ids (in no order), read a few hundred at a time: the product import's lookups. */
export async function findProductsBySlugsOrIds(db: Db, slugs: readonly string[], ids: readonly number[]): Promise<ProductRow[]> {
  const rows: ProductRow[] = []
  for (let i = 0; i < slugs.length; i += 500)
    rows.push(
      ...(await db
        .selectFrom('products')
        .select(COLUMNS)
        .where('slug', 'in', slugs.slice(i, i + 500))
        .execute()),
    )
  for (let i = 0; i < ids.length; i += 500)
    rows.push(
      ...(await db
        .selectFrom('products')
        .select(COLUMNS)
        .where('id', 'in', ids.slice(i, i + 500))
        .execute()),
    )
  return rows
}

export async function findProductBySlug(db: Db, slug: string): Promise<ProductRow | undefined> {
  return (await productBySlugStatement(db, { slug })).rows[0]
}

/** The current slug of the product that once had `slug`, if any. */
export async function findRenamedSlug(db: Db, slug: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('product_slugs as s')
    .innerJoin('products as p', 'p.id', 's.product_id')
    .select('p.slug')
    .where('s.slug', '=', slug)
    .executeTakeFirst()
  return row?.slug
}

/** Whether `slug` is a product's, now or before (an old slug still redirects), other than `exceptId`'s. */
export async function productSlugTaken(db: Db, slug: string, exceptId?: number): Promise<boolean> {
  let current = db.selectFrom('products').select('id').where('slug', '=', slug)
  if (exceptId !== undefined) current = current.where('id', '<>', exceptId)
  if (await current.executeTakeFirst()) return true
  let old = db.selectFrom('product_slugs').select('product_id').where('slug', '=', slug)
  if (exceptId !== undefined) old = old.where('product_id', '<>', exceptId)
  return (await old.executeTakeFirst()) !== undefined
}

/** Keeps `slug` as an old slug of the product (a later product may take it: the current slug wins). */
export async function keepOldSlug(db: Db, productId: number, slug: string, at: string): Promise<void> {
  await db
    .insertInto('product_slugs')
    .values({ slug, product_id: productId, created_at: at })
    .onConflict((oc) => oc.column('slug').doUpdateSet({ product_id: productId, created_at: at }))
    .execute()
}

export async function insertProduct(db: Db, product: Insertable<ProductsTable>): Promise<ProductRow> {
  return db.insertInto('products').values(product).returning(COLUMNS).executeTakeFirstOrThrow()
}

export async function updateProductById(
  db: Db,
  id: number,
  changes: Partial<Omit<ProductRow, 'id' | 'created_at'>> & { updated_at: string },
): Promise<ProductRow | undefined> {
  return db.updateTable('products').set(changes).where('id', '=', id).returning(COLUMNS).executeTakeFirst()
}

/** Deletes the product; its cart lines go with it (ON DELETE CASCADE), order lines keep their copy. */
export async function deleteProductById(db: Db, id: number): Promise<ProductRow | undefined> {
  return db.deleteFrom('products').where('id', '=', id).returning(COLUMNS).executeTakeFirst()
}

export async function findProductByName(db: Db, name: string): Promise<ProductRow | undefined> {
  return db.selectFrom('products').select(COLUMNS).where('name', '=', name).orderBy('id').limit(1).executeTakeFirst()
}

/** New products in one statement (the import's run of plain new products): their rows, in no promised order. */
export async function insertProducts(db: Db, rows: ReadonlyArray<Insertable<ProductsTable>>): Promise<ProductRow[]> {
  return db
    .insertInto('products')
    .values([...rows])
    .returning(COLUMNS)
    .execute()
}

/** The tag rows of new products whose `tags` column was written with them (no rows to replace yet). */
export async function insertTagRows(db: Db, products: ReadonlyArray<{ productId: number; tags: readonly string[] }>): Promise<void> {
  const rows = products.flatMap(({ productId, tags }) => tags.map((tag, position) => ({ product_id: productId, tag, tag_key: tag.toLowerCase(), position })))
  // 1,000 rows a statement: 4,000 bound values, under SQLite's 32,766 whatever the products' tags.
  for (let i = 0; i < rows.length; i += 1000)
    await db
      .insertInto('product_tags')
      .values(rows.slice(i, i + 1000))
      .execute()
}

/** Which of `slugs` products have now. */
export async function takenSlugs(db: Db, slugs: readonly string[]): Promise<string[]> {
  if (slugs.length === 0) return []
  return (await db.selectFrom('products').select('slug').where('slug', 'in', slugs).execute()).map((row) => row.slug)
}

/** `slugs` are now products' own: they stop redirecting anywhere (forgetOldSlug, for several). */
export async function forgetOldSlugs(db: Db, slugs: readonly string[]): Promise<void> {
  if (slugs.length > 0) await db.deleteFrom('product_slugs').where('slug', 'in', slugs).execute()
}

/** Replaces the product's tags: the rows `?tag=` searches, and the product's copy it shows. */
export async function replaceTags(db: Db, productId: number, tags: readonly string[]): Promise<void> {
  await db.deleteFrom('product_tags').where('product_id', '=', productId).execute()
  if (tags.length > 0) {
    await db
      .insertInto('product_tags')
      .values(tags.map((tag, position) => ({ product_id: productId, tag, tag_key: tag.toLowerCase(), position })))
      .execute()
  }
  await db
    .updateTable('products')
    .set({ tags: JSON.stringify(tags) })
    .where('id', '=', productId)
    .execute()
}

/** Whether another product has `slug` now (an old slug of another product may be taken: the new owner wins). */
export async function currentSlugTaken(db: Db, slug: string, exceptId?: number): Promise<boolean> {
  let query = db.selectFrom('products').select('id').where('slug', '=', slug)
  if (exceptId !== undefined) query = query.where('id', '<>', exceptId)
  return (await query.executeTakeFirst()) !== undefined
}

/** `slug` is now a product's own: it stops redirecting anywhere. */
export async function forgetOldSlug(db: Db, slug: string): Promise<void> {
  await db.deleteFrom('product_slugs').where('slug', '=', slug).execute()
}

/** Whether a product, or a variant of its own class, names the tax class. */
export async function usesTaxClass(db: Db | Transaction<Database>, code: string): Promise<boolean> {
  const product = await db.selectFrom('products').select('id').where('tax_class', '=', code).limit(1).executeTakeFirst()
  if (product) return true
  return (await db.selectFrom('product_variants').select('id').where('tax_class', '=', code).limit(1).executeTakeFirst()) !== undefined
}
