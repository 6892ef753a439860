import type { Kysely } from 'kysely'
import { centsToAmount } from '../../shared/money.js'
import type { CategoryRow, Database } from '../../db/database.js'
import { listCategories } from './categories.repository.js'
import * as repo from './product-facets.repository.js'
import type { ProductFilter } from './products.repository.js'
import type { ProductFacets, ProductFacetsInput } from './products.schemas.js'
import { type CatalogContext, readFilter } from './products.service.js'

type Context = Pick<CatalogContext, 'db' | 'dialect'> & {
  /** Where the counts are read: SQLite's reader threads, so the five queries run on several cores (else `db`). */
  reads?: Kysely<Database>
}

/** Code-point order, the same as the database's for the keys (see FACET binary order). */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * GET /products/facets: how many products match, and for each facet how many would match with one of its entries
 * chosen instead of the facet's own filter (every filter applies but the facet's own).
 */
export async function productFacets(ctx: Context, input: ProductFacetsInput): Promise<ProductFacets> {
  const filter = await readFilter(ctx, input)
  const db = ctx.reads ?? ctx.db
  const { categoryId: _categoryId, categoryIds: _categoryIds, ...anyCategory } = filter
  const { tagKeys: _tagKeys, ...anyTag } = filter
  const { minPriceCents: _min, maxPriceCents: _max, ...anyPrice } = filter
  const unknownCategory = filter.categoryIds?.length === 0
  // The categories facet counts every filter but the category per category: the total is the part of it in the
  // filter's categories (one pass instead of two).
  const [byCategory, categories, tags, options, price] = await Promise.all([
    repo.countByCategory(db, ctx.dialect, anyCategory),
    listCategories(ctx.db),
    unknownCategory ? [] : repo.countByTag(db, ctx.dialect, anyTag),
    unknownCategory ? [] : optionFacet({ db, dialect: ctx.dialect }, filter),
    unknownCategory ? null : repo.priceRange(db, ctx.dialect, anyPrice),
  ])
  const total = totalIn(byCategory, filter)
  return {
    total,
    categories: categoryFacet(byCategory, categories),
    tags,
    options,
    price: price === null ? null : { min: centsToAmount(price.min), max: centsToAmount(price.max) },
  }
}

/** How many of the counted products are in the filter's categories (`category` and `categoryId`), if it names any. */
function totalIn(byCategory: repo.CategoryCounts, filter: ProductFilter): number {
  const { categoryId, categoryIds } = filter
  if (categoryId === undefined && categoryIds === undefined) return byCategory.total
  const ids = categoryIds === undefined ? undefined : new Set(categoryIds)
  let total = 0
  for (const { categoryId: id, count } of byCategory.counts) {
    if ((categoryId === undefined || id === categoryId) && (ids === undefined || ids.has(id))) total += count
  }
  return total
}

/** Each category with the matching products of its subtree, the zeros left out; by count, then name. */
function categoryFacet(byCategory: repo.CategoryCounts, categories: CategoryRow[]): ProductFacets['categories'] {
  const byId = new Map(categories.map((category) => [category.id, { category, count: 0 }]))
  for (const { categoryId, count } of byCategory.counts) {
    // The path lists the category's ancestors and itself (`/1/4/9/`): each counts the products once.
    const path = byId.get(categoryId)?.category.path ?? ''
    for (const id of path.split('/')) {
      const entry = id === '' ? undefined : byId.get(Number(id))
      if (entry) entry.count += count
    }
  }
  return [...byId.values()]
    .filter((entry) => entry.count > 0)
    .sort((a, b) => b.count - a.count || byText(a.category.name_key, b.category.name_key) || a.category.id - b.category.id)
    .slice(0, repo.FACET_LIMIT)
    .map(({ category, count }) => ({ id: category.id, slug: category.slug, name: category.name, count }))
}

/**
 * Each option name (ignoring case) with its values (ignoring case) and their counts. The names the filter names are
 * each counted without their own values (one query each); the others together, with every filter.
 */
async function optionFacet(ctx: Context, filter: ProductFilter): Promise<ProductFacets['options']> {
  const named = filter.options ?? []
  const counts = await Promise.all([
    repo.countByOptionValue(ctx.db, ctx.dialect, filter, { notIn: named.map((option) => option.nameKey) }),
    ...named.map((option) =>
      repo.countByOptionValue(ctx.db, ctx.dialect, { ...filter, options: named.filter((other) => other !== option) }, { in: [option.nameKey] }),
    ),
  ])
  const names = new Map<string, { firstOptionId: number; values: repo.OptionValueCount[] }>()
  for (const row of counts.flat()) {
    const name = names.get(row.nameKey) ?? { firstOptionId: row.firstOptionId, values: [] }
    name.firstOptionId = Math.min(name.firstOptionId, row.firstOptionId)
    name.values.push(row)
    names.set(row.nameKey, name)
  }
  const shown = [...names.entries()].sort(([a], [b]) => byText(a, b)).slice(0, repo.FACET_LIMIT)
  const values = shown.map(([, name]) => name.values.sort((a, b) => b.count - a.count || byText(a.valueKey, b.valueKey)).slice(0, repo.FACET_LIMIT))
  const spellings = await repo.optionSpellings(
    ctx.db,
    shown.map(([, name]) => name.firstOptionId),
    values.flat().map((value) => value.firstValueId),
  )
  return shown.map(([nameKey, name], i) => ({
    name: spellings.names.get(name.firstOptionId) ?? nameKey,
    values: (values[i] ?? []).map((value) => ({ value: spellings.values.get(value.firstValueId) ?? value.valueKey, count: value.count })),
  }))
}
