import type { Kysely, Transaction } from 'kysely'
import type { CategoryRow, Database } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { isForeignKeyViolation, isUniqueViolation } from '../../shared/db-errors.js'
import { AppError } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'
import * as repo from './categories.repository.js'
import { type Category, type CategoryNode, type CreateCategoryInput, MAX_CATEGORY_DEPTH, type UpdateCategoryInput } from './categories.schemas.js'

type Db = Kysely<Database>

/** Which of `ids` name a category (in no order): for another module's references to categories. */
export async function existingCategoryIds(db: Db, ids: readonly number[]): Promise<number[]> {
  return repo.existingCategoryIds(db, ids)
}

/** The categories `ids` with all their descendants (materialized paths; unknown ids add nothing), in no order. */
export async function categoriesWithDescendants(db: Db, ids: readonly number[]): Promise<number[]> {
  return repo.subtreesIds(db, ids)
}

/** A category as the API shows it (typed from its response schema). */
export type { Category, CategoryNode }

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

/** Names are unique among siblings ignoring case, in every language: the key is the Unicode lower-case form. */
export function categoryNameKey(name: string): string {
  return name.trim().normalize('NFC').toLowerCase()
}

/** Every category by name; with `tree`, the roots, each with its `children` (siblings by name too). */
export async function listCategories(db: Db, tree = false): Promise<Category[] | CategoryNode[]> {
  const rows = await repo.listCategories(db)
  if (!tree) return rows.map(categoryRowToCategory)
  const nodes = new Map<number, CategoryNode>(rows.map((row) => [row.id, { ...categoryRowToCategory(row), children: [] }]))
  const roots: CategoryNode[] = []
  for (const row of rows) {
    const node = nodes.get(row.id)!
    const parent = row.parent_id === null ? undefined : nodes.get(row.parent_id)
    if (parent) parent.children.push(node)
    else roots.push(node)
  }
  return roots
}

/** What GET /categories/:idOrSlug answers: the category, or where an old slug now lives. */
export type CategoryLookup = { category: Category } | { movedTo: string }

/** A category by id (digits) or slug (other text); an old slug answers the current one (a category that has it now wins). */
export async function getCategory(db: Db, idOrSlug: string | number): Promise<CategoryLookup> {
  const text = String(idOrSlug)
  const id = /^[0-9]{1,10}$/.test(text) ? Number(text) : undefined
  const row = id !== undefined ? await repo.findCategoryById(db, id) : await repo.findCategoryBySlug(db, text)
  if (row) return { category: categoryRowToCategory(row) }
  if (id === undefined) {
    const current = await repo.findRenamedCategorySlug(db, text)
    if (current !== undefined) return { movedTo: current }
  }
  throw new AppError(404, 'categoryNotFound')
}

/** The parent a category goes under: 422 when it does not exist. */
async function findParent(trx: Transaction<Database>, parentId: number | null | undefined): Promise<CategoryRow | null> {
  if (parentId === null || parentId === undefined) return null
  const parent = await repo.findCategoryById(trx, parentId)
  if (!parent) throw new AppError(422, 'parentCategoryMissing')
  return parent
}

/**
 * A unique key refused the write: another category took the name among those siblings, or the slug, between the
 * checks and the write. The same checks, out of the failed transaction, say which.
 */
async function uniqueClash(db: Db, nameKey: string, parentId: number | null, slug: string | undefined, id: number): Promise<AppError> {
  const other = await repo.findCategoryByNameKey(db, nameKey, parentId)
  if (slug !== undefined && (!other || other.id === id) && (await repo.categorySlugTaken(db, slug, id))) return new AppError(409, 'slugTaken')
  return new AppError(409, 'categoryExists')
}

/**
 * Creates a category: under `parentId` (422 unknown; 409 beyond 5 levels), its name free among its siblings, its
 * slug the one given (409 when a category has it, now or before) or made from its name.
 */
export async function createCategory(db: Db, input: CreateCategoryInput, audit: AuditSource | null): Promise<Category> {
  const name = input.name.trim()
  const nameKey = categoryNameKey(name)
  const parentId = input.parentId ?? null
  // A slug made from the name that another creation took meanwhile: the next try takes the next number.
  for (let attempt = 1; ; attempt += 1) {
    try {
      const row = await inTransaction(db, async (trx) => {
        if (parentId !== null) await repo.lockTree(trx)
        const parent = await findParent(trx, parentId)
        if (parent && repo.pathDepth(parent.path) + 1 > MAX_CATEGORY_DEPTH) throw new AppError(409, 'categoryTooDeep')
        if (await repo.findCategoryByNameKey(trx, nameKey, parentId)) throw new AppError(409, 'categoryExists')
        if (input.slug !== undefined && (await repo.categorySlugTaken(trx, input.slug))) throw new AppError(409, 'slugTaken')
        const now = nowIso()
        const inserted = await repo.insertCategory(trx, {
          name,
          name_key: nameKey,
          description: input.description ?? '',
          created_at: now,
          updated_at: now,
          ...(input.slug !== undefined ? { slug: input.slug } : {}),
          ...(input.position !== undefined ? { position: input.position } : {}),
          parent,
        })
        const category = categoryRowToCategory(inserted)
        await recordAudit(trx, { by: audit, action: 'category.create', entityType: 'category', entityId: category.id, before: null, after: category })
        return category
      })
      return row
    } catch (error) {
      if (!isUniqueViolation(error)) throw error
      if (await repo.findCategoryByNameKey(db, nameKey, parentId)) throw new AppError(409, 'categoryExists')
      if (input.slug !== undefined) throw new AppError(409, 'slugTaken')
      if (attempt >= 5) throw new AppError(409, 'categoryExists')
    }
  }
}

/**
 * Changes a category. A new `parentId` moves it with its subtree (their paths rewritten in one statement): 422 for
 * an unknown parent, 409 for itself or a descendant, 409 when the subtree would go beyond 5 levels. A new slug keeps
 * the old one for the 301. One transaction, the category locked (and, for a move, the tree).
 */
export async function updateCategory(db: Db, id: number, input: UpdateCategoryInput, audit: AuditSource): Promise<Category> {
  const name = input.name?.trim()
  let nameKey: string | undefined
  let newParentId: number | null | undefined
  try {
    const row = await db.transaction().execute(async (trx) => {
      if (input.parentId !== undefined) await repo.lockTree(trx)
      const current = await repo.lockCategory(trx, id)
      if (!current) throw new AppError(404, 'categoryNotFound')
      newParentId = input.parentId === undefined ? current.parent_id : input.parentId
      const moving = newParentId !== current.parent_id
      let newPath = current.path
      if (moving) {
        const parent = await findParent(trx, newParentId)
        if (parent?.path.startsWith(current.path)) throw new AppError(409, 'categoryCycle')
        newPath = `${parent?.path ?? '/'}${id}/`
        const below = (await repo.deepestInSubtree(trx, current.path)) - repo.pathDepth(current.path)
        if (repo.pathDepth(newPath) + below > MAX_CATEGORY_DEPTH) throw new AppError(409, 'categoryTooDeep')
      }
      nameKey = name !== undefined ? categoryNameKey(name) : current.name_key
      if (name !== undefined || moving) {
        const other = await repo.findCategoryByNameKey(trx, nameKey, newParentId)
        if (other && other.id !== id) throw new AppError(409, 'categoryExists')
      }
      const now = nowIso()
      const newSlug = input.slug !== undefined && input.slug !== current.slug ? input.slug : undefined
      if (newSlug !== undefined) {
        if (await repo.categorySlugTaken(trx, newSlug, id)) throw new AppError(409, 'slugTaken')
        await repo.forgetOldCategorySlug(trx, newSlug)
        await repo.keepOldCategorySlug(trx, id, current.slug, now)
      }
      await repo.updateCategoryById(trx, id, {
        ...(name !== undefined ? { name, name_key: nameKey } : {}),
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(newSlug !== undefined ? { slug: newSlug } : {}),
        ...(input.position !== undefined ? { position: input.position } : {}),
        ...(moving ? { parent_id: newParentId } : {}),
        updated_at: now,
      })
      if (moving) await repo.moveSubtree(trx, current.path, newPath)
      const category = categoryRowToCategory((await repo.findCategoryById(trx, id))!)
      const before = categoryRowToCategory(current)
      await recordAudit(trx, { by: audit, action: 'category.update', entityType: 'category', entityId: id, before, after: category })
      return category
    })
    return row
  } catch (error) {
    if (isUniqueViolation(error) && nameKey !== undefined && newParentId !== undefined) throw await uniqueClash(db, nameKey, newParentId, input.slug, id)
    throw error
  }
}

/** Deleting a category with subcategories, or that products still use, is refused (409), never cascaded. */
export async function deleteCategory(db: Db, id: number, audit: AuditSource): Promise<void> {
  try {
    await db.transaction().execute(async (trx) => {
      await repo.lockTree(trx)
      const current = await repo.lockCategory(trx, id)
      if (!current) throw new AppError(404, 'categoryNotFound')
      if (await repo.categoryHasChildren(trx, id)) throw new AppError(409, 'categoryHasChildren')
      if (await repo.categoryHasProducts(trx, id)) throw new AppError(409, 'categoryInUse')
      if (!(await repo.deleteCategoryById(trx, id))) throw new AppError(404, 'categoryNotFound')
      const before = categoryRowToCategory(current)
      await recordAudit(trx, { by: audit, action: 'category.delete', entityType: 'category', entityId: id, before, after: null })
    })
  } catch (error) {
    // A product assigned between the check and the delete: the foreign key refuses.
    if (isForeignKeyViolation(error)) throw new AppError(409, 'categoryInUse')
    throw error
  }
}
