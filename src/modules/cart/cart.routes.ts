import type { FastifyInstance } from 'fastify'
import { messages } from '../../shared/errors.js'
import { rejectBody } from '../../shared/no-body.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import { AddToCartBody, CartItem, CartView, UpdateCartItemBody } from './cart.schemas.js'
import * as service from './cart.service.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** The caller's own cart: every route acts on `request.user.id` only. */
export async function cartRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['cart']
  const security = [{ bearerAuth: [] }]
  const onRequest = app.authenticate
  // A cart line changes nothing cached: stock moves only when an order is placed.
  const config = { invalidates: [] }

  app.get('/cart', {
    onRequest,
    schema: { tags, summary: 'The caller’s cart', security, response: { 200: CartView, ...errors } },
    handler: async (request) => service.getCart(app.db, request.user.id),
  })

  app.post('/cart/add', {
    onRequest,
    config,
    schema: {
      tags,
      summary: 'Add a product (combines with an existing line)',
      security,
      body: AddToCartBody,
      response: { 200: CartItem, 201: CartItem, ...errors },
    },
    handler: async (request, reply) => {
      const { item, created } = await service.addToCart(app.db, request.user.id, request.body)
      return reply.code(created ? 201 : 200).send(item)
    },
  })

  app.put('/cart/item/:id', {
    onRequest,
    config,
    schema: { tags, summary: 'Change a line’s quantity', security, params: IdParams, body: UpdateCartItemBody, response: { 200: CartItem, ...errors } },
    handler: async (request) => service.updateCartItem(app.db, request.user.id, request.params.id, request.body.quantity),
  })

  app.delete('/cart/item/:id', {
    onRequest,
    config,
    preValidation: rejectBody,
    schema: { tags, summary: 'Remove a line', security, params: IdParams, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await service.removeCartItem(app.db, request.user.id, request.params.id)
      return { message: messages.cartItemRemoved }
    },
  })

  app.delete('/cart/clear', {
    onRequest,
    config,
    preValidation: rejectBody,
    schema: { tags, summary: 'Empty the cart', security, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await service.clearCart(app.db, request.user.id)
      return { message: messages.cartCleared }
    },
  })
}
