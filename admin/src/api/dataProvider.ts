import type { DataProvider, GetListParams, RaRecord } from 'react-admin'
import { api, unwrap } from './client'
import * as webhooks from './webhooks'
import type { components, paths } from './schema'

type Json<P extends keyof paths, M extends 'get' | 'post', S extends number> = P extends keyof paths
  ? paths[P][M] extends { responses: Record<S, { content: { 'application/json': infer T } }> }
    ? T
    : never
  : never

export type Product = Json<'/products/{id}', 'get', 200>
export type Category = Json<'/categories/{id}', 'get', 200>
export type Order = Json<'/orders/{id}', 'get', 200>
export type User = Json<'/auth/users/{id}', 'get', 200>
export type OrderStatus = Order['status']
// Keep the generated components reachable for editors (schema.d.ts has none today).
export type Components = components

/** An image picked in the form: react-admin's ImageInput gives the File and a preview URL. */
interface PickedImage {
  rawFile?: File
  src?: string
}

const productFields = ['name', 'description', 'price', 'stock', 'categoryId', 'image'] as const
const categoryFields = ['name', 'description'] as const
const userFields = ['name', 'email', 'password', 'role'] as const

/** A form or filter value as text: strings and numbers as they are, anything else (nothing, an object) as "". */
function text(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : ''
}

/** react-admin's sort to the API's `sort`: newest (default), price_asc, price_desc, name. */
function productSort(sort: GetListParams['sort']): 'newest' | 'price_asc' | 'price_desc' | 'name' {
  if (sort?.field === 'price') return sort.order === 'ASC' ? 'price_asc' : 'price_desc'
  if (sort?.field === 'name') return 'name'
  return 'newest'
}

function paging(params: GetListParams): { limit: number; offset: number } {
  const { page = 1, perPage = 25 } = params.pagination ?? {}
  return { limit: perPage, offset: (page - 1) * perPage }
}

function totalOf(response: Response, fallback: number): number {
  const header = response.headers.get('X-Total-Count')
  return header === null ? fallback : Number(header)
}

/** The product form as the API expects it: multipart with the image file, or JSON when no new image is sent. */
function productForm(data: Record<string, unknown>): FormData {
  const form = new FormData()
  for (const field of ['name', 'description', 'price', 'stock', 'categoryId'] as const) {
    const value = data[field]
    if (value === undefined || value === null || value === '') continue
    form.append(field, text(value))
  }
  const image = data.image as PickedImage | undefined
  if (image?.rawFile) form.append('image', image.rawFile, image.rawFile.name)
  return form
}

function productJson(data: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {}
  for (const field of ['name', 'description', 'price', 'stock', 'categoryId'] as const) {
    const value = data[field]
    if (value === undefined) continue
    // react-admin empties a cleared input to null: no description is "", no category is null.
    if (field === 'description') body[field] = value ?? ''
    else body[field] = value === '' ? null : value
  }
  return body
}

async function getList(resource: string, params: GetListParams) {
  const { limit, offset } = paging(params)
  const filter = (params.filter ?? {}) as Record<string, unknown>
  switch (resource) {
    case 'products': {
      const query = {
        limit,
        offset,
        sort: productSort(params.sort),
        ...(filter.q ? { q: text(filter.q) } : {}),
        ...(filter.categoryId ? { categoryId: Number(filter.categoryId) } : {}),
      }
      const result = await api.GET('/products', { params: { query } })
      const data = unwrap(result)
      return { data, total: totalOf(result.response, data.length) }
    }
    case 'categories': {
      // The API answers every category at once (a shop has few): search, sort and paging happen here.
      const all = unwrap(await api.GET('/categories'))
      const q = text(filter.q).toLowerCase()
      const matching = q ? all.filter((category) => category.name.toLowerCase().includes(q)) : all
      const field = (params.sort?.field ?? 'name') as keyof Category
      const direction = params.sort?.order === 'DESC' ? -1 : 1
      matching.sort((a, b) => (String(a[field]) < String(b[field]) ? -direction : String(a[field]) > String(b[field]) ? direction : 0))
      return { data: matching.slice(offset, offset + limit), total: matching.length }
    }
    case 'orders': {
      const status = filter.status ? (text(filter.status) as OrderStatus) : undefined
      const result = await api.GET('/orders', { params: { query: { limit, offset, ...(status ? { status } : {}) } } })
      const data = unwrap(result)
      return { data, total: totalOf(result.response, data.length) }
    }
    case 'webhooks': {
      const all = await webhooks.listWebhooks()
      return { data: all.slice(offset, offset + limit), total: all.length }
    }
    case 'users': {
      // No X-Total-Count from this route: ask one more than a page to know whether another page exists. On the last
      // page the total is known, and given: without it react-admin shows "1-25 of 25" for 3 users, and its phone
      // pagination offers a next page that is not there (and comes back to page 1 when asked for it).
      const result = await api.GET('/auth/users', { params: { query: { limit: limit + 1, offset } } })
      const rows = unwrap(result)
      const data = rows.slice(0, limit)
      if (rows.length > limit) return { data, pageInfo: { hasNextPage: true, hasPreviousPage: offset > 0 } }
      // An empty page past the end says nothing of the total: react-admin goes back to the first page.
      if (rows.length === 0 && offset > 0) return { data, pageInfo: { hasNextPage: false, hasPreviousPage: true } }
      return { data, total: offset + rows.length }
    }
  }
  throw new Error(`Unknown resource ${resource}`)
}

async function getOne(resource: string, id: number): Promise<RaRecord> {
  const path = { params: { path: { id } } }
  switch (resource) {
    case 'products':
      return unwrap(await api.GET('/products/{id}', path))
    case 'categories':
      return unwrap(await api.GET('/categories/{id}', path))
    case 'orders':
      return unwrap(await api.GET('/orders/{id}', path))
    case 'users':
      return unwrap(await api.GET('/auth/users/{id}', path))
    case 'webhooks':
      return webhooks.getWebhook(id)
  }
  throw new Error(`Unknown resource ${resource}`)
}

async function create(resource: string, data: Record<string, unknown>): Promise<RaRecord> {
  switch (resource) {
    case 'products':
      return unwrap(
        await api.POST('/products', { body: productForm(data) as unknown as never, bodySerializer: (form: unknown) => form as FormData }),
        productFields,
      )
    case 'categories':
      return unwrap(await api.POST('/categories', { body: { name: text(data.name), description: (data.description as string) || undefined } }), categoryFields)
    case 'webhooks':
      return webhooks.createWebhook({
        url: text(data.url),
        events: Array.isArray(data.events) ? (data.events as string[]) : [],
        ...(text(data.description) ? { description: text(data.description) } : {}),
      })
    case 'users':
      return unwrap(
        await api.POST('/auth/users', {
          body: {
            name: text(data.name),
            email: text(data.email),
            password: text(data.password),
            role: (data.role as User['role']) ?? 'admin',
          },
        }),
        userFields,
      )
  }
  throw new Error(`Unknown resource ${resource}`)
}

async function update(resource: string, id: number, data: Record<string, unknown>, previous: Record<string, unknown>): Promise<RaRecord> {
  const path = { params: { path: { id } } }
  switch (resource) {
    case 'products': {
      const image = data.image as PickedImage | undefined
      if (image?.rawFile) {
        return unwrap(
          await api.PUT('/products/{id}', { ...path, body: productForm(data) as unknown as never, bodySerializer: (form: unknown) => form as FormData }),
          productFields,
        )
      }
      return unwrap(await api.PUT('/products/{id}', { ...path, body: productJson(data) as never }), productFields)
    }
    case 'categories':
      return unwrap(
        await api.PATCH('/categories/{id}', { ...path, body: { name: data.name as string, description: (data.description as string) ?? '' } }),
        categoryFields,
      )
    case 'orders':
      return unwrap(await api.PATCH('/orders/{id}/status', { ...path, body: { status: data.status as OrderStatus } }))
    case 'webhooks': {
      const body: Record<string, unknown> = {}
      for (const field of ['url', 'events', 'description', 'active'] as const) {
        if (JSON.stringify(data[field]) !== JSON.stringify(previous[field])) body[field] = field === 'description' ? (data[field] ?? '') : data[field]
      }
      return Object.keys(body).length > 0 ? webhooks.updateWebhook(id, body) : webhooks.getWebhook(id)
    }
    case 'users': {
      // Only what changed: an admin cannot send their own role, even unchanged.
      const body: Record<string, unknown> = {}
      for (const field of ['name', 'email', 'role'] as const) if (data[field] !== previous[field]) body[field] = data[field]
      return unwrap(await api.PATCH('/auth/users/{id}', { ...path, body: body as never }), userFields)
    }
  }
  throw new Error(`Unknown resource ${resource}`)
}

async function remove(resource: string, id: number): Promise<void> {
  const path = { params: { path: { id } } }
  switch (resource) {
    case 'products':
      unwrap(await api.DELETE('/products/{id}', path))
      return
    case 'categories':
      unwrap(await api.DELETE('/categories/{id}', path))
      return
    case 'users':
      unwrap(await api.DELETE('/auth/users/{id}', path))
      return
    case 'webhooks':
      await webhooks.deleteWebhook(id)
      return
  }
  throw new Error(`Unknown resource ${resource}`)
}

/** react-admin's data provider, over the typed openapi-fetch client. */
export const dataProvider: DataProvider & { getStats: typeof getStats } = {
  getStats: (days?: number) => getStats(days),
  getList: (resource, params) => getList(resource, params) as never,
  getOne: async (resource, params) => ({ data: (await getOne(resource, Number(params.id))) as never }),
  getMany: async (resource, params) => {
    if (resource === 'categories') {
      const all = unwrap(await api.GET('/categories'))
      const ids = new Set(params.ids.map(Number))
      return { data: all.filter((category) => ids.has(category.id)) as never }
    }
    const settled = await Promise.allSettled(params.ids.map((id) => getOne(resource, Number(id))))
    const found: RaRecord[] = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
    return { data: found as never }
  },
  getManyReference: (resource, params) => {
    const filter: Record<string, unknown> = { ...(params.filter as Record<string, unknown>), [params.target]: params.id }
    return getList(resource, { ...params, filter }) as never
  },
  create: async (resource, params) => ({ data: (await create(resource, params.data as Record<string, unknown>)) as never }),
  update: async (resource, params) => ({
    data: (await update(resource, Number(params.id), params.data as Record<string, unknown>, (params.previousData ?? {}) as Record<string, unknown>)) as never,
  }),
  updateMany: async (resource, params) => {
    for (const id of params.ids) await update(resource, Number(id), params.data as Record<string, unknown>, {})
    return { data: params.ids }
  },
  delete: async (resource, params) => {
    await remove(resource, Number(params.id))
    return { data: params.previousData as never }
  },
  deleteMany: async (resource, params) => {
    for (const id of params.ids) await remove(resource, Number(id))
    return { data: params.ids }
  },
}

/** GET /admin/api/stats: what the overview shows. */
export type Stats = Json<'/admin/api/stats', 'get', 200>

/** The overview's one call; it goes through react-admin's useDataProvider, so a 401 ends the session like any other. */
export async function getStats(days = 30): Promise<Stats> {
  return unwrap(await api.GET('/admin/api/stats', { params: { query: { days } } }))
}
