import { paged } from '../../shared/openapi.js'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { rejectBody } from '../../shared/no-body.js'
import { AppError, messages } from '../../shared/errors.js'
import { CartTokenHeader } from '../cart/cart.schemas.js'
import { findGuestCartId, hashCartToken } from '../cart/cart.service.js'
import { rateLimited } from '../../shared/openapi.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes, ValidationError } from '../../shared/validation.js'
import { auditSource } from '../staff/audit-log.js'
import { trimTextFields } from '../users/trim-text-fields.js'
import {
  ListOrdersQuery,
  OrderLookupBody,
  OrderTokenHeaders,
  OrderTokenQuery,
  Order,
  OrderList,
  PlaceOrderBody,
  type PlaceOrderInput,
  PlaceOrderHeaders,
  UpdateStatusBody,
  type UpdateStatusInput,
} from './orders.schemas.js'
import * as service from './orders.service.js'
import { fulfillmentsRoutes } from './fulfillments.routes.js'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }
const checkoutFields = new Set(Object.keys(PlaceOrderBody.properties))

/**
 * preValidation of POST /orders: no body, `null` or `{}` is a plain order (the body becomes `{}` for the schema);
 * an unknown field or a body that is not an object is refused in the words the route used before it took a body.
 */
async function checkOrderBody(request: FastifyRequest): Promise<void> {
  const body = request.body
  if (body === undefined || body === null) {
    request.body = {}
    return
  }
  if (typeof body !== 'object' || Array.isArray(body)) throw new ValidationError('body should be empty', 'body')
  // `email` is a guest's: a user's orders go to their account's e-mail.
  const unknown = Object.keys(body).find((field) => !checkoutFields.has(field) || (field === 'email' && request.guestBuyer === undefined))
  if (unknown !== undefined) throw new ValidationError(`property ${unknown} should not exist`, unknown)
}

declare module 'fastify' {
  interface FastifyRequest {
    /** POST /orders with `X-Cart-Token` and no bearer: the guest's cart. */
    guestBuyer: service.GuestBuyer | undefined
  }
}

/** `/orders` with the list's parameters in one fixed order, as the service read them (what `Link` points to). */
function orderListPath(query: ListOrdersQuery, offset: number): string {
  const search = new URLSearchParams({ limit: String(query.limit), offset: String(offset) })
  if (query.status) search.set('status', query.status)
  if (query.userId !== undefined) search.set('userId', String(query.userId))
  if (query.guest !== undefined) search.set('guest', String(query.guest))
  if (query.email !== undefined) search.set('email', query.email)
  if (query.fulfillmentStatus !== undefined) search.set('fulfillmentStatus', query.fulfillmentStatus)
  if (query.paymentStatus !== undefined) search.set('paymentStatus', query.paymentStatus)
  return `/orders?${search.toString()}`
}

/** RFC 8288 `Link` with `next`/`prev` when they exist, as on GET /products. */
function orderPageLinks(publicUrl: string, query: ListOrdersQuery, total: number): string | null {
  const link = (offset: number, rel: string) => `<${publicUrl}${orderListPath(query, offset)}>; rel="${rel}"`
  const links: string[] = []
  if (query.offset + query.limit < total) links.push(link(query.offset + query.limit, 'next'))
  if (query.offset > 0) links.push(link(Math.max(0, Math.min(query.offset - query.limit, total - query.limit)), 'prev'))
  return links.length > 0 ? links.join(', ') : null
}

export async function ordersRoutes(fastify: FastifyInstance, options: { config: Config; orders: service.OrdersDeps }): Promise<void> {
  const { publicUrl } = options.config
  const linkSettings = { tokens: fastify.orderTokens, shopUrl: options.config.sessions.shopUrl }
  const { orders } = options
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['orders']
  const security = [{ bearerAuth: [] }]

  app.decorateRequest('guestBuyer', undefined)
  /** A bearer orders the user's cart; without one, `X-Cart-Token` orders a guest cart (while guest checkout is on). */
  const buyer = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const token = request.headers[CartTokenHeader]
    if (request.headers.authorization !== undefined || typeof token !== 'string') {
      for (const hook of app.authenticate) await (hook as unknown as (r: FastifyRequest, s: FastifyReply) => Promise<void>).call(app, request, reply)
      return
    }
    if (!options.config.guests.checkout) throw new AppError(403, 'guestCheckoutDisabled')
    request.guestBuyer = { cartId: await findGuestCartId(app.db, token), cartTokenHash: hashCartToken(token) }
  }

  app.post('/orders', {
    onRequest: buyer,
    // An order takes stock: product reads show it.
    config: { invalidates: ['catalog'] },
    preValidation: checkOrderBody,
    schema: {
      tags,
      summary:
        'Turn the cart into an order (201), with an optional checkout body; a repeated Idempotency-Key answers the first order (200). A guest orders their cart with X-Cart-Token: the answer adds `orderToken`.',
      security: [{ bearerAuth: [] }, { cartToken: [] }],
      headers: PlaceOrderHeaders,
      body: PlaceOrderBody,
      response: { 200: Order, 201: Order, ...errors },
    },
    handler: async (request, reply) => {
      const checkout: PlaceOrderInput = request.body
      const guest = request.guestBuyer
      const { order, created } = await service.placeOrder(orders, guest ?? request.user.id, { idempotencyKey: request.headers['idempotency-key'] }, checkout)
      // A guest's link to their order, signed as of the order's creation: the replay answers the same token.
      const answer = guest ? { ...order, orderToken: service.orderLink(linkSettings, order.id, Date.parse(order.createdAt)).orderToken } : order
      return reply.code(created ? 201 : 200).send(answer)
    },
  })

  app.get('/orders', {
    // Everyone's orders are staff's `orders:read`.
    onRequest: app.ownOrStaff('orders:read'),
    schema: {
      tags,
      summary: 'Orders, newest first: the caller’s own, or all for an admin (`userId`: one customer’s)',
      security,
      querystring: ListOrdersQuery,
      response: { 200: paged(OrderList), ...errors },
    },
    handler: async (request, reply) => {
      const { orders: page, total } = await service.listOrders(orders, request.user, request.query)
      reply.header('X-Total-Count', total)
      const links = orderPageLinks(publicUrl, request.query, total)
      if (links) reply.header('Link', links)
      return page
    },
  })

  // A guest's link: the order token instead of a bearer (app.orderAccess).
  const orderSecurity: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { orderToken: [] }]

  app.post('/orders/lookup', {
    onRequest: app.guestOrderRateLimit,
    config: { invalidates: [] },
    preValidation: trimTextFields,
    schema: {
      tags,
      summary: 'E-mail a fresh link to a guest order (the same 202 whether or not the order and e-mail match)',
      body: OrderLookupBody,
      response: rateLimited({ 202: MessageResponse, 422: ErrorResponse, 429: ErrorResponse }),
    },
    handler: async (request, reply) => {
      await service.requestOrderLink(orders, request.body, linkSettings)
      return reply.code(202).send({ message: messages.orderLookupRequested })
    },
  })

  app.get('/orders/:id', {
    onRequest: app.orderOwnOrStaff('orders:read'),
    schema: {
      tags,
      summary: 'One order (someone else’s is not found); a guest’s with its order token',
      security: orderSecurity,
      params: IdParams,
      querystring: OrderTokenQuery,
      headers: OrderTokenHeaders,
      response: { 200: Order, ...errors },
    },
    handler: async (request) =>
      request.orderToken ? service.getOrderByToken(orders, request.params.id) : service.getOrder(orders, request.user, request.params.id),
  })

  app.post('/orders/:id/cancel', {
    onRequest: app.orderAccess,
    // Cancelling puts stock back.
    config: { invalidates: ['catalog'] },
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'Cancel one’s own pending order (a guest’s with its order token); the stock comes back',
      security: orderSecurity,
      params: IdParams,
      querystring: OrderTokenQuery,
      headers: OrderTokenHeaders,
      response: { 200: Order, ...errors },
    },
    handler: async (request) =>
      request.orderToken
        ? service.cancelOrderByToken(orders, request.params.id, request.log)
        : service.cancelOwnOrder(orders, request.user.id, request.params.id, request.log),
  })

  const statusRoute = {
    // Cancelling puts stock back; cancelling a paid order refunds it, which also takes `refunds:write` (the service).
    config: { permission: 'orders:write' as const, invalidates: ['catalog'] as const },
    schema: {
      tags,
      summary: 'Move an order to another status (admin)',
      security,
      params: IdParams,
      body: UpdateStatusBody,
      response: { 200: Order, ...errors },
    },
    handler: async (request: FastifyRequest<{ Params: IdParams; Body: UpdateStatusInput }>, _reply: FastifyReply) =>
      service.changeOrderStatus(orders, request.user, request.params.id, request.body.status, request.log, auditSource(request)),
  }
  app.patch('/orders/:id/status', statusRoute)
  app.put('/orders/:id/status', statusRoute)

  await fulfillmentsRoutes(fastify, { config: options.config, deps: orders })
}
