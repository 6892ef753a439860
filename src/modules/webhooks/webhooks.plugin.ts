import type { FastifyInstance } from 'fastify'
import type { EventListener } from '../outbox/dispatcher.js'
import type { Config } from '../../config.js'
import type { AddressLookup } from './webhook-address.js'
import type { sendWebhook } from './webhook-delivery.js'
import { webhooksRoutes } from './webhooks.routes.js'
import { type DeliveryOptions, deliverWebhook, deliveryRows, subscriptionsCache } from './webhooks.service.js'

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
  // A retried delivery goes at once: the outbox wakes after a write request that made a row due (requeueDelivery counts it).
  await app.register(webhooksRoutes, { config: options.config, policy })
  const deliveryOptions: DeliveryOptions = {
    ...policy,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.maxResponseBytes === undefined ? {} : { maxResponseBytes: options.maxResponseBytes }),
  }
  // The POST itself runs on the outbox's sending thread, unless a test gave its own resolver (a function stays here)
  // or traces are on (OpenTelemetry instruments this thread's node:http, so a delivery sent here is a client span).
  const send: typeof sendWebhook | undefined =
    options.lookup || options.config.tracing
      ? undefined
      : async (target, message, { signal }) => {
          const { lookup: _none, ...plain } = deliveryOptions
          const job = { kind: 'webhook' as const, target, message, options: plain }
          return (await outbox.sender.run(job, signal ?? new AbortController().signal)).outcome
        }
  outbox.registerChannel('webhook', async (message, signal) => {
    const outcome = await deliverWebhook(app.db, message, signal, deliveryOptions, send)
    // The id only: a URL may carry a token of the receiver's in its path or query.
    if (!outcome.ok && outcome.statusCode === 410) {
      app.log.warn({ webhookId: message.webhookId }, 'webhooks: the receiver answered 410 Gone; the webhook was deactivated')
      app.changeFeed.publish('webhooks')
    }
    return outcome
  })
  // Each event's deliveries, in its transaction: one row per subscribed webhook, written with the e-mails' rows.
  const subscriptions = subscriptionsCache(app.changeFeed)
  const listener: EventListener = async (trx, event) => deliveryRows((await subscriptions(trx)).get(event.type) ?? [], event)
  listener.takes = async (trx, type) => ((await subscriptions(trx)).get(type)?.length ?? 0) > 0
  outbox.onEvent(listener)
}
