import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { PaymentJobs } from './payments.jobs.js'
import { paymentsRoutes } from './payments.routes.js'
import { attachPayments, detachPayments, paymentSummaries, type Payments } from './payments.service.js'
import { manualProvider } from './providers/manual.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The shop's payment provider and settings (src/modules/payments). */
    payments: Payments
    /** The reconcile and expiry jobs; tests run them by hand. */
    paymentJobs: PaymentJobs
  }
}

/**
 * Builds the payments of a configuration: the provider it names, and a logger. The Stripe SDK is loaded only
 * when Stripe is configured (a shop without it does not pay for loading it at start-up).
 */
export async function createPayments(config: Config, log: Payments['log']): Promise<Payments> {
  const settings = config.payments
  if (!settings.stripe) return { provider: manualProvider, config: settings, log }
  const { createStripeProvider } = await import('./providers/stripe.js')
  return { provider: createStripeProvider(settings.stripe), config: settings, log }
}

type OrderLike = { id: number; total: number; items: unknown[]; payment?: unknown }

function isOrder(value: unknown): value is OrderLike {
  return typeof value === 'object' && value !== null && typeof (value as OrderLike).id === 'number' && Array.isArray((value as OrderLike).items)
}

/**
 * Payments: POST /orders/:id/payment, Stripe's webhook (with Stripe), `payment` on the order JSON (with Stripe:
 * a shop without it answers orders exactly as before), the orders' status-change hook, and the timed jobs.
 * Registered before the orders' routes, so that its hook sees their answers.
 */
async function paymentsPlugin(app: FastifyInstance, options: { config: Config; jobs?: boolean }): Promise<void> {
  const payments = await createPayments(options.config, app.log)
  app.decorate('payments', payments)
  attachPayments(app.db, payments)

  if (payments.provider.name === 'stripe') {
    app.addHook('preSerialization', async (request: FastifyRequest, reply, payload: unknown) => {
      if (reply.statusCode >= 300 || !request.routeOptions.url?.startsWith('/orders')) return payload
      const list = Array.isArray(payload) ? payload.filter(isOrder) : isOrder(payload) ? [payload] : []
      if (list.length === 0) return payload
      const summaries = await paymentSummaries(app.db, payments, list)
      for (const order of list) order.payment = summaries.get(order.id)
      return payload
    })
  }

  const jobs = new PaymentJobs(app.db, payments, () => app.changeFeed.publish('catalog'))
  app.decorate('paymentJobs', jobs)
  if (options.jobs ?? true) jobs.start()
  app.addHook('onClose', async () => {
    await jobs.stop()
    detachPayments(app.db)
  })

  await app.register(paymentsRoutes)
  if (payments.provider.name === 'stripe') {
    const { stripeWebhookRoutes } = await import('./stripe-webhook.routes.js')
    await app.register(stripeWebhookRoutes, { webhookSecret: options.config.payments.stripe?.webhookSecret ?? null })
  }
}

export default fp(paymentsPlugin, { name: 'payments', dependencies: ['database', 'auth', 'change-feed'] })
