import type { FastifyInstance } from 'fastify'
import Stripe from 'stripe'
import { AppError } from '../../shared/errors.js'
import { ErrorResponse } from '../../shared/validation.js'
import { WebhookAnswer } from './payments.schemas.js'
import { isChargeEvent, isIntentEvent, type PaymentsService } from './payments.service.js'

/** Stripe's events are a few kilobytes; this leaves room and refuses anything far larger before reading it. */
const WEBHOOK_BODY_LIMIT = 256 * 1024

/**
 * How far a signature's timestamp may be from the service's clock, in seconds, either way: 5 minutes, Stripe's
 * own tolerance. The SDK refuses a timestamp older than that and accepts any future one, so a captured delivery
 * signed (or dated, by a clock far ahead) in the future would stay valid until its time came.
 */
const SIGNATURE_TOLERANCE_S = 300

/**
 * The timestamp (seconds) the signature covers, read as the SDK reads it (`t=` items, the last one counts, an
 * integer prefix): the SDK verifies the HMAC of exactly that number, so this is the authenticated one.
 */
function signatureTimestamp(header: string): number {
  let timestamp = Number.NaN
  for (const item of header.split(',')) {
    const [key, value] = item.split('=')
    if (key === 't') timestamp = Number.parseInt(value ?? '', 10)
  }
  return timestamp
}

/**
 * POST /payments/stripe/webhook: the signature is checked on the raw bytes (this scope parses no JSON), by the
 * SDK, and its timestamp must be within 5 minutes of now, in the past (the SDK's check) or in the future (ours).
 * Only the event's id and type are logged, never its payload.
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
        throw new AppError(400, 'invalidWebhookSignature')
      }
      let event: Stripe.Event
      const receivedAt = Date.now()
      try {
        // A bad or old signature, or a signed body that is not JSON: the same 400, never a 5xx.
        event = Stripe.webhooks.constructEvent(body, signature, options.webhookSecret, SIGNATURE_TOLERANCE_S, undefined, receivedAt)
      } catch {
        throw new AppError(400, 'invalidWebhookSignature')
      }
      // A signature dated more than the tolerance ahead: the same 400 as an old one, before anything is applied.
      const ahead = signatureTimestamp(signature) - Math.floor(receivedAt / 1000)
      if (!(ahead <= SIGNATURE_TOLERANCE_S)) {
        request.log.warn({ secondsAhead: ahead }, 'stripe webhook signature dated in the future (is this clock behind?)')
        throw new AppError(400, 'invalidWebhookSignature')
      }
      const eventId = typeof event.id === 'string' ? event.id : undefined
      const type = typeof event.type === 'string' ? event.type : ''
      if (eventId !== undefined && isChargeEvent(type)) {
        const charge = chargeOf(type, (event.data as { object?: unknown } | undefined)?.object)
        if (!charge) {
          request.log.info({ eventId, type }, 'stripe event ignored')
          return { received: true }
        }
        const { outcome, orderId } = await options.payments.applyChargeEvent({ id: eventId, type, ...charge }, request.log)
        request.log.info({ eventId, type, orderId, outcome }, 'stripe event')
        return { received: true }
      }
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

/**
 * The fields of a charge event the shop reads: the intent (how the payment is found), the charge's or the dispute's
 * id, and the amount (`amount_refunded`, the charge's running total, or the disputed amount). Undefined when the
 * object lacks them.
 */
function chargeOf(type: string, object: unknown): { intentId: string; chargeId: string; amountCents: number; reason: string | null } | undefined {
  if (typeof object !== 'object' || object === null) return undefined
  const o = object as { id?: unknown; payment_intent?: unknown; amount_refunded?: unknown; amount?: unknown; reason?: unknown }
  const intentId = typeof o.payment_intent === 'string' ? o.payment_intent : undefined
  const amount = type === 'charge.refunded' ? o.amount_refunded : o.amount
  if (intentId === undefined || typeof o.id !== 'string' || typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 0) return undefined
  return { intentId, chargeId: o.id, amountCents: amount, reason: typeof o.reason === 'string' ? o.reason.slice(0, 200) : null }
}
