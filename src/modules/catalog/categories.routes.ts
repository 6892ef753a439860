import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { SLUG_MAX } from '../../shared/slug.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import { auditSource } from '../staff/audit-log.js'
import * as service from './categories.service.js'
import { Category, CategoryListOrTree, CreateCategoryBody, ListCategoriesQuery, UpdateCategoryBody, type UpdateCategoryInput } from './categories.schemas.js'

const IdOrSlugParams = {
  type: 'object',
  required: ['id'],
  // Named `id` as on the other routes of the path (OpenAPI allows one name per path), but an id or a slug here.
  properties: { id: { type: 'string', minLength: 1, maxLength: SLUG_MAX, description: 'An id (digits) or a slug.' } },
} as const

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** Trims `name` before validation, so "   " is an empty name. */
async function trimName(request: FastifyRequest): Promise<void> {
  const body = request.body as Record<string, unknown> | undefined
  if (body && typeof body === 'object' && typeof body.name === 'string') body.name = body.name.trim()
}

export async function categoriesRoutes(fastify: FastifyInstance, options: { config: Config }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['categories']
  const security = [{ bearerAuth: [] }]
  const { publicUrl } = options.config

  app.get('/categories', {
    schema: {
      tags,
      summary: 'List categories, by name; ?tree=true: the roots with their nested children',
      querystring: ListCategoriesQuery,
      response: { 200: CategoryListOrTree, 422: ErrorResponse },
    },
    handler: async (request) => service.listCategories(app.db, request.query.tree === true),
  })

  app.get('/categories/:id', {
    schema: {
      tags,
      summary: 'Get a category by id or slug; an old slug answers 301 to the current one',
      params: IdOrSlugParams,
      response: { 200: Category, 301: { description: 'Moved, no body: `Location` names the current slug.' }, 404: ErrorResponse },
    },
    handler: async (request, reply) => {
      const found = await service.getCategory(app.db, request.params.id)
      if ('movedTo' in found) {
        const query = request.url.indexOf('?')
        return reply.redirect(`${publicUrl}/categories/${found.movedTo}${query >= 0 ? request.url.slice(query) : ''}`, 301)
      }
      return found.category
    },
  })

  app.post('/categories', {
    // The catalog topic is categories and products alike: a cache of either hears it.
    config: { permission: 'catalog:write', invalidates: ['catalog'] },
    preValidation: trimName,
    schema: { tags, summary: 'Create a category (admin)', security, body: CreateCategoryBody, response: { 201: Category, ...errors } },
    handler: async (request, reply) => reply.code(201).send(await service.createCategory(app.db, request.body, auditSource(request))),
  })

  const updateRoute = {
    config: { permission: 'catalog:write' as const, invalidates: ['catalog'] as const },
    preValidation: trimName,
    schema: { tags, summary: 'Change a category (admin)', security, params: IdParams, body: UpdateCategoryBody, response: { 200: Category, ...errors } },
    handler: async (request: FastifyRequest<{ Params: IdParams; Body: UpdateCategoryInput }>) =>
      service.updateCategory(app.db, request.params.id, request.body, auditSource(request)),
  }
  app.put('/categories/:id', updateRoute)
  app.patch('/categories/:id', updateRoute)

  app.delete('/categories/:id', {
    config: { permission: 'catalog:write', invalidates: ['catalog'] },
    schema: { tags, summary: 'Delete an unused category (admin)', security, params: IdParams, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await service.deleteCategory(app.db, request.params.id, auditSource(request))
      return { message: 'Categoría eliminada correctamente' }
    },
  })
}
