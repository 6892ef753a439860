import type { Kysely } from 'kysely'
import type { CategoryRow, Database } from '../../db/database.js'
import { isForeignKeyViolation, isUniqueViolation } from '../../shared/db-errors.js'
import { AppError } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import * as repo from './categories.repository.js'
import type { Category, CreateCategoryInput, UpdateCategoryInput } from './categories.schemas.js'

type Db = Kysely<Database>

/** A category as the API shows it (typed from its response schema). */
export type { Category }

export function categoryRowToCategory(row: CategoryRow): Category {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    parentId: row.parent_id,
    position: row.position,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** Names are unique ignoring case, in every language: the key is the Unicode lower-case form. */
export function categoryNameKey(name: string): string {
  return name.trim().normalize('NFC').toLowerCase()
}

export async function listCategories(db: Db): Promise<Category[]> {
  return (await repo.listCategories(db)).map(categoryRowToCategory)
}

export async function getCategory(db: Db, id: number): Promise<Category> {
  const row = await repo.findCategoryById(db, id)
  if (!row) throw new AppError(404, 'categoryNotFound')
  return categoryRowToCategory(row)
}

export async function createCategory(db: Db, input: CreateCategoryInput): Promise<Category> {
  const name = input.name.trim()
  const nameKey = categoryNameKey(name)
  if (await repo.findCategoryByNameKey(db, nameKey)) throw new AppError(409, 'categoryExists')
  const now = nowIso()
  try {
    const row = await repo.insertCategory(db, { name, name_key: nameKey, description: input.description ?? '', created_at: now, updated_at: now })
    return categoryRowToCategory(row)
  } catch (error) {
    // Two creations of one name racing past the check above.
    if (isUniqueViolation(error)) throw new AppError(409, 'categoryExists')
    throw error
  }
}

export async function updateCategory(db: Db, id: number, input: UpdateCategoryInput): Promise<Category> {
  const current = await repo.findCategoryById(db, id)
  if (!current) throw new AppError(404, 'categoryNotFound')
  const name = input.name?.trim()
  if (name !== undefined) {
    const other = await repo.findCategoryByNameKey(db, categoryNameKey(name))
    if (other && other.id !== id) throw new AppError(409, 'categoryExists')
  }
  try {
    const row = await repo.updateCategoryById(db, id, {
      ...(name !== undefined ? { name, name_key: categoryNameKey(name) } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      updated_at: nowIso(),
    })
    if (!row) throw new AppError(404, 'categoryNotFound')
    return categoryRowToCategory(row)
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'categoryExists')
    throw error
  }
}

/** Deleting a category that products still use is refused (409), never cascaded. */
export async function deleteCategory(db: Db, id: number): Promise<void> {
  if (!(await repo.findCategoryById(db, id))) throw new AppError(404, 'categoryNotFound')
  if (await repo.categoryHasProducts(db, id)) throw new AppError(409, 'categoryInUse')
  try {
    if (!(await repo.deleteCategoryById(db, id))) throw new AppError(404, 'categoryNotFound')
  } catch (error) {
    // A product assigned between the check and the delete: the foreign key refuses.
    if (isForeignKeyViolation(error)) throw new AppError(409, 'categoryInUse')
    throw error
  }
}
