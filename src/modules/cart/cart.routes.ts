import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, messages } from '../../shared/errors.js'
import { rejectBody } from '../../shared/no-body.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import type { PricingSettings } from './cart-view.js'
import type { CartViewCache, CartViewTicket } from './cart-view-cache.js'
import { applyCartDiscount, getCartView } from './cart-view.js'
import { AddToCartBody, ApplyDiscountBody, CartItem, CartTokenHeader, CartView, GuestCart, UpdateCartBody, UpdateCartItemBody } from './cart.schemas.js'
import * as service from './cart.service.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the cart routes' owner hook: the bearer's cart, or the guest cart `X-Cart-Token` opens. */
    cartRef: service.CartRef
    /** GET /cart: what its answer is kept under (a signed-in customer's cart without a code), if kept. */
    cartViewTicket: CartViewTicket | undefined
  }
}

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

type Hook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

export interface CartRoutesOptions {
  cart: service.CartSettings
  pricing: PricingSettings
  /** The signed-in customers' cart views kept in memory (answered before Fastify while unchanged). */
  views?: CartViewCache
  /** Whether expired guest carts are swept (hourly); off for the CLI. */
  jobs?: boolean
}

/** The answer's headers as writeHead takes them, but its request id (each answer has its own) and length (set per body). */
function keptHeaders(reply: FastifyReply): string[] {
  const headers: string[] = []
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value === undefined || name === 'x-request-id' || name === 'content-length') continue
    headers.push(name, String(value))
  }
  return headers
}

/** Expired guest carts are removed once an hour, 500 at a time until none is left. */
export const CART_SWEEP_EVERY_MS = 60 * 60_000

/**
 * The caller's own cart: a bearer's (the user's cart) or a guest's (`X-Cart-Token`); with both, the bearer's.
 * Every route acts on that cart only.
 */
export async function cartRoutes(fastify: FastifyInstance, options: CartRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const { cart: settings, pricing } = options
  const tags = ['cart']
  const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { cartToken: [] }]
  // A cart line changes nothing cached: stock moves only when an order is placed.
  const config = { invalidates: [] }
  app.decorateRequest('cartRef', undefined as never)

  if (options.jobs ?? true) {
    // Deleting expired rows is the same whoever does it: several instances need no claim.
    let running: Promise<void> = Promise.resolve()
    const sweep = async () => {
      while ((await service.sweepExpiredCarts(app.db)) === 500) {
        // More to remove: go on.
      }
    }
    const timer = setInterval(() => {
      running = running.then(sweep).catch((error: unknown) => app.log.error({ err: error, job: 'carts:sweep' }, 'cart sweep failed'))
    }, CART_SWEEP_EVERY_MS)
    timer.unref()
    app.addHook('onClose', async () => {
      clearInterval(timer)
      await running
    })
  }

  /** The cart owner, before the body is read: 401 with neither, 404 for an unknown or expired cart token. */
  const onRequest = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (request.headers.authorization !== undefined) {
      for (const hook of app.authenticate) await (hook as unknown as Hook).call(app, request, reply)
      request.cartRef = { userId: request.user.id }
      return
    }
    const token = request.headers[CartTokenHeader]
    if (typeof token !== 'string') throw new AppError(401, 'noUser')
    request.cartRef = { cartId: await service.findGuestCartId(app.db, token) }
  }

  app.post('/carts', {
    config,
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'A guest cart: its token, shown once, opens it as `X-Cart-Token`',
      response: { 201: GuestCart, 403: ErrorResponse },
    },
    handler: async (_request, reply) => reply.code(201).send(await service.createGuestCart(app.db, settings)),
  })

  const views = options.views
  app.decorateRequest('cartViewTicket', undefined)
  app.get('/cart', {
    onRequest,
    schema: { tags, summary: 'The caller’s cart, with the full breakdown checkout would charge', security, response: { 200: CartView, ...errors } },
    handler: async (request) => {
      const { userId } = request.cartRef
      // The fingerprint before the view (cart-view-cache.ts): the answer is at least as new as what it is kept under.
      if (views !== undefined && userId !== undefined) request.cartViewTicket = await views.begin(userId)
      return getCartView(app.db, request.cartRef, pricing)
    },
    onSend: async (request, reply, payload) => {
      const ticket = request.cartViewTicket
      if (views !== undefined && ticket !== undefined && reply.statusCode === 200 && typeof payload === 'string') {
        views.store(ticket, payload, keptHeaders(reply))
      }
      return payload
    },
  })

  app.patch('/cart', {
    onRequest,
    config,
    schema: {
      tags,
      summary: 'Keep checkout choices on the cart: e-mail (guests), address, shipping method, note; null clears one',
      security,
      body: UpdateCartBody,
      response: { 200: CartView, ...errors },
    },
    handler: async (request) => {
      await service.updateCartChoices(app.db, request.cartRef, settings, request.body)
      return getCartView(app.db, request.cartRef, pricing)
    },
  })

  app.post('/cart/discount', {
    onRequest,
    config,
    schema: {
      tags,
      summary: 'Apply a discount code to the cart (one per cart: a new one replaces it)',
      security,
      body: ApplyDiscountBody,
      response: { 200: CartView, ...errors },
    },
    handler: async (request) => {
      return applyCartDiscount(app.db, request.cartRef, settings, pricing, request.body.code)
    },
  })

  app.delete('/cart/discount', {
    onRequest,
    config,
    preValidation: rejectBody,
    schema: { tags, summary: 'Remove the cart’s discount code', security, response: { 200: CartView, ...errors } },
    handler: async (request) => {
      await service.setCartDiscountCode(app.db, request.cartRef, settings, null)
      return getCartView(app.db, request.cartRef, pricing)
    },
  })

  app.post('/cart/add', {
    onRequest,
    config,
    schema: {
      tags,
      summary: 'Add a variant (combines with an existing line)',
      security,
      body: AddToCartBody,
      response: { 200: CartItem, 201: CartItem, ...errors },
    },
    handler: async (request, reply) => {
      const { item, created } = await service.addToCart(app.db, request.cartRef, settings, request.body)
      return reply.code(created ? 201 : 200).send(item)
    },
  })

  app.put('/cart/item/:id', {
    onRequest,
    config,
    schema: { tags, summary: 'Change a line’s quantity', security, params: IdParams, body: UpdateCartItemBody, response: { 200: CartItem, ...errors } },
    handler: async (request) => service.updateCartItem(app.db, request.cartRef, settings, request.params.id, request.body.quantity),
  })

  app.delete('/cart/item/:id', {
    onRequest,
    config,
    preValidation: rejectBody,
    schema: { tags, summary: 'Remove a line', security, params: IdParams, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await service.removeCartItem(app.db, request.cartRef, settings, request.params.id)
      return { message: messages.cartItemRemoved }
    },
  })

  app.delete('/cart/clear', {
    onRequest,
    config,
    preValidation: rejectBody,
    schema: { tags, summary: 'Empty the cart', security, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await service.clearCart(app.db, request.cartRef, settings)
      return { message: messages.cartCleared }
    },
  })
}
