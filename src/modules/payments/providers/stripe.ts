import Stripe from 'stripe'
import type { PaymentsConfig } from '../../../config.js'
import { RefundError, type RemoteIntent, type RemoteProvider } from './provider.js'

/**
 * Every call to Stripe is bounded: 10 s for one attempt (Stripe answers in well under a second; the SDK's own
 * default is 80 s), and one retry on a network error, a 409 or a 5xx, with the same idempotency key, so a call
 * that may have been applied is never applied twice. A call thus gives up after about 21 s at worst (two
 * attempts and the SDK's back-off).
 */
export const STRIPE_TIMEOUT_MS = 10_000
export const STRIPE_MAX_NETWORK_RETRIES = 1

type StripeSettings = NonNullable<PaymentsConfig['stripe']>

/** The SDK's `host`/`port`/`protocol` for STRIPE_API_URL (a local stand-in such as stripe-mock), or Stripe itself. */
export function stripeClientOptions(settings: StripeSettings, timeoutMs = STRIPE_TIMEOUT_MS): Stripe.StripeConfig {
  const options: Stripe.StripeConfig = { timeout: timeoutMs, maxNetworkRetries: STRIPE_MAX_NETWORK_RETRIES, telemetry: false }
  if (settings.apiUrl !== null) {
    const url = new URL(settings.apiUrl)
    const protocol = url.protocol === 'http:' ? 'http' : 'https'
    options.host = url.hostname
    options.port = url.port === '' ? (protocol === 'http' ? 80 : 443) : Number(url.port)
    options.protocol = protocol
  }
  return options
}

function toIntent(intent: Stripe.PaymentIntent): RemoteIntent {
  return {
    id: intent.id,
    status: intent.status,
    amountCents: intent.amount,
    amountReceivedCents: intent.amount_received,
    currency: intent.currency.toUpperCase(),
    clientSecret: intent.client_secret,
  }
}

/** Stripe through its official SDK. */
export function createStripeProvider(settings: StripeSettings, timeoutMs?: number): RemoteProvider {
  const stripe = new Stripe(settings.secretKey, stripeClientOptions(settings, timeoutMs))
  return {
    name: 'stripe',
    publishableKey: settings.publishableKey,
    async createIntent({ orderId, amountCents, currency, idempotencyKey }) {
      const intent = await stripe.paymentIntents.create(
        {
          amount: amountCents,
          // Stripe takes lower case; the API shows upper case.
          currency: currency.toLowerCase(),
          automatic_payment_methods: { enabled: true },
          metadata: { orderId: String(orderId) },
        },
        { idempotencyKey },
      )
      return toIntent(intent)
    },
    async retrieveIntent(intentId) {
      return toIntent(await stripe.paymentIntents.retrieve(intentId))
    },
    async cancelIntent(intentId) {
      try {
        await stripe.paymentIntents.cancel(intentId)
      } catch (error) {
        // Already canceled or succeeded: nothing left to stop (a success is refunded when its event comes).
        if (error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 400) return
        throw error
      }
    },
    async refund({ intentId, idempotencyKey, amountCents }) {
      try {
        await stripe.refunds.create({ payment_intent: intentId, ...(amountCents === undefined ? {} : { amount: amountCents }) }, { idempotencyKey })
      } catch (error) {
        const status = (error as { statusCode?: number }).statusCode
        // A 4xx other than 409 (a request still in flight under the key) and 429 (slow down) is Stripe's answer.
        const definite = error instanceof Stripe.errors.StripeError && status !== undefined && status >= 400 && status < 500 && status !== 409 && status !== 429
        throw new RefundError(definite, { cause: error })
      }
    },
  }
}
