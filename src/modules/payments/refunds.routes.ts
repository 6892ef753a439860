import type { FastifyInstance, FastifyRequest } from 'fastify'
import { messages } from '../../shared/errors.js'
import { ErrorResponse, IdParams, type SchemaTypes, ValidationError } from '../../shared/validation.js'
import { RefundBody, RefundHeaders, Refund, RefundPreview } from './refunds.schemas.js'
import type { RefundsService } from './refunds.service.js'
import { auditSource } from '../staff/audit-log.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse, 502: ErrorResponse }

/**
 * The `Idempotency-Key` is checked first of the request (before the body): a refund without one is refused at once.
 * A path that names no order (`/orders/abc/refunds`) is answered by the path's own 422 first, as on every route.
 */
async function requireIdempotencyKey(request: FastifyRequest): Promise<void> {
  const id = String((request.params as { id?: unknown }).id)
  if (!/^[1-9][0-9]{0,9}$/.test(id) || Number(id) > 2147483647) return
  const key = request.headers['idempotency-key']
  if (typeof key !== 'string' || key === '') throw new ValidationError(messages.idempotencyKeyMissing, 'idempotency-key')
}

/** POST /orders/:id/refunds/preview and POST /orders/:id/refunds. */
export async function refundsRoutes(fastify: FastifyInstance, options: { refunds: RefundsService }): Promise<void> {
  const { refunds } = options
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['orders']
  const security = [{ bearerAuth: [] }]

  app.post('/orders/:id/refunds/preview', {
    // The preview is the first step of a refund: for those who may make it.
    config: { permission: 'refunds:write', invalidates: [] },
    schema: {
      tags,
      summary: 'What a refund would give back now (nothing is written): each line’s amount and tax, the shipping’s, and what is refundable',
      security,
      params: IdParams,
      body: RefundBody,
      response: { 200: RefundPreview, ...errors },
    },
    handler: async (request) => refunds.preview(request.params.id, request.body),
  })

  app.post('/orders/:id/refunds', {
    // Restocked units change the products' stock.
    config: { permission: 'refunds:write', invalidates: ['catalog'] },
    preValidation: requireIdempotencyKey,
    schema: {
      tags,
      summary:
        'Refund units of some lines, some shipping, or an amount (201); the same Idempotency-Key on that order within 24 h answers the first refund (200). Through Stripe when the order was paid by card.',
      security,
      params: IdParams,
      headers: RefundHeaders,
      body: RefundBody,
      response: { 200: Refund, 201: Refund, ...errors },
    },
    handler: async (request, reply) => {
      const key = request.headers['idempotency-key'] as string
      const { refund, created } = await refunds.create(
        request.params.id,
        key,
        request.body,
        { id: request.user.id, apiKey: request.user.apiKey },
        request.log,
        auditSource(request),
      )
      return reply.code(created ? 201 : 200).send(refund)
    },
  })
}
