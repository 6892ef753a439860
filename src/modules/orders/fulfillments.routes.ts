import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { ErrorResponse, IdParams, type SchemaTypes } from '../../shared/validation.js'
import { CreateFulfillmentBody, Fulfillment, MarkDeliveredBody, NoteBody, OrderEvent, OrderEventList, UpdateFulfillmentBody } from './fulfillments.schemas.js'
import { auditSource } from '../staff/audit-log.js'
import * as service from './fulfillments.service.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** No body, `null` and `{}` are alike (every field has a default): the schema sees `{}`. */
async function emptyBodyIsObject(request: FastifyRequest): Promise<void> {
  if (request.body === undefined || request.body === null) request.body = {}
}

/** Shipments (POST /orders/:id/fulfillments, PATCH /fulfillments/:id, …) and the order's timeline. */
export async function fulfillmentsRoutes(fastify: FastifyInstance, options: { config: Config; deps: service.FulfillmentsDeps }): Promise<void> {
  const { deps } = options
  const links = { tokens: fastify.orderTokens, shopUrl: options.config.sessions.shopUrl }
  const app = fastify.withTypeProvider<SchemaTypes>()
  const security = [{ bearerAuth: [] }]

  app.post('/orders/:id/fulfillments', {
    config: { permission: 'fulfillments:write', invalidates: [] },
    preValidation: emptyBodyIsObject,
    schema: {
      tags: ['fulfillments'],
      summary: 'Ship units of an order (every unit left by default); the first shipment moves a paid order to shipped',
      security,
      params: IdParams,
      body: CreateFulfillmentBody,
      response: { 201: Fulfillment, ...errors },
    },
    handler: async (request, reply) => {
      const fulfillment = await service.createFulfillment(deps, request.params.id, request.body, request.user, request.log, auditSource(request))
      return reply.code(201).send(fulfillment)
    },
  })

  app.patch('/fulfillments/:id', {
    config: { permission: 'fulfillments:write', invalidates: [] },
    schema: {
      tags: ['fulfillments'],
      summary: 'Change a shipment’s carrier and tracking, or its delivery',
      security,
      params: IdParams,
      body: UpdateFulfillmentBody,
      response: { 200: Fulfillment, ...errors },
    },
    handler: async (request) => service.updateFulfillment(deps, request.params.id, request.body, request.user, links, request.log, auditSource(request)),
  })

  app.post('/fulfillments/:id/delivered', {
    config: { permission: 'fulfillments:write', invalidates: [] },
    preValidation: emptyBodyIsObject,
    schema: {
      tags: ['fulfillments'],
      summary: 'Mark a shipment delivered (now by default); the last delivery of a fully shipped order delivers the order',
      security,
      params: IdParams,
      body: MarkDeliveredBody,
      response: { 200: Fulfillment, ...errors },
    },
    handler: async (request) => service.markDelivered(deps, request.params.id, request.body, request.user, request.log, auditSource(request)),
  })

  app.get('/orders/:id/events', {
    config: { permission: 'orders:read' },
    schema: {
      tags: ['orders'],
      summary: 'The order’s timeline, oldest first (admin)',
      security,
      params: IdParams,
      response: { 200: OrderEventList, ...errors },
    },
    handler: async (request) => service.orderEvents(deps, request.params.id),
  })

  app.post('/orders/:id/notes', {
    config: { permission: 'orders:write', invalidates: [] },
    schema: {
      tags: ['orders'],
      summary: 'Add a note to the order’s timeline (admin)',
      security,
      params: IdParams,
      body: NoteBody,
      response: { 201: OrderEvent, ...errors },
    },
    handler: async (request, reply) =>
      reply.code(201).send(await service.addNote(deps, request.params.id, request.body.text, request.user, auditSource(request))),
  })
}
