import { unwrap } from './answers'
import { type Api, dataProviderOf, filtersOf, idValue, paging, text } from './resource'
import type { components } from './schema'

export type Category = components['schemas']['Category']

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
const sortKeys = { name: (category: Category) => category.name.toLowerCase(), createdAt: (category: Category) => category.createdAt }

/**
 * Categories: the API answers every category at once (a shop has few), so search, sort and paging happen here;
 * the products' category fields read them all in one call too.
 */
export function categoriesProvider(api: Api) {
  const all = async () => unwrap(await api.GET('/categories'))
  return dataProviderOf<Category>('categories', {
    async list(params) {
      const { limit, offset } = paging(params)
      const q = text(filtersOf(params).q).toLowerCase()
      const matching = (await all()).filter((category) => !q || category.name.toLowerCase().includes(q))
      const key = params.sort?.field === 'createdAt' ? sortKeys.createdAt : sortKeys.name
      const direction = params.sort?.order === 'DESC' ? -1 : 1
      matching.sort((a, b) => (key(a) < key(b) ? -direction : key(a) > key(b) ? direction : 0))
      return { data: matching.slice(offset, offset + limit), total: matching.length }
    },
    one: async (id) => unwrap(await api.GET('/categories/{id}', { params: { path: { id: String(id) } } })),
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
      return unwrap(await api.POST('/categories', { body }), fields)
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
      return unwrap(await api.PATCH('/categories/{id}', { params: { path: { id } }, body }), fields)
    },
    async remove(id) {
      unwrap(await api.DELETE('/categories/{id}', { params: { path: { id } } }))
    },
  })
}
