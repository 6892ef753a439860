import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { CategoryRow, Database } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { numberedSlug, slugify } from '../../shared/slug.js'

type Db = Kysely<Database>

export async function listCategories(db: Db): Promise<CategoryRow[]> {
  return db.selectFrom('categories').selectAll().orderBy('name_key').orderBy('id').execute()
}

export async function findCategoryById(db: Db, id: number): Promise<CategoryRow | undefined> {
  return db.selectFrom('categories').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The category whose name key (lower-cased name) is `nameKey`. */
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

/**
 * Inserts a root category with a free slug (its name's, `-2`, `-3`… when taken; `category-<id>` for a name without
 * a letter) and its path, in one transaction.
 */
export async function insertCategory(
  db: Db,
  category: { name: string; name_key: string; description: string; created_at: string; updated_at: string },
): Promise<CategoryRow> {
  return inTransaction(db, async (trx) => {
    const base = slugify(category.name)
    let slug = base
    for (let n = 2; slug !== null && (await categorySlugTaken(trx, slug)); n += 1) slug = numberedSlug(base ?? '', n)
    const row = await trx
      .insertInto('categories')
      .values({ ...category, slug: slug ?? `category-new-${randomUUID()}`, path: '/' })
      .returningAll()
      .executeTakeFirstOrThrow()
    return trx
      .updateTable('categories')
      .set({ path: `/${row.id}/`, ...(slug === null ? { slug: `category-${row.id}` } : {}) })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow()
  })
}

/** Whether `slug` is a category's, now or before. */
export async function categorySlugTaken(db: Db, slug: string): Promise<boolean> {
  if (await db.selectFrom('categories').select('id').where('slug', '=', slug).executeTakeFirst()) return true
  return (await db.selectFrom('category_slugs').select('category_id').where('slug', '=', slug).executeTakeFirst()) !== undefined
}

export async function updateCategoryById(
  db: Db,
  id: number,
  changes: { name?: string; name_key?: string; description?: string; updated_at: string },
): Promise<CategoryRow | undefined> {
  return db.updateTable('categories').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
}

export async function deleteCategoryById(db: Db, id: number): Promise<boolean> {
  const result = await db.deleteFrom('categories').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function categoryHasProducts(db: Db, id: number): Promise<boolean> {
  return (await db.selectFrom('products').select('id').where('category_id', '=', id).limit(1).executeTakeFirst()) !== undefined
}
