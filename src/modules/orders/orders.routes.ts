import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { rejectBody } from '../../shared/no-body.js'
import { ErrorResponse, IdParams, type SchemaTypes } from '../../shared/validation.js'
import { ListOrdersQuery, Order, OrderList, PlaceOrderHeaders, UpdateStatusBody, type UpdateStatusInput } from './orders.schemas.js'
import * as service from './orders.service.js'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

export async function ordersRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['orders']
  const security = [{ bearerAuth: [] }]

  app.post('/orders', {
    onRequest: app.authenticate,
    // An order takes stock: product reads show it.
    config: { invalidates: ['catalog'] },
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'Turn the cart into an order (201); a repeated Idempotency-Key answers the first order (200)',
      security,
      headers: PlaceOrderHeaders,
      response: { 200: Order, 201: Order, ...errors },
    },
    handler: async (request, reply) => {
      const { order, created } = await service.placeOrder(app.db, request.user.id, { idempotencyKey: request.headers['idempotency-key'] })
      return reply.code(created ? 201 : 200).send(order)
    },
  })

  app.get('/orders', {
    onRequest: app.authenticate,
    schema: {
      tags,
      summary: 'Orders, newest first: the caller’s own, or all for an admin',
      security,
      querystring: ListOrdersQuery,
      response: { 200: OrderList, ...errors },
    },
    handler: async (request) => service.listOrders(app.db, request.user, request.query),
  })

  app.get('/orders/:id', {
    onRequest: app.authenticate,
    schema: { tags, summary: 'One order (someone else’s is not found)', security, params: IdParams, response: { 200: Order, ...errors } },
    handler: async (request) => service.getOrder(app.db, request.user, request.params.id),
  })

  const statusRoute = {
    onRequest: app.requireRole('admin'),
    // Cancelling puts stock back.
    config: { invalidates: ['catalog'] as const },
    schema: {
      tags,
      summary: 'Move an order to another status (admin)',
      security,
      params: IdParams,
      body: UpdateStatusBody,
      response: { 200: Order, ...errors },
    },
    handler: async (request: FastifyRequest<{ Params: IdParams; Body: UpdateStatusInput }>, _reply: FastifyReply) =>
      service.changeOrderStatus(app.db, request.params.id, request.body.status),
  }
  app.patch('/orders/:id/status', statusRoute)
  app.put('/orders/:id/status', statusRoute)
}
