import { unwrap } from './answers'
import { type Api, dataProviderOf, filtersOf, idValue, paging, text } from './resource'
import type { components } from './schema'

export type Category = components['schemas']['Category']
/** A category as the dashboard lists it: with its path from the root (`Home › Kitchen`), to tell apart namesakes. */
export type CategoryRow = Category & { path: string }

/** Each category with the names of its ancestors before its own. */
function withPaths(categories: Category[]): CategoryRow[] {
  const byId = new Map(categories.map((category) => [category.id, category]))
  const pathOf = (category: Category): string => {
    const names = [category.name]
    // At most 5 levels; the bound only guards against a loop in bad data.
    for (let parent = byId.get(category.parentId ?? 0); parent && names.length < 10; parent = byId.get(parent.parentId ?? 0)) names.unshift(parent.name)
    return names.join(' › ')
  }
  return categories.map((category) => ({ ...category, path: pathOf(category) }))
}

const fields = ['name', 'description', 'slug', 'parentId', 'position'] as const

/** The parent a form chose: none (a root) when empty. */
function parentOf(value: unknown): number | null {
  return idValue(value) ?? null
}

/** A form's position: a whole number ≥ 0, or undefined to leave it as it is. */
function positionOf(value: unknown): number | undefined {
  const position = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : Number.NaN
  return Number.isInteger(position) && position >= 0 ? position : undefined
}

/** The columns the list sorts by, as text. */
const sortKeys = { name: (category: CategoryRow) => category.path.toLowerCase(), createdAt: (category: CategoryRow) => category.createdAt }

/**
 * Categories: the API answers every category at once (a shop has few), so search, sort and paging happen here;
 * the products' category fields read them all in one call too.
 */
export function categoriesProvider(api: Api) {
  const all = async () => withPaths(unwrap(await api.GET('/categories')))
  return dataProviderOf<CategoryRow>('categories', {
    async list(params) {
      const { limit, offset } = paging(params)
      const q = text(filtersOf(params).q).toLowerCase()
      const matching = (await all()).filter((category) => !q || category.name.toLowerCase().includes(q))
      const key = params.sort?.field === 'createdAt' ? sortKeys.createdAt : sortKeys.name
      const direction = params.sort?.order === 'DESC' ? -1 : 1
      matching.sort((a, b) => (key(a) < key(b) ? -direction : key(a) > key(b) ? direction : 0))
      return { data: matching.slice(offset, offset + limit), total: matching.length }
    },
    // A category alone has no path: its form names its parent, read with the list.
    one: async (id) => ({ ...unwrap(await api.GET('/categories/{id}', { params: { path: { id: String(id) } } })), path: '' }),
    async many(ids) {
      const wanted = new Set(ids)
      return (await all()).filter((category) => wanted.has(category.id))
    },
    async create(data) {
      const description = text(data.description)
      const slug = text(data.slug).trim()
      const position = positionOf(data.position)
      const body = {
        name: text(data.name),
        parentId: parentOf(data.parentId),
        ...(description ? { description } : {}),
        ...(slug ? { slug } : {}),
        ...(position !== undefined ? { position } : {}),
      }
      return { ...unwrap(await api.POST('/categories', { body }), fields), path: '' }
    },
    async update(id, data) {
      const slug = text(data.slug).trim()
      const position = positionOf(data.position)
      const body = {
        name: text(data.name),
        description: text(data.description),
        parentId: parentOf(data.parentId),
        ...(slug ? { slug } : {}),
        ...(position !== undefined ? { position } : {}),
      }
      return { ...unwrap(await api.PATCH('/categories/{id}', { params: { path: { id } }, body }), fields), path: '' }
    },
    async remove(id) {
      unwrap(await api.DELETE('/categories/{id}', { params: { path: { id } } }))
    },
  })
}

/** A category of GET /categories?tree=true: its subcategories nested, by name. */
export type CategoryNode = Category & { children?: CategoryNode[] }

/** GET /categories?tree=true: the roots, each with its subcategories (siblings by name). */
export async function categoryTree(api: Api): Promise<CategoryNode[]> {
  return unwrap(await api.GET('/categories', { params: { query: { tree: true } } }))
}
