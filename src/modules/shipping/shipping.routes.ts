import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { rejectBody } from '../../shared/no-body.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import { CreateShippingMethodBody, ListShippingMethodsQuery, ShippingMethod, ShippingMethodList, UpdateShippingMethodBody } from './shipping.schemas.js'
import { auditSource } from '../staff/audit-log.js'
import * as service from './shipping.service.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 422: ErrorResponse }

type Hook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

export async function shippingRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['shipping']
  const security = [{ bearerAuth: [] }]
  const admin = app.requireRole('admin')
  // Shipping methods are not part of the cached catalog; orders keep snapshots.
  const config = { permission: 'settings:write' as const, invalidates: [] }

  app.get('/shipping-methods', {
    // Public, except that `?all=true` (inactive methods too) is for admins: the same 401/403 as an admin route.
    onRequest: async (request, reply) => {
      const all = (request.query as { all?: unknown }).all
      if (all === undefined || all === 'false') return
      for (const hook of admin) await (hook as unknown as Hook).call(app, request, reply)
    },
    schema: {
      tags,
      summary: 'Active shipping methods, those shipping to `country` when given (`all=true`: admins, inactive too)',
      querystring: ListShippingMethodsQuery,
      response: { 200: ShippingMethodList, ...errors },
    },
    handler: async (request) => service.listShippingMethods(app.db, request.query),
  })

  app.post('/shipping-methods', {
    config,
    schema: { tags, summary: 'Add a shipping method (admin)', security, body: CreateShippingMethodBody, response: { 201: ShippingMethod, ...errors } },
    handler: async (request, reply) => reply.code(201).send(await service.createShippingMethod(app.db, request.body, auditSource(request))),
  })

  app.patch('/shipping-methods/:id', {
    config,
    schema: {
      tags,
      summary: 'Change a shipping method (admin)',
      security,
      params: IdParams,
      body: UpdateShippingMethodBody,
      response: { 200: ShippingMethod, ...errors },
    },
    handler: async (request) => service.updateShippingMethod(app.db, request.params.id, request.body, auditSource(request)),
  })

  app.delete('/shipping-methods/:id', {
    config,
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'Delete a shipping method (admin; orders keep their snapshot)',
      security,
      params: IdParams,
      response: { 200: MessageResponse, ...errors },
    },
    handler: async (request) => service.deleteShippingMethod(app.db, request.params.id, auditSource(request)),
  })
}
