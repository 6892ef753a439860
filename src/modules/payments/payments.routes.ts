import type { FastifyInstance } from 'fastify'
import { rejectBody } from '../../shared/no-body.js'
import { ErrorResponse, IdParams, type SchemaTypes } from '../../shared/validation.js'
import { OrderTokenHeaders, OrderTokenQuery } from '../orders/orders.schemas.js'
import { PaymentAnswer } from './payments.schemas.js'
import type { PaymentsService } from './payments.service.js'

const errors = { 401: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse, 502: ErrorResponse }

export async function paymentsRoutes(fastify: FastifyInstance, options: { payments: PaymentsService }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()

  app.post('/orders/:id/payment', {
    // A bearer (one's own order), or the order's token (a guest's link).
    onRequest: app.orderAccess,
    // A payment changes no product.
    config: { invalidates: [] },
    preValidation: rejectBody,
    schema: {
      tags: ['payments'],
      summary: 'Pay for one’s own pending order (or a guest’s, with its order token): the payment, and with Stripe the intent’s client secret',
      security: [{ bearerAuth: [] }, { orderToken: [] }],
      params: IdParams,
      querystring: OrderTokenQuery,
      headers: OrderTokenHeaders,
      response: { 200: PaymentAnswer, ...errors },
    },
    handler: async (request) => options.payments.startPayment(request.orderToken ? null : request.user.id, request.params.id, request.log),
  })
}
