import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ErrorResponse, IdParams, MessageResponse, NoQuery, type SchemaTypes } from '../../shared/validation.js'
import * as service from './categories.service.js'
import { Category, CategoryList, CreateCategoryBody, UpdateCategoryBody, type UpdateCategoryInput } from './categories.schemas.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** Trims `name` before validation, so "   " is an empty name. */
async function trimName(request: FastifyRequest): Promise<void> {
  const body = request.body as Record<string, unknown> | undefined
  if (body && typeof body === 'object' && typeof body.name === 'string') body.name = body.name.trim()
}

export async function categoriesRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const admin = app.requireRole('admin')
  const tags = ['categories']
  const security = [{ bearerAuth: [] }]

  app.get('/categories', {
    schema: { tags, summary: 'List categories, by name', querystring: NoQuery, response: { 200: CategoryList, 422: ErrorResponse } },
    handler: async () => service.listCategories(app.db),
  })

  app.get('/categories/:id', {
    schema: { tags, summary: 'Get a category', params: IdParams, response: { 200: Category, 404: ErrorResponse, 422: ErrorResponse } },
    handler: async (request) => service.getCategory(app.db, request.params.id),
  })

  app.post('/categories', {
    onRequest: admin,
    // The catalog topic is categories and products alike: a cache of either hears it.
    config: { invalidates: ['catalog'] },
    preValidation: trimName,
    schema: { tags, summary: 'Create a category (admin)', security, body: CreateCategoryBody, response: { 201: Category, ...errors } },
    handler: async (request, reply) => reply.code(201).send(await service.createCategory(app.db, request.body)),
  })

  const updateRoute = {
    onRequest: admin,
    config: { invalidates: ['catalog'] as const },
    preValidation: trimName,
    schema: { tags, summary: 'Change a category (admin)', security, params: IdParams, body: UpdateCategoryBody, response: { 200: Category, ...errors } },
    handler: async (request: FastifyRequest<{ Params: IdParams; Body: UpdateCategoryInput }>) =>
      service.updateCategory(app.db, request.params.id, request.body),
  }
  app.put('/categories/:id', updateRoute)
  app.patch('/categories/:id', updateRoute)

  app.delete('/categories/:id', {
    onRequest: admin,
    config: { invalidates: ['catalog'] },
    schema: { tags, summary: 'Delete an unused category (admin)', security, params: IdParams, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await service.deleteCategory(app.db, request.params.id)
      return { message: 'Categoría eliminada correctamente' }
    },
  })
}
