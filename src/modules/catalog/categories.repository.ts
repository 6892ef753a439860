import { randomUUID } from 'node:crypto'
import { type Expression, type Kysely, type SqlBool, sql, type Transaction } from 'kysely'
import type { CategoryRow, Database } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { numberedSlug, slugify } from '../../shared/slug.js'
import { isPostgres } from '../../db/dialect.js'

type Db = Kysely<Database>

export async function listCategories(db: Db): Promise<CategoryRow[]> {
  return db.selectFrom('categories').selectAll().orderBy('name_key').orderBy('id').execute()
}

export async function findCategoryById(db: Db, id: number): Promise<CategoryRow | undefined> {
  return db.selectFrom('categories').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function findCategoryBySlug(db: Db, slug: string): Promise<CategoryRow | undefined> {
  return db.selectFrom('categories').selectAll().where('slug', '=', slug).executeTakeFirst()
}

/** The current slug of the category that once had `slug`, if any (a category that has it now is found first). */
export async function findRenamedCategorySlug(db: Db, slug: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('category_slugs as s')
    .innerJoin('categories as c', 'c.id', 's.category_id')
    .select('c.slug')
    .where('s.slug', '=', slug)
    .executeTakeFirst()
  return row?.slug
}

/** The category, its row locked (PostgreSQL) until the transaction ends. */
export async function lockCategory(trx: Transaction<Database>, id: number): Promise<CategoryRow | undefined> {
  return trx
    .selectFrom('categories')
    .selectAll()
    .where('id', '=', id)
    .$if(isPostgres(trx), (qb) => qb.forUpdate())
    .executeTakeFirst()
}

/**
 * Serializes the changes of the tree's shape (PostgreSQL; SQLite runs one transaction at a time): two moves that
 * would each put the other's category inside its own (A into B, B into A) cannot both pass their check.
 */
export async function lockTree(trx: Transaction<Database>): Promise<void> {
  if (isPostgres(trx)) await sql`select pg_advisory_xact_lock(${TREE_LOCK_KEY})`.execute(trx)
}
/** The advisory lock key of the category tree (any constant the service uses for nothing else). */
const TREE_LOCK_KEY = 727_001

/** The category whose name key (lower-cased name) is `nameKey` among `parentId`'s children (null: the roots). */
export async function findCategoryByNameKey(db: Db, nameKey: string, parentId: number | null = null): Promise<CategoryRow | undefined> {
  return db
    .selectFrom('categories')
    .selectAll()
    .where('name_key', '=', nameKey)
    .where((eb) => (parentId === null ? eb('parent_id', 'is', null) : eb('parent_id', '=', parentId)))
    .executeTakeFirst()
}

export async function categoryExists(db: Db, id: number): Promise<boolean> {
  return (await db.selectFrom('categories').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
}

/** Which of `ids` name a category (in no order). */
export async function existingCategoryIds(db: Db, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return []
  return (await db.selectFrom('categories').select('id').where('id', 'in', ids).execute()).map((row) => row.id)
}

/** The ids of the categories `ids` and of all their descendants (unknown ids add nothing), in no order. */
export async function subtreesIds(db: Db, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return []
  const rows = await db
    .selectFrom('categories as d')
    .innerJoin('categories as c', (join) => join.on(sql<SqlBool>`d.path like c.path || '%'`))
    .select('d.id')
    .distinct()
    .where('c.id', 'in', ids)
    .execute()
  return rows.map((row) => row.id)
}

/** How deep a path is: `/1/` is 1 (a root), `/1/4/` 2. */
export function pathDepth(path: string): number {
  return path.split('/').length - 2
}

/** The depth of the deepest category of the subtree at `path` (the category itself included). */
export async function deepestInSubtree(db: Db, path: string): Promise<number> {
  const row = await db
    .selectFrom('categories')
    .select(sql<number>`max(length(path) - length(replace(path, '/', '')))`.as('slashes'))
    .where('path', 'like', `${path}%`)
    .executeTakeFirst()
  return Math.max(Number(row?.slashes ?? 0) - 1, pathDepth(path))
}

/** What a new category is made of; its slug, when not given, comes from its name. */
export interface NewCategory {
  name: string
  name_key: string
  description: string
  created_at: string
  updated_at: string
  slug?: string
  position?: number
  /** null or absent: a root. */
  parent?: Pick<CategoryRow, 'id' | 'path'> | null
}

/**
 * Inserts a category with its path (its parent's and its own id) and its slug: the one given, else a free one from
 * its name (`-2`, `-3`… when taken, now or before; `category-<id>` for a name without a letter). In the caller's
 * transaction, else in one of its own.
 */
export async function insertCategory(db: Db, category: NewCategory): Promise<CategoryRow> {
  return inTransaction(db, (trx) => insertInTransaction(trx, category))
}

async function insertInTransaction(db: Transaction<Database>, category: NewCategory): Promise<CategoryRow> {
  const { parent, slug: given, ...values } = category
  let slug: string | null | undefined = given
  if (slug === undefined) {
    const base = slugify(category.name)
    slug = base
    for (let n = 2; base !== null && slug !== null && (slug === 'facets' || (await categorySlugTaken(db, slug))); n += 1) slug = numberedSlug(base, n)
  }
  const row = await db
    .insertInto('categories')
    .values({ ...values, parent_id: parent?.id ?? null, slug: slug ?? `category-new-${randomUUID()}`, path: '/' })
    .returningAll()
    .executeTakeFirstOrThrow()
  return db
    .updateTable('categories')
    .set({ path: `${parent?.path ?? '/'}${row.id}/`, ...(slug === null ? { slug: `category-${row.id}` } : {}) })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** Whether `slug` is a category's, now or before, other than `exceptId`'s (its own old slugs are its to take back). */
export async function categorySlugTaken(db: Db, slug: string, exceptId?: number): Promise<boolean> {
  const current = await db
    .selectFrom('categories')
    .select('id')
    .where('slug', '=', slug)
    .$if(exceptId !== undefined, (qb) => qb.where('id', '<>', exceptId!))
    .executeTakeFirst()
  if (current) return true
  const old = await db
    .selectFrom('category_slugs')
    .select('category_id')
    .where('slug', '=', slug)
    .$if(exceptId !== undefined, (qb) => qb.where('category_id', '<>', exceptId!))
    .executeTakeFirst()
  return old !== undefined
}

/** Keeps `slug` as an old slug of the category (GET answers 301 to its current one); a later owner replaces it. */
export async function keepOldCategorySlug(db: Db, categoryId: number, slug: string, at: string): Promise<void> {
  await db
    .insertInto('category_slugs')
    .values({ slug, category_id: categoryId, created_at: at })
    .onConflict((oc) => oc.column('slug').doUpdateSet({ category_id: categoryId, created_at: at }))
    .execute()
}

/** The category's current slug is no longer an old one (it took it back). */
export async function forgetOldCategorySlug(db: Db, slug: string): Promise<void> {
  await db.deleteFrom('category_slugs').where('slug', '=', slug).execute()
}

export async function updateCategoryById(
  db: Db,
  id: number,
  changes: { name?: string; name_key?: string; description?: string; slug?: string; position?: number; parent_id?: number | null; updated_at: string },
): Promise<CategoryRow | undefined> {
  return db.updateTable('categories').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
}

/**
 * Moves the subtree at `from` (a category's path) to `to` (its new path): one statement rewrites the category's and
 * every descendant's path, their prefix replaced.
 */
export async function moveSubtree(db: Db, from: string, to: string): Promise<void> {
  await db
    .updateTable('categories')
    .set({ path: sql<string>`${to} || substr(path, ${from.length + 1})` })
    .where('path', 'like', `${from}%`)
    .execute()
}

export async function deleteCategoryById(db: Db, id: number): Promise<boolean> {
  const result = await db.deleteFrom('categories').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function categoryHasProducts(db: Db, id: number): Promise<boolean> {
  return (await db.selectFrom('products').select('id').where('category_id', '=', id).limit(1).executeTakeFirst()) !== undefined
}

export async function categoryHasChildren(db: Db, id: number): Promise<boolean> {
  return (await db.selectFrom('categories').select('id').where('parent_id', '=', id).limit(1).executeTakeFirst()) !== undefined
}

/**
 * For a product filter "in this category or below" (`GET /products?category=`): the ids of the category named by
 * `idOrSlug` (digits: an id; other text: a current slug) and of all its descendants, the category first; empty when
 * there is none. One query: the subtree is every category whose path starts with the category's.
 */
export async function subtreeIds(db: Db, idOrSlug: string): Promise<number[]> {
  const rows = await db
    .selectFrom('categories as d')
    .innerJoin('categories as c', (join) => join.on(sql<SqlBool>`d.path like c.path || '%'`))
    .select('d.id')
    .where(/^[0-9]{1,10}$/.test(idOrSlug) ? sql<SqlBool>`c.id = ${Number(idOrSlug)}` : sql<SqlBool>`c.slug = ${idOrSlug}`)
    .orderBy('d.path')
    .execute()
  return rows.map((row) => row.id)
}

/**
 * The same as a condition on a product's category column, for a `where` (no round trip): true when `categoryId`
 * is the category named by `idOrSlug` or one of its descendants; false for an unknown one. E.g.
 * `.where(inCategorySubtree(sql.ref('products.category_id'), '3'))`. It uses `categories_path_idx` (a prefix `like`).
 */
export function inCategorySubtree(categoryId: Expression<number | null>, idOrSlug: string): Expression<SqlBool> {
  const top = /^[0-9]{1,10}$/.test(idOrSlug) ? sql`c.id = ${Number(idOrSlug)}` : sql`c.slug = ${idOrSlug}`
  return sql<SqlBool>`${categoryId} in (select d.id from categories d join categories c on d.path like c.path || '%' where ${top})`
}
