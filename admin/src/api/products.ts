import type { GetListParams, HttpError } from 'react-admin'
import { failure, unwrap } from './answers'
import { type Api, dataProviderOf, filtersOf, idValue, paging, text, totalOf, type Values } from './resource'
import type { components, operations } from './schema'

/** A product as lists show it (an edit page reads it whole, which has these fields and more). */
export type Product = components['schemas']['ProductSummary']
type Sort = NonNullable<NonNullable<operations['listProducts']['parameters']['query']>['sort']>
/** POST /products: a multipart form with the image file. */
type NewProduct = operations['createProduct']['requestBody']['content']['multipart/form-data']
/** PUT /products/{id} with a new image (multipart), or without one (JSON, where `categoryId: null` clears the category). */
type ProductForm = operations['updateProduct']['requestBody']['content']['multipart/form-data']
type ProductChange = operations['updateProduct']['requestBody']['content']['application/json']

/** A product as the API answers it whole: with its images, options and variants. */
type ProductAnswer = components['schemas']['Product']
/**
 * A product as its edit page reads it: the API's, and for a product of one variant (its default one) that variant's
 * `sku` and `compareAtPrice`, which the product's form writes.
 */
export type FullProduct = ProductAnswer & { sku?: string | null; compareAtPrice?: number | null }

/** The product with its only variant's SKU and compare-at price, for the form (a product of several has none). */
export function withDefaultVariant(product: ProductAnswer): FullProduct {
  // An answer without them (an older service) has none to show.
  const variants: unknown = product.variants
  if (!Array.isArray(variants) || variants.length !== 1) return product
  const [only] = product.variants
  if (!only) return product
  return { ...product, sku: only.sku, compareAtPrice: only.compareAtPrice }
}
type Status = Product['status']

/** The statuses a product can have, in the order the form offers them. */
export const PRODUCT_STATUSES: readonly Status[] = ['draft', 'active', 'archived']
const isStatus = (value: unknown): value is Status => PRODUCT_STATUSES.some((status) => status === value)

/** The form's fields: an error whose problem details name one of them (`field`) is shown beside it. */
const fields = ['name', 'description', 'price', 'stock', 'categoryId', 'image', 'slug', 'status', 'tags', 'taxClass', 'sku', 'compareAtPrice'] as const

/**
 * The tags a form's text gives (comma-separated, as the API's multipart form takes them), or the array the record
 * had: each trimmed, empty ones left out. The API keeps each once ignoring case.
 */
export function tagsOf(value: unknown): string[] {
  const items = Array.isArray(value) ? value.map(text) : text(value).split(',')
  return items.map((tag) => tag.trim()).filter((tag) => tag !== '')
}

/** react-admin's sort as the API's: newest (the default), by price either way, or by name. */
function sortOf(sort: GetListParams['sort']): Sort {
  if (sort?.field === 'price') return sort.order === 'ASC' ? 'price_asc' : 'price_desc'
  if (sort?.field === 'name') return 'name'
  return 'newest'
}

/** The file picked in react-admin's ImageInput (`{rawFile, src, title}`), if a new one was picked. */
function pickedFile(value: unknown): File | undefined {
  if (typeof value !== 'object' || value === null || !('rawFile' in value)) return undefined
  return value.rawFile instanceof File ? value.rawFile : undefined
}

/** A number input's value, or undefined when it is empty. */
function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : undefined
}

/**
 * The fields of a multipart product form that have a value, the image last. A change (`previous` given) sends price
 * and stock only when they changed: a product with several variants refuses them (they are set per variant).
 */
function formFields(data: Values, image: File | undefined, previous?: Values) {
  const description = text(data.description)
  const slug = text(data.slug).trim()
  const tags = tagsOf(data.tags)
  const moved = (field: 'price' | 'stock' | 'compareAtPrice') => !previous || numberOf(data[field]) !== numberOf(previous[field])
  const taxClass = text(data.taxClass).trim()
  const sku = text(data.sku).trim()
  const compareAtPrice = numberOf(data.compareAtPrice)
  return {
    name: text(data.name),
    ...(description ? { description } : {}),
    ...(numberOf(data.price) !== undefined && moved('price') ? { price: numberOf(data.price) } : {}),
    ...(numberOf(data.stock) !== undefined && moved('stock') ? { stock: numberOf(data.stock) } : {}),
    ...(idValue(data.categoryId) !== undefined ? { categoryId: idValue(data.categoryId) } : {}),
    ...(slug && slug !== previous?.slug ? { slug } : {}),
    ...(isStatus(data.status) ? { status: data.status } : {}),
    ...(tags.length > 0 || (previous && tagsOf(previous.tags).length > 0) ? { tags: tags.join(',') } : {}),
    ...(taxClass && taxClass !== previous?.taxClass ? { taxClass } : {}),
    // An empty SKU in a form is none: sent empty only to clear one the product had.
    ...(sku !== text(previous?.sku) ? { sku } : {}),
    ...(compareAtPrice !== undefined && moved('compareAtPrice') ? { compareAtPrice } : {}),
    ...(image ? { image } : {}),
  }
}

/**
 * The multipart body openapi-fetch sends: each field as text, the image as its file. (It takes any of the route's
 * bodies, as openapi-fetch types a serializer; it is only given the multipart one.)
 */
function multipart(body: ProductForm | ProductChange): FormData {
  const form = new FormData()
  for (const [field, value] of Object.entries(body)) {
    if (value instanceof File) form.append(field, value, value.name)
    else if (value instanceof Blob) form.append(field, value)
    else if (value !== undefined && value !== null) form.append(field, String(value))
  }
  return form
}

/**
 * The JSON change of a product without a new image: react-admin empties a cleared input to null or "". Price and
 * stock go only when they changed (a product with several variants refuses them), slug and tags likewise.
 */
function change(data: Values, previous: Values): ProductChange {
  const body: ProductChange = {}
  if (data.name !== undefined) body.name = text(data.name)
  if (data.description !== undefined) body.description = text(data.description)
  if (data.price !== undefined && data.price !== null && data.price !== '' && numberOf(data.price) !== numberOf(previous.price)) {
    body.price = typeof data.price === 'number' ? data.price : text(data.price)
  }
  if (numberOf(data.stock) !== undefined && numberOf(data.stock) !== numberOf(previous.stock)) body.stock = numberOf(data.stock)
  if (data.categoryId !== undefined) body.categoryId = idValue(data.categoryId) ?? null
  const slug = text(data.slug).trim()
  if (slug && slug !== previous.slug) body.slug = slug
  if (isStatus(data.status) && data.status !== previous.status) body.status = data.status
  if (data.tags !== undefined && JSON.stringify(tagsOf(data.tags)) !== JSON.stringify(tagsOf(previous.tags))) body.tags = tagsOf(data.tags)
  const taxClass = text(data.taxClass).trim()
  if (taxClass && taxClass !== previous.taxClass) body.taxClass = taxClass
  // The default variant's (a product of several variants has none on its form, and sends none).
  const sku = text(data.sku).trim()
  if (data.sku !== undefined && sku !== text(previous.sku)) body.sku = sku === '' ? null : sku
  if (data.compareAtPrice !== undefined && numberOf(data.compareAtPrice) !== numberOf(previous.compareAtPrice)) {
    body.compareAtPrice = numberOf(data.compareAtPrice) ?? null
  }
  return body
}

/** A refusal of the form's own, shown beside its field like the API's 422s. */
function fieldError(field: (typeof fields)[number], message: string): HttpError {
  return failure(message, 422, { code: 'validation_failed', field, fields })
}

/** Products: GET /products with search, category, status (all of them unless one is picked), sort and paging; create and change with an image (multipart). */
export function productsProvider(api: Api) {
  return dataProviderOf<Product>('products', {
    async list(params) {
      const { limit, offset } = paging(params)
      const filter = filtersOf(params)
      const q = text(filter.q)
      const categoryId = idValue(filter.categoryId)
      // Staff see every product unless they pick a status: drafts and archived ones too.
      const status: Status | 'any' = isStatus(filter.status) ? filter.status : 'any'
      const query = { limit, offset, sort: sortOf(params.sort), status, ...(q ? { q } : {}), ...(categoryId !== undefined ? { categoryId } : {}) }
      const result = await api.GET('/products', { params: { query } })
      return { data: unwrap(result), total: totalOf(result.response) }
    },
    one: async (id) => withDefaultVariant(unwrap(await api.GET('/products/{id}', { params: { path: { id: String(id) } } }))),
    async create(data) {
      const given = formFields(data, pickedFile(data.image))
      // The form asks for both before it sends anything; said here in the words the form and the API use.
      if (!given.image) throw fieldError('image', 'An image is required')
      if (given.price === undefined) throw fieldError('price', 'price should not be empty')
      const body: NewProduct = { ...given, price: given.price, image: given.image }
      return unwrap(await api.POST('/products', { body, bodySerializer: multipart }), fields)
    },
    async update(id, data, previous) {
      const path = { params: { path: { id } } }
      const image = pickedFile(data.image)
      if (image)
        return withDefaultVariant(
          unwrap(await api.PUT('/products/{id}', { ...path, body: formFields(data, image, previous), bodySerializer: multipart }), fields),
        )
      return withDefaultVariant(unwrap(await api.PUT('/products/{id}', { ...path, body: change(data, previous) }), fields))
    },
    async remove(id) {
      unwrap(await api.DELETE('/products/{id}', { params: { path: { id } } }))
    },
  })
}
