import type { FastifyInstance } from 'fastify'
import Stripe from 'stripe'
import { AppError, messages } from '../../shared/errors.js'
import { ErrorResponse } from '../../shared/validation.js'
import { WebhookAnswer } from './payments.schemas.js'
import { isIntentEvent, type PaymentsService } from './payments.service.js'

/** Stripe's events are a few kilobytes; this leaves room and refuses anything far larger before reading it. */
const WEBHOOK_BODY_LIMIT = 256 * 1024

/**
 * POST /payments/stripe/webhook: the signature is checked on the raw bytes (this scope parses no JSON), by the
 * SDK, with its 5-minute tolerance. Only the event's id and type are logged, never its payload.
 */
export async function stripeWebhookRoutes(app: FastifyInstance, options: { webhookSecret: string | null; payments: PaymentsService }): Promise<void> {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) => done(null, body))

  app.post('/payments/stripe/webhook', {
    // A payment changes no product (a cancelled order's stock came back when it was cancelled).
    config: { invalidates: [] },
    bodyLimit: WEBHOOK_BODY_LIMIT,
    schema: {
      tags: ['payments'],
      summary: 'Stripe’s events about payment intents (signed with STRIPE_WEBHOOK_SECRET)',
      response: { 200: WebhookAnswer, 400: ErrorResponse, 413: ErrorResponse, 502: ErrorResponse },
    },
    handler: async (request) => {
      const signature = request.headers['stripe-signature']
      const body = request.body
      if (options.webhookSecret === null || typeof signature !== 'string' || !Buffer.isBuffer(body)) {
        throw new AppError(400, messages.invalidWebhookSignature)
      }
      let event: Stripe.Event
      try {
        // A bad or old signature, or a signed body that is not JSON: the same 400, never a 5xx.
        event = Stripe.webhooks.constructEvent(body, signature, options.webhookSecret)
      } catch {
        throw new AppError(400, messages.invalidWebhookSignature)
      }
      const eventId = typeof event.id === 'string' ? event.id : undefined
      const type = typeof event.type === 'string' ? event.type : ''
      const intent = (event.data as { object?: unknown } | undefined)?.object as Partial<Stripe.PaymentIntent> | undefined
      if (eventId === undefined || !isIntentEvent(type) || !intent || typeof intent.id !== 'string') {
        request.log.info({ eventId, type }, 'stripe event ignored')
        return { received: true }
      }
      const amountReceived = typeof intent.amount_received === 'number' ? intent.amount_received : 0
      const currency = typeof intent.currency === 'string' ? intent.currency : ''
      const { outcome, orderId } = await options.payments.applyIntentEvent(
        { id: eventId, type, intent: { id: intent.id, amountReceivedCents: amountReceived, currency } },
        request.log,
      )
      request.log.info({ eventId, type, orderId, outcome }, 'stripe event')
      return { received: true }
    },
  })
}
