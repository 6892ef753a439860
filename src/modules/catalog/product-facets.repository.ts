import { type Expression, type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely'
import type { Database } from '../../db/database.js'
import type { Dialect } from '../../db/connect.js'
import {
  type OptionFilter,
  type ProductFilter,
  ownProductConditions,
  productConditions,
  productHasOptionValue,
  type RowCategories,
  startFromOptionValue,
  usesVariantFilters,
  type VariantCondition,
  variantFilterRows,
  variantRowConditions,
  variantsWhere,
} from './products.repository.js'

type Db = Kysely<Database>

/** At most this many entries in each facet (and values under each option name). */
export const FACET_LIMIT = 100

const where = (conditions: RawBuilder<SqlBool>[]) => (conditions.length > 0 ? sql`where ${sql.join(conditions, sql` and `)}` : sql``)

/** Text ordered by its code points on both databases (PostgreSQL's default collation would follow the locale). */
const binary = (dialect: Dialect) => (dialect === 'postgres' ? sql` collate "C"` : sql``)

/** The filter without its variant conditions: those a facet checks on each variant itself. */
function withoutVariantConditions(filter: ProductFilter): ProductFilter {
  const { minPriceCents: _min, maxPriceCents: _max, inStock: _stock, options: _options, ...rest } = filter
  return rest
}

/**
 * The rows `f1` of variant_filters matching the filter (see variantFilterRows), with the filter's conditions on the
 * product itself (search, tags) as one probe of the product per row's product.
 */
function matchingVariantRows(
  dialect: Dialect,
  filter: ProductFilter,
  options: readonly OptionFilter[],
  categories: RowCategories = 'filter',
): { from: RawBuilder<unknown>; where: RawBuilder<SqlBool>[] } {
  const rows = variantFilterRows(filter, options, categories)
  rows.where.push(...ownProductConditions(dialect, filter, 'f1'))
  return rows
}

export interface CategoryCounts {
  /** Per category (its own products, not its descendants'), the categories with none left out. */
  counts: Array<{ categoryId: number; count: number }>
  /** Every matching product, those without a category too. */
  total: number
}

/** Matching products per category (their own category, not its ancestors: the service adds the subtrees up). */
export async function countByCategory(db: Db, dialect: Dialect, filter: ProductFilter): Promise<CategoryCounts> {
  if (Object.keys(filter).length === 0) {
    // Every active product: the trigger-kept counts per category (category 0 is the whole shop's).
    const rows = await db.selectFrom('product_counts').select(['category_id', 'total']).where('total', '>', 0).execute()
    const counts = rows.filter((row) => row.category_id > 0).map((row) => ({ categoryId: Number(row.category_id), count: Number(row.total) }))
    return { counts, total: Number(rows.find((row) => row.category_id === 0)?.total ?? 0) }
  }
  type Row = { category_id: number | null; count: number | string }
  let rows: Row[]
  if (usesVariantFilters(filter)) {
    // The variants' rows carry their product's category: counted there, without reading the products.
    const count = (categories: RowCategories) => {
      const source = matchingVariantRows(dialect, filter, filter.options ?? [], categories)
      return sql<Row>`select f1.category_id, count(distinct f1.product_id) as count from ${source.from} ${where(source.where)}
        group by f1.category_id`
    }
    // With a price range: one category at a time (then the products without one), so in each the range is read from
    // the index instead of every row of the value (at 100,000 products, a red in stock between 20 and 60: 42,000 rows
    // read instead of 100,000). SQLite walks the categories for `in (select id from categories)`; PostgreSQL hashed
    // that and read every row of the value (32–35 ms), so there each category is a subquery of its own, which it
    // reads as one range of the index (9 ms, against 14–15 reading every row of the value with the price as a test on
    // each: `bench/catalog-facets.ts`'s data, a colour in stock between 20 and 60). A filter with categories never
    // comes here: the facet counts without them.
    const priced = filter.minPriceCents !== undefined || filter.maxPriceCents !== undefined
    const byCategory = filter.categoryId === undefined && filter.categoryIds === undefined && priced
    const perCategory = () => {
      if (dialect === 'sqlite') return sql<Row>`${count('each')} union all ${count('none')}`
      const source = matchingVariantRows(dialect, filter, filter.options ?? [], 'outer')
      return sql<Row>`select c.id as category_id, n.count from categories c
        cross join lateral (select count(distinct f1.product_id) as count from ${source.from} ${where(source.where)}) n
        where n.count > 0 union all ${count('none')}`
    }
    ;({ rows } = await (byCategory ? perCategory() : count('filter')).execute(db))
  } else {
    ;({ rows } = await sql<Row>`select p.category_id, count(*) as count from products p
      ${where(productConditions('p', dialect, filter))} group by p.category_id`.execute(db))
  }
  const counts = rows.filter((row) => row.category_id !== null).map((row) => ({ categoryId: Number(row.category_id), count: Number(row.count) }))
  return { counts, total: rows.reduce((sum, row) => sum + Number(row.count), 0) }
}

/**
 * The most used tags of the matching products: each tag (ignoring case) with the number of products, spelled as on the
 * product with the lowest id that has it. By count, then the lower-cased tag; at most FACET_LIMIT.
 */
export async function countByTag(db: Db, dialect: Dialect, filter: ProductFilter): Promise<Array<{ tag: string; count: number }>> {
  const { rows } = await sql<{ tag: string; count: number | string }>`select
      (select t2.tag from product_tags t2 where t2.product_id = g.first_product and t2.tag_key = g.tag_key) as tag, g.count
    from (select t.tag_key, count(*) as count, min(t.product_id) as first_product
      from product_tags t join products p on p.id = t.product_id ${where(productConditions('p', dialect, filter))}
      group by t.tag_key) g
    order by g.count desc, g.tag_key${binary(dialect)}
    limit ${sql.lit(FACET_LIMIT)}`.execute(db)
  return rows.map((row) => ({ tag: row.tag, count: Number(row.count) }))
}

/** The variants `v` having the option value `value` and meeting `c` (other options, prices; stock > 0 if `stock`). */
function variantsOfValue(value: Expression<unknown>, c: VariantCondition, stock: boolean): RawBuilder<unknown> {
  const conditions: RawBuilder<SqlBool>[] = [sql<SqlBool>`xvo.option_value_id = ${value}`]
  if (c.minPriceCents !== undefined) conditions.push(sql<SqlBool>`v.price_cents >= ${c.minPriceCents}`)
  if (c.maxPriceCents !== undefined) conditions.push(sql<SqlBool>`v.price_cents <= ${c.maxPriceCents}`)
  if (stock) conditions.push(sql<SqlBool>`v.stock > 0`)
  for (const option of c.options ?? []) {
    conditions.push(sql<SqlBool>`exists (select 1 from variant_option_values fvo
      join product_option_values fov on fov.id = fvo.option_value_id
      join product_options fo on fo.id = fov.option_id
      where fvo.variant_id = v.id and fo.name_key = ${option.nameKey} and fov.value_key in (${sql.join(option.valueKeys)}))`)
  }
  return sql`from variant_option_values xvo join product_variants v on v.id = xvo.variant_id ${where(conditions)}`
}

type OptionCountRow = { name_key: string; value_key: string; count: number | string; first_option: number; first_value: number }

const optionValueCount = (row: OptionCountRow): OptionValueCount => ({
  nameKey: row.name_key,
  valueKey: row.value_key,
  count: Number(row.count),
  firstOptionId: Number(row.first_option),
  firstValueId: Number(row.first_value),
})

export interface OptionValueCount {
  nameKey: string
  valueKey: string
  count: number
  /** The oldest option of that name and the oldest value of that spelling among the products counted. */
  firstOptionId: number
  firstValueId: number
}

/**
 * Per option name and value (both ignoring case), the matching products with a variant that has that value and meets
 * the filter's variant conditions: `names` says which names (`in`: only those; `notIn`: all but those). The filter
 * given is the facet's (without the option's own values).
 */
export async function countByOptionValue(
  db: Db,
  dialect: Dialect,
  filter: ProductFilter,
  names: { in: readonly string[] } | { notIn: readonly string[] },
): Promise<OptionValueCount[]> {
  const variant: VariantCondition = { minPriceCents: filter.minPriceCents, maxPriceCents: filter.maxPriceCents, options: filter.options ?? [] }
  const variantConditions =
    (variant.options?.length ?? 0) > 0 || filter.inStock === true || variant.minPriceCents !== undefined || variant.maxPriceCents !== undefined
  if (filter.inStock !== false && variantConditions) return countByOptionValueOfRows(db, dialect, filter, names)
  const conditions = productConditions('p', dialect, withoutVariantConditions(filter))
  // Necessary for a variant with the first filtered option's value: having it (see startFromOptionValue). The product's
  // copies (prices, stock) are not checked here: they would take SQLite off the covering (status, category_id) index.
  const [first] = variant.options ?? []
  if (first !== undefined && startFromOptionValue(dialect, filter)) conditions.push(productHasOptionValue(sql.ref('p.id'), first))
  if ('in' in names) conditions.push(sql<SqlBool>`o.name_key in (${sql.join(names.in)})`)
  else if (names.notIn.length > 0) conditions.push(sql<SqlBool>`o.name_key not in (${sql.join(names.notIn)})`)
  // Left to this path (the rest is variant_filters'): no condition on one same variant, or "none in stock". Each value
  // of each matching product, with a variant that has it, found by value (variant_option_values (option_value_id,
  // variant_id)), stopping at the first. A product counts once per value: it has one option per name and one value per
  // key.
  const value = sql.ref('ov.id')
  if (filter.inStock !== false) {
    // A variant uses the value (one probe of the value index).
    conditions.push(sql<SqlBool>`exists (select 1 from variant_option_values xvo where xvo.option_value_id = ov.id)`)
  } else {
    // Out of stock: it would match with `option.<name>=<value>` added.
    conditions.push(sql<SqlBool>`exists (select 1 ${variantsOfValue(value, variant, false)})`)
    conditions.push(sql<SqlBool>`not exists (select 1 ${variantsOfValue(value, variant, true)})`)
  }
  const { rows } = await sql<OptionCountRow>`select o.name_key, ov.value_key, count(*) as count, min(o.id) as first_option, min(ov.id) as first_value
      from products p
        join product_options o on o.product_id = p.id
        join product_option_values ov on ov.option_id = o.id
      ${where(conditions)}
      group by o.name_key, ov.value_key`.execute(db)
  return rows.map(optionValueCount)
}

/** The rows of variant_filters named by `names` (`x`, or the keys `k` of them). */
function namesOf(column: string, names: { in: readonly string[] } | { notIn: readonly string[] }): RawBuilder<SqlBool>[] {
  if ('in' in names) return [sql<SqlBool>`${sql.ref(column)} in (${sql.join(names.in)})`]
  return names.notIn.length > 0 ? [sql<SqlBool>`${sql.ref(column)} not in (${sql.join(names.notIn)})`] : []
}

/**
 * countByOptionValue from variant_filters, for a filter with conditions on one same variant (and not "none in stock"):
 * each row `x` is a variant's value, carrying what the filter tests of the variant and its product.
 * - With options left in the filter, the variants meeting it (the first option's range), then each one's values `x`.
 * - Without, every (name, value) key of variant_filters, walked on its index one key at a time (a shop has a few
 *   hundred), then each key's range of variants meeting the filter.
 */
async function countByOptionValueOfRows(
  db: Db,
  dialect: Dialect,
  filter: ProductFilter,
  names: { in: readonly string[] } | { notIn: readonly string[] },
): Promise<OptionValueCount[]> {
  const options = filter.options ?? []
  const select = sql`select x.name_key, x.value_key, count(distinct x.product_id) as count, min(x.option_id) as first_option,
    min(x.option_value_id) as first_value`
  let rows: OptionCountRow[]
  if (options.length > 0) {
    const source = matchingVariantRows(dialect, filter, options)
    ;({ rows } = await sql<OptionCountRow>`${select} from ${source.from} cross join variant_filters x
      ${where([...source.where, sql<SqlBool>`x.variant_id = f1.variant_id`, ...namesOf('x.name_key', names)])}
      group by x.name_key, x.value_key`.execute(db))
  } else {
    const counted = [
      sql<SqlBool>`x.name_key = k.n`,
      sql<SqlBool>`x.value_key = k.v`,
      ...variantRowConditions('x', filter),
      ...ownProductConditions(dialect, filter, 'x'),
    ]
    // The keys in order, each found by one probe of the index: the next value of the same name, else the next name's
    // first value. (A row-value comparison, `(name_key, value_key) > (…)`, takes only the name to the index on SQLite.)
    const nextValue = sql`(select min(value_key) from variant_filters where name_key = k.n and value_key > k.v)`
    const nextName = sql`(select min(name_key) from variant_filters where name_key > k.n)`
    // Each key's count in a subquery of its own, not one GROUP BY over every key's rows: SQLite sorted those rows to
    // group them (at 100,000 products, the colour's 34,000 rows: 39 ms, 18 ms this way). Its three figures come back
    // as one JSON array.
    const array = dialect === 'postgres' ? sql`json_build_array` : sql`json_array`
    const { rows: keys } = await sql<{ name_key: string; value_key: string; counted: string | [number, number, number] }>`with recursive
      keys (n, v) as (
        select n0.n, (select min(value_key) from variant_filters where name_key = n0.n) from (select min(name_key) as n from variant_filters) n0
        union all
        select case when ${nextValue} is null then ${nextName} else k.n end,
          coalesce(${nextValue}, (select min(value_key) from variant_filters where name_key = ${nextName}))
        from keys k where k.n is not null
      )
      select k.n as name_key, k.v as value_key,
        (select ${array}(count(distinct x.product_id), min(x.option_id), min(x.option_value_id)) from variant_filters x
          ${where(counted)}) as counted
      from keys k ${where([sql<SqlBool>`k.n is not null`, ...namesOf('k.n', names)])}`.execute(db)
    rows = []
    for (const key of keys) {
      const [count, firstOption, firstValue] = typeof key.counted === 'string' ? (JSON.parse(key.counted) as [number, number, number]) : key.counted
      if (count > 0) rows.push({ name_key: key.name_key, value_key: key.value_key, count, first_option: firstOption, first_value: firstValue })
    }
  }
  return rows.map(optionValueCount)
}

/** The spellings of options and values by id. */
export async function optionSpellings(db: Db, optionIds: readonly number[], valueIds: readonly number[]) {
  const names = optionIds.length === 0 ? [] : await db.selectFrom('product_options').select(['id', 'name']).where('id', 'in', optionIds).execute()
  const values = valueIds.length === 0 ? [] : await db.selectFrom('product_option_values').select(['id', 'value']).where('id', 'in', valueIds).execute()
  return { names: new Map(names.map((row) => [row.id, row.name])), values: new Map(values.map((row) => [row.id, row.value])) }
}

/**
 * The lowest and highest price of the matching products (the filter given is the facet's, without a price range): their
 * copies when no variant condition is left, else those of the variants that meet them (in stock, with the options).
 */
export async function priceRange(db: Db, dialect: Dialect, filter: ProductFilter): Promise<{ min: number; max: number } | null> {
  const conditions = productConditions('p', dialect, filter)
  const options: readonly OptionFilter[] = filter.options ?? []
  let rows: Array<{ lo: number | string | null; hi: number | string | null }>
  if (usesVariantFilters(filter)) {
    const source = matchingVariantRows(dialect, filter, options)
    ;({ rows } = await sql<{ lo: number | null; hi: number | null }>`select min(f1.price_cents) as lo, max(f1.price_cents) as hi
      from ${source.from} ${where(source.where)}`.execute(db))
  } else if (options.length === 0 && filter.inStock !== true) {
    ;({ rows } = await sql<{ lo: number | null; hi: number | null }>`select min(p.price_cents) as lo, max(p.price_max_cents) as hi
      from products p ${where(conditions)}`.execute(db))
  } else {
    const variants = variantsWhere(sql.ref('p.id'), { options }, filter.inStock === true)
    ;({ rows } = await sql<{ lo: number | null; hi: number | null }>`select min(x.lo) as lo, max(x.hi) as hi from (select
        (select min(v.price_cents) ${variants}) as lo, (select max(v.price_cents) ${variants}) as hi
      from products p ${where(conditions)}) x`.execute(db))
  }
  const row = rows[0]
  if (row?.lo === null || row?.lo === undefined || row.hi === null) return null
  return { min: Number(row.lo), max: Number(row.hi) }
}
