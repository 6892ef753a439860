import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.js'
import type { AddressLookup } from './webhook-address.js'
import { webhooksRoutes } from './webhooks.routes.js'
import { type DeliveryOptions, deliverWebhook, enqueueWebhookDeliveries } from './webhooks.service.js'

export interface WebhooksPluginOptions {
  config: Config
  /** Tests: a resolver of their own, and shorter bounds. */
  lookup?: AddressLookup
  timeoutMs?: number
  maxResponseBytes?: number
}

/**
 * Webhooks: the admin's endpoints (webhooks.routes.ts), and, through the outbox, the fan-out of each shop event
 * into one delivery per subscribed endpoint (in the event's transaction) and the channel that sends them.
 */
export default async function webhooksPlugin(app: FastifyInstance, options: WebhooksPluginOptions): Promise<void> {
  const policy = { allowPrivate: options.config.webhooksAllowPrivate, ...(options.lookup ? { lookup: options.lookup } : {}) }
  const outbox = app.outbox
  // A retried delivery goes at once: the outbox wakes after every write request.
  await app.register(webhooksRoutes, { config: options.config, policy })
  const deliveryOptions: DeliveryOptions = {
    ...policy,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.maxResponseBytes === undefined ? {} : { maxResponseBytes: options.maxResponseBytes }),
  }
  outbox.registerChannel('webhook', async (message, signal) => {
    const outcome = await deliverWebhook(app.db, message, signal, deliveryOptions)
    // The id only: a URL may carry a token of the receiver's in its path or query.
    if (!outcome.ok && outcome.statusCode === 410)
      app.log.warn({ webhookId: message.webhookId }, 'webhooks: the receiver answered 410 Gone; the webhook was deactivated')
    return outcome
  })
  outbox.onEvent(async (trx, event) => {
    await enqueueWebhookDeliveries(trx, event)
  })
}
