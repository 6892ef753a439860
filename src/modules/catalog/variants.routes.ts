import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { messages } from '../../shared/errors.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import { Product, Variant } from './products.schemas.js'
import { auditSource } from '../staff/audit-log.js'
import * as service from './variants.service.js'
import { CreateOptionBody, CreateVariantsBody, UpdateOptionBody, UpdateOptionValueBody, UpdateVariantBody } from './variants.schemas.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }
const id = { type: 'integer', minimum: 1, maximum: 2147483647 } as const
const OptionParams = { type: 'object', required: ['id', 'optionId'], properties: { id, optionId: id } } as const
const ValueParams = { type: 'object', required: ['id', 'optionId', 'valueId'], properties: { id, optionId: id, valueId: id } } as const

/** A product's options and values, and its variants (admin): each write answers as docs/api.md says, in one transaction. */
export async function variantsRoutes(fastify: FastifyInstance, options: { config: Config }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['products']
  const security = [{ bearerAuth: [] }]
  const config = { permission: 'catalog:write' as const, invalidates: ['catalog' as const] }
  const shared = {
    db: app.db,
    dialect: app.dialect,
    events: app.outbox,
    limits: { maxOptions: options.config.maxOptionsPerProduct, maxVariants: options.config.maxVariantsPerProduct },
  }
  const ctx = (request: FastifyRequest): service.VariantsContext => ({ ...shared, audit: auditSource(request) })

  app.post('/products/:id/options', {
    config,
    schema: {
      tags,
      summary: 'Add an option to a product; its default value goes to every variant (admin)',
      security,
      params: IdParams,
      body: CreateOptionBody,
      response: { 201: Product, ...errors },
    },
    handler: async (request, reply) => reply.code(201).send(await service.addOption(ctx(request), request.params.id, request.body)),
  })

  app.patch('/products/:id/options/:optionId', {
    config,
    schema: {
      tags,
      summary: 'Rename or move an option (admin)',
      security,
      params: OptionParams,
      body: UpdateOptionBody,
      response: { 200: Product, ...errors },
    },
    handler: async (request) => service.updateOption(ctx(request), request.params.id, request.params.optionId, request.body),
  })

  app.delete('/products/:id/options/:optionId', {
    config,
    schema: {
      tags,
      summary: 'Remove an option from a product and its variants (admin)',
      security,
      params: OptionParams,
      response: { 200: Product, ...errors },
    },
    handler: async (request) => service.deleteOption(ctx(request), request.params.id, request.params.optionId),
  })

  app.patch('/products/:id/options/:optionId/values/:valueId', {
    config,
    schema: {
      tags,
      summary: 'Rename or move an option value (admin)',
      security,
      params: ValueParams,
      body: UpdateOptionValueBody,
      response: { 200: Product, ...errors },
    },
    handler: async (request) => service.updateOptionValue(ctx(request), request.params.id, request.params.optionId, request.params.valueId, request.body),
  })

  app.delete('/products/:id/options/:optionId/values/:valueId', {
    config,
    schema: { tags, summary: 'Remove an option value no variant uses (admin)', security, params: ValueParams, response: { 200: Product, ...errors } },
    handler: async (request) => service.deleteOptionValue(ctx(request), request.params.id, request.params.optionId, request.params.valueId),
  })

  app.post('/products/:id/variants', {
    config,
    schema: {
      tags,
      summary: 'Add a variant, or up to 100 at once, all or nothing (admin)',
      security,
      params: IdParams,
      body: CreateVariantsBody,
      response: { 201: { anyOf: [Variant, { type: 'array', items: Variant }] }, ...errors },
    },
    handler: async (request, reply) => reply.code(201).send(await service.createVariants(ctx(request), request.params.id, request.body)),
  })

  app.patch('/variants/:id', {
    config,
    schema: {
      tags,
      summary: 'Change a variant: any field (admin)',
      security,
      params: IdParams,
      body: UpdateVariantBody,
      response: { 200: Variant, ...errors },
    },
    handler: async (request) => service.updateVariant(ctx(request), request.params.id, request.body),
  })

  app.delete('/variants/:id', {
    config,
    schema: {
      tags,
      summary: 'Delete a variant; never the last of its product (admin)',
      security,
      params: IdParams,
      response: { 200: MessageResponse, ...errors },
    },
    handler: async (request) => {
      await service.deleteVariant(ctx(request), request.params.id)
      return { message: messages.variantDeleted }
    },
  })
}
