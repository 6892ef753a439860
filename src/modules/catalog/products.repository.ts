import { CompiledQuery, type Insertable, type Kysely, type SelectQueryBuilder, sql } from 'kysely'
import type { Database, ProductRow, ProductsTable } from '../../db/database.js'
import type { Dialect } from '../../db/connect.js'
import { PRODUCT_COLUMNS } from './product-view.js'
import type { ProductSort } from './products.schemas.js'

type Db = Kysely<Database>

export interface ProductFilter {
  categoryId?: number
  /** Matched against name or description, case-insensitively. */
  q?: string
  minPriceCents?: number
  maxPriceCents?: number
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

function applyFilter<O>(query: SelectQueryBuilder<Database, 'products', O>, dialect: Dialect, filter: ProductFilter, plan: ProductListPlan = PLANNER) {
  // Only active products are public (a literal: cached page queries take no other parameters).
  let q = query.where(sql<boolean>`status = 'active'`)
  // SQLite: a unary plus keeps the planner off the price index for this term.
  const price = plan.walkPrice && dialect === 'sqlite' ? sql<number>`+price_cents` : sql<number>`price_cents`
  if (filter.categoryId !== undefined) q = q.where('category_id', '=', filter.categoryId)
  if (filter.minPriceCents !== undefined) q = q.where(price, '>=', filter.minPriceCents)
  if (filter.maxPriceCents !== undefined) q = q.where(price, '<=', filter.maxPriceCents)
  if (filter.q !== undefined) {
    const pattern = likePattern(filter.q)
    if (dialect === 'postgres') {
      // pg_trgm GIN indexes on name and description serve ILIKE '%...%'.
      q = q.where(sql<boolean>`(name ilike ${pattern} or description ilike ${pattern})`)
    } else if (isTrigramSearchable(filter.q) && !plan.walkSearch) {
      // The FTS5 trigram table: a quoted phrase is a case-insensitive substring match in either column.
      const phrase = `"${filter.q.replace(/"/g, '""')}"`
      q = q.where(sql<boolean>`id in (select rowid from products_search where products_search match ${phrase})`)
    } else if (canSearchByLike(filter.q)) {
      // Shorter than a trigram, or so common that walking the sort's index finds the page sooner:
      // LIKE (it ignores ASCII case; its escape character must be named).
      q = q.where(sql<boolean>`(name like ${pattern} escape '\\' or description like ${pattern} escape '\\')`)
    } else {
      // Shorter than a trigram and not ASCII ("ñ", "él"): LIKE would not fold its case, so both sides are
      // folded by fold_case (src/db/connect.ts), a scan like LIKE's.
      const folded = likePattern(filter.q.toLowerCase())
      q = q.where(sql<boolean>`(fold_case(name) like ${folded} escape '\\' or fold_case(description) like ${folded} escape '\\')`)
    }
  }
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
  if (filter.q !== undefined) return pageQuery(db, dialect, filter, page, page.limit, page.offset).execute()
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

export async function findProductById(db: Db, id: number): Promise<ProductRow | undefined> {
  return db.selectFrom('products').select(COLUMNS).where('id', '=', id).executeTakeFirst()
}

export async function findProductBySlug(db: Db, slug: string): Promise<ProductRow | undefined> {
  return db.selectFrom('products').select(COLUMNS).where('slug', '=', slug).executeTakeFirst()
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
