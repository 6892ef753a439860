import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { PaymentJobs } from './payments.jobs.js'
import { paymentsRoutes } from './payments.routes.js'
import type { PaymentsService } from './payments.service.js'
import { manualProvider } from './providers/manual.js'
import type { PaymentProvider } from './providers/provider.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The payments module (src/modules/payments): its provider, settings, events and jobs. */
    payments: PaymentsService
    /** The reconcile and expiry jobs; tests run them by hand. */
    paymentJobs: PaymentJobs
  }
}

/**
 * The provider a configuration names. The Stripe SDK is loaded only when Stripe is configured (a shop without it
 * does not pay for loading it at start-up).
 */
export async function createPaymentProvider(config: Config): Promise<PaymentProvider> {
  const settings = config.payments
  if (!settings.stripe) return manualProvider
  const { createStripeProvider } = await import('./providers/stripe.js')
  return createStripeProvider(settings.stripe)
}

/**
 * Payments: POST /orders/:id/payment, Stripe's webhook (with Stripe), and the timed jobs. The service itself is
 * built in app.ts with the rest of the shop's services, and handed in.
 */
async function paymentsPlugin(app: FastifyInstance, options: { config: Config; payments: PaymentsService; jobs?: boolean }): Promise<void> {
  const { payments } = options
  app.decorate('payments', payments)

  const jobs = new PaymentJobs(app.db, payments, () => app.changeFeed.publish('catalog'))
  app.decorate('paymentJobs', jobs)
  if (options.jobs ?? true) jobs.start()
  app.addHook('onClose', async () => {
    await jobs.stop()
  })

  await app.register(paymentsRoutes, { payments })
  if (payments.provider.name === 'stripe') {
    const { stripeWebhookRoutes } = await import('./stripe-webhook.routes.js')
    await app.register(stripeWebhookRoutes, { webhookSecret: options.config.payments.stripe?.webhookSecret ?? null, payments })
  }
}

export default fp(paymentsPlugin, { name: 'payments', dependencies: ['database', 'auth', 'change-feed'] })
