import { paged } from '../../shared/openapi.js'
import multipart from '@fastify/multipart'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import { SLUG_MAX } from '../../shared/slug.js'
import type { ImageHost } from '../images/image-host.js'
import { PRODUCT_FORM_LIMITS, prepareUploadSpool, readProductForm } from '../images/image-upload.js'
import { auditSource } from '../staff/audit-log.js'
import * as facets from './product-facets.service.js'
import * as service from './products.service.js'
import { hasPermission } from '../staff/permissions.js'
import {
  CreateProductBody,
  type ListProductsInput,
  ListProductsQuery,
  OPTION_PARAM,
  Product,
  ProductFacets,
  type ProductFacetsInput,
  ProductFacetsQuery,
  ProductList,
  UpdateProductBody,
} from './products.schemas.js'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 413: ErrorResponse, 422: ErrorResponse, 500: ErrorResponse }
const NO_FORM = { fields: {}, image: null, strayFileField: null }

/** `option.<Name>` is a pattern of names, which OpenAPI parameters cannot say: the operation's description does. */
const OPTION_PARAMETER_TEXT =
  'Besides the parameters below: `option.<Name>=<value>` (repeatable, at most 10 values in all; name and value ignoring case), ' +
  'products with one variant having one of the values for that option; several names must all hold for that one variant, ' +
  'together with `minPrice`, `maxPrice` and `inStock`.'

const isJson = (request: FastifyRequest) => /^application\/json\b/i.test(request.headers['content-type'] ?? '')

/** Digits are an id, as a number; any other text is a slug, as it is. */
const canonicalIdOrSlug = (value: string): string => (/^[0-9]{1,10}$/.test(value) ? String(Number(value)) : value)

const IdOrSlugParams = {
  type: 'object',
  required: ['id'],
  // Named `id` as on the other routes of the path (OpenAPI allows one name per path), but an id or a slug here.
  properties: { id: { type: 'string', minLength: 1, maxLength: SLUG_MAX, description: 'An id (digits) or a slug.' } },
} as const

/**
 * The filters of a validated query as URL parameters, in one fixed order, each as the service reads it (repeated values
 * sorted, lower-cased where case is ignored), those at their default left out.
 */
function filterParams(search: URLSearchParams, query: ProductFacetsInput): void {
  if (query.categoryId !== undefined) search.set('categoryId', String(query.categoryId))
  if (query.category !== undefined) search.set('category', canonicalIdOrSlug(query.category))
  // The service ignores the spaces around a term, and an empty term.
  const q = query.q?.trim()
  if (q) search.set('q', q)
  if (query.minPrice !== undefined) search.set('minPrice', String(query.minPrice))
  if (query.maxPrice !== undefined) search.set('maxPrice', String(query.maxPrice))
  for (const tag of service.tagFilter(query.tag)) search.append('tag', tag)
  if (query.inStock !== undefined) search.set('inStock', String(query.inStock))
  for (const option of service.optionFilters(query)) {
    for (const value of option.valueKeys) search.append(`option.${option.nameKey}`, value)
  }
}

/**
 * The list's URL for a validated query: the parameters in one fixed order, each as the service
 * reads it, those at their default left out (paging always shown). Every request for the same
 * answer names the same URL, whatever it sent (`?sort=newest&limit=010` is
 * `/products?limit=10&offset=0`): the cache's key, and what `Link` points to.
 */
export function productListPath(query: ListProductsInput, offset = query.offset): string {
  const search = new URLSearchParams()
  search.set('limit', String(query.limit))
  search.set('offset', String(offset))
  filterParams(search, query)
  if (query.sort !== 'newest') search.set('sort', query.sort)
  if (query.status !== undefined) search.set('status', query.status)
  return `/products?${search.toString()}`
}

/** The facets' URL for a validated query, as productListPath builds the list's. */
export function productFacetsPath(query: ProductFacetsInput): string {
  const search = new URLSearchParams()
  filterParams(search, query)
  if (query.status !== undefined) search.set('status', query.status)
  const text = search.toString()
  return text === '' ? '/products/facets' : `/products/facets?${text}`
}

/** The cache's key of a list or facets answer: none when the query names a status (an admin's, never cached). */
const publicKey = (query: { status?: string }, key: () => string): string | undefined => (query.status === undefined ? key() : undefined)

/**
 * Repeatable parameters arrive as a string when given once: made a list before validation, so that the schema
 * sees one shape (`tag`, `option.<Name>`).
 */
async function repeatableAsLists(request: FastifyRequest): Promise<void> {
  const query = request.query as Record<string, unknown>
  for (const key of Object.keys(query)) {
    if ((key === 'tag' || OPTION_PARAM.test(key)) && typeof query[key] === 'string') query[key] = [query[key]]
  }
}

/** RFC 8288 `Link` with `next`/`prev` when they exist, the other parameters kept (as the service read them). */
function pageLinks(publicUrl: string, query: ListProductsInput, total: number): string | null {
  const link = (offset: number, rel: string) => `<${publicUrl}${productListPath(query, offset)}>; rel="${rel}"`
  const links: string[] = []
  if (query.offset + query.limit < total) links.push(link(query.offset + query.limit, 'next'))
  if (query.offset > 0) links.push(link(Math.max(0, Math.min(query.offset - query.limit, total - query.limit)), 'prev'))
  return links.length > 0 ? links.join(', ') : null
}

export async function productsRoutes(fastify: FastifyInstance, options: { config: Config; images: ImageHost }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  // Multipart is parsed only on these routes; files are read as streams, never attached to the body.
  await app.register(multipart, { limits: PRODUCT_FORM_LIMITS, throwFileSizeLimit: false })
  const { uploadTmpDir } = options.config
  await prepareUploadSpool(uploadTmpDir, app.log)

  // Drafts, archived products and `?status=`: staff's `catalog:read`.
  const catalogReader = app.requirePermission('catalog:read')
  const tags = ['products']
  const security = [{ bearerAuth: [] }]
  const context = (request: FastifyRequest): service.CatalogContext => ({
    db: app.db,
    dialect: app.dialect,
    images: options.images,
    events: app.outbox,
    log: request.log,
    limits: { maxOptions: options.config.maxOptionsPerProduct, maxVariants: options.config.maxVariantsPerProduct },
    audit: auditSource(request),
  })
  const { publicUrl } = options.config

  // Public, except that `?status=` (any value) is staff's: the same 401/403 as a staff route (before validation).
  const statusNeedsStaff = async (request: FastifyRequest, reply: FastifyReply) => {
    if ((request.query as { status?: unknown }).status === undefined) return
    for (const hook of catalogReader) await (hook as unknown as (request: FastifyRequest, reply: FastifyReply) => Promise<void>).call(app, request, reply)
  }

  app.get('/products', {
    onRequest: statusNeedsStaff,
    preValidation: repeatableAsLists,
    schema: {
      tags,
      summary: 'List products (filters, sort, paging; X-Total-Count and Link headers)',
      description: OPTION_PARAMETER_TEXT,
      querystring: ListProductsQuery,
      response: { 200: paged(ProductList), 401: ErrorResponse, 403: ErrorResponse, 422: ErrorResponse },
    },
    config: {
      catalogCacheKey: (request) => publicKey(request.query as ListProductsInput, () => productListPath(request.query as ListProductsInput)),
    },
    handler: async (request, reply) => {
      const query = request.query as ListProductsInput
      const { items, total } = await service.listProducts(app, query)
      reply.header('X-Total-Count', total)
      const links = pageLinks(publicUrl, query, total)
      if (links) reply.header('Link', links)
      return items
    },
  })

  app.get('/products/facets', {
    onRequest: statusNeedsStaff,
    preValidation: repeatableAsLists,
    schema: {
      tags,
      summary: 'Counts of the matching products by category, tag, option value, and their price range (the list’s filters)',
      description: OPTION_PARAMETER_TEXT,
      querystring: ProductFacetsQuery,
      response: { 200: ProductFacets, 401: ErrorResponse, 403: ErrorResponse, 422: ErrorResponse },
    },
    config: {
      catalogCacheKey: (request) => publicKey(request.query as ProductFacetsInput, () => productFacetsPath(request.query as ProductFacetsInput)),
    },
    handler: async (request) => facets.productFacets(app, request.query as ProductFacetsInput),
  })

  app.get('/products/:id', {
    schema: {
      tags,
      summary: 'Get a product by id or slug (drafts and archived: admins); an old slug answers 301 to the current one',
      params: IdOrSlugParams,
      response: { 200: Product, 301: { description: 'Moved, no body: `Location` names the current slug.' }, 404: ErrorResponse },
    },
    // One key per product page, however its id is spelled (`/products/007` is `/products/7`).
    config: { catalogCacheKey: (request) => `/products/${canonicalIdOrSlug((request.params as { id: string }).id)}` },
    handler: async (request, reply) => {
      let found = await service.getProduct(app, request.params.id, false).catch(async (error: unknown) => {
        // Hidden from anyone: the token of an admin with `catalog:read` may still show it (never cached: only an
        // active product is).
        const viewer = await app.viewer(request)
        if (viewer?.role !== 'admin' || !hasPermission(viewer.staffRole, 'catalog:read')) throw error
        return undefined
      })
      if (found === undefined) {
        request.catalogCacheKey = undefined
        found = await service.getProduct(app, request.params.id, true)
      }
      if ('movedTo' in found) {
        const query = request.url.indexOf('?')
        return reply.redirect(`${publicUrl}/products/${found.movedTo}${query >= 0 ? request.url.slice(query) : ''}`, 301)
      }
      return found.product
    },
  })

  app.post('/products', {
    config: { permission: 'catalog:write', invalidates: ['catalog'] },
    schema: {
      tags,
      summary: 'Create a product with its image (admin, multipart/form-data), or a draft without one (JSON)',
      security,
      body: CreateProductBody,
      response: { 201: Product, ...errors },
    },
    handler: async (request, reply) => {
      // JSON makes a draft without images; a form must bring its image (anything else: the documented 400).
      if (request.isMultipart()) return reply.code(201).send(await service.createProduct(context(request), await readProductForm(request, uploadTmpDir)))
      if (isJson(request)) return reply.code(201).send(await service.createProductFromJson(context(request), request.body))
      return reply.code(201).send(await service.createProduct(context(request), NO_FORM))
    },
  })

  // PUT and PATCH alike: any of the fields, in a form (with or without a new image) or in JSON.
  for (const method of ['put', 'patch'] as const) {
    app[method]('/products/:id', {
      config: { permission: 'catalog:write', invalidates: ['catalog'] },
      schema: {
        tags,
        summary: `Change a product (admin; multipart, or JSON without an image)${method === 'patch' ? '; the same as PUT' : ''}`,
        security,
        params: IdParams,
        body: UpdateProductBody,
        response: { 200: Product, ...errors },
      },
      handler: async (request) => {
        if (request.isMultipart()) return service.updateProductFromForm(context(request), request.params.id, await readProductForm(request, uploadTmpDir))
        return service.updateProductFromJson(context(request), request.params.id, request.body)
      },
    })
  }

  app.delete('/products/:id', {
    config: { permission: 'catalog:write', invalidates: ['catalog'] },
    schema: { tags, summary: 'Delete a product (admin)', security, params: IdParams, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await service.deleteProduct(context(request), request.params.id)
      return { message: 'Producto eliminado correctamente' }
    },
  })
}
