import type { Kysely } from 'kysely'
import type { CategoryRow, Database } from '../../db/database.js'

type Db = Kysely<Database>

export async function listCategories(db: Db): Promise<CategoryRow[]> {
  return db.selectFrom('categories').selectAll().orderBy('name_key').orderBy('id').execute()
}

export async function findCategoryById(db: Db, id: number): Promise<CategoryRow | undefined> {
  return db.selectFrom('categories').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The category whose name key (lower-cased name) is `nameKey`. */
export async function findCategoryByNameKey(db: Db, nameKey: string): Promise<CategoryRow | undefined> {
  return db.selectFrom('categories').selectAll().where('name_key', '=', nameKey).executeTakeFirst()
}

export async function categoryExists(db: Db, id: number): Promise<boolean> {
  return (await db.selectFrom('categories').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
}

export async function insertCategory(
  db: Db,
  category: { name: string; name_key: string; description: string; created_at: string; updated_at: string },
): Promise<CategoryRow> {
  return db.insertInto('categories').values(category).returningAll().executeTakeFirstOrThrow()
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
