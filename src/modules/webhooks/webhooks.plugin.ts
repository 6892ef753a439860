import type { FastifyInstance } from 'fastify'
import type { Kysely, Transaction } from 'kysely'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import type { AddressLookup } from './webhook-address.js'
import type { DeliveryOutcome } from './webhook-delivery.js'
import { webhooksRoutes } from './webhooks.routes.js'
import { type DeliveryOptions, deliverWebhook, enqueueWebhookDeliveries, type ShopEvent, type WebhookMessage } from './webhooks.service.js'

/** The part of the outbox (src/modules/outbox) webhooks use: a channel to deliver, and the shop's events. */
interface OutboxSeam {
  registerChannel(channel: 'webhook', deliver: (message: WebhookMessage, signal: AbortSignal) => Promise<DeliveryOutcome>): void
  onEvent(listener: (trx: Transaction<Database> | Kysely<Database>, event: ShopEvent) => Promise<void>): void
  wake?: () => void
}

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
  const outbox = (app as unknown as { outbox?: OutboxSeam }).outbox
  await app.register(webhooksRoutes, { config: options.config, policy, ...(outbox?.wake ? { onRequeue: outbox.wake } : {}) })
  if (!outbox) return
  const deliveryOptions: DeliveryOptions = {
    ...policy,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.maxResponseBytes === undefined ? {} : { maxResponseBytes: options.maxResponseBytes }),
  }
  outbox.registerChannel('webhook', (message, signal) => deliverWebhook(app.db, message, signal, deliveryOptions))
  outbox.onEvent(async (trx, event) => {
    await enqueueWebhookDeliveries(trx, event)
  })
}
