import { randomBytes } from 'node:crypto'
import { timeOrderedId } from '../../shared/ids.js'
import type { Kysely, Transaction, Updateable } from 'kysely'
import type { Database, WebhookRow, WebhooksTable } from '../../db/database.js'
import { insertOutboxRows, type OutboxInsert } from '../outbox/outbox.js'
import type { ChangeFeed } from '../../plugins/change-feed.js'
import { AppError, messages } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { type AddressLookup, checkWebhookHost, parseWebhookUrl } from './webhook-address.js'
import { type DeliveryOutcome, sendWebhook } from './webhook-delivery.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'
import * as repo from './webhooks.repository.js'
import type { CreatedWebhook, CreateWebhookInput, Delivery, ListDeliveriesQuery, UpdateWebhookInput, Webhook } from './webhooks.schemas.js'

type Db = Kysely<Database>

/** What the webhook rules depend on: WEBHOOKS_ALLOW_PRIVATE, and a resolver tests may replace. */
export interface WebhookPolicy {
  allowPrivate: boolean
  lookup?: AddressLookup
}

export function webhookRowToWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    description: row.description,
    active: row.active === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

export function deliveryRowToDelivery(row: repo.DeliveryRow): Delivery {
  return {
    id: row.id,
    event: row.event ?? '',
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    nextAttemptAt: row.status === 'pending' ? row.next_attempt_at : null,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
  }
}

/** Standard Webhooks' secret: `whsec_` + base64 of 32 random bytes. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/**
 * A URL's rules: its shape (422 with the rule), then, unless private addresses are allowed, its host's
 * addresses (422 `La URL del webhook no está permitida`). A name that does not exist is a 422 too; a DNS that
 * does not answer in time is a 503 (the URL may well be right: try again).
 */
async function checkUrl(raw: string, policy: WebhookPolicy): Promise<void> {
  const url = parseWebhookUrl(raw)
  // Allowed private addresses (tests, an internal network): nothing to check, so nothing is resolved either.
  if (policy.allowPrivate) return
  const host = await checkWebhookHost(url, { allowPrivate: false, ...(policy.lookup ? { lookup: policy.lookup } : {}) })
  if (host.ok) return
  if (host.reason === 'not-allowed') throw new ValidationError(messages.webhookUrlNotAllowed, 'url')
  if (host.reason === 'not-found') throw new ValidationError(messages.webhookHostNotFound, 'url')
  throw new AppError(503, 'webhookDnsUnavailable')
}

/** Events in the order given, each once. */
function uniqueEvents(events: readonly string[]): string[] {
  return [...new Set(events)]
}

export async function listWebhooks(db: Db): Promise<Webhook[]> {
  return (await repo.listWebhooks(db)).map(webhookRowToWebhook)
}

export async function getWebhook(db: Db, id: number): Promise<Webhook> {
  const row = await repo.findWebhook(db, id)
  if (!row) throw new AppError(404, 'webhookNotFound')
  return webhookRowToWebhook(row)
}

export async function createWebhook(db: Db, input: CreateWebhookInput, policy: WebhookPolicy, audit: AuditSource): Promise<CreatedWebhook> {
  await checkUrl(input.url, policy)
  const now = nowIso()
  return db.transaction().execute(async (trx) => {
    const row = await repo.insertWebhook(trx, {
      url: input.url,
      events: JSON.stringify(uniqueEvents(input.events)),
      description: input.description ?? '',
      active: 1,
      secret: newSecret(),
      created_at: now,
      updated_at: now,
    })
    const created = { ...webhookRowToWebhook(row), secret: row.secret }
    // The secret reads "[REDACTED]" in the log (its key names a secret).
    await recordAudit(trx, { by: audit, action: 'webhook.create', entityType: 'webhook', entityId: created.id, before: null, after: created })
    return created
  })
}

export async function updateWebhook(db: Db, id: number, input: UpdateWebhookInput, policy: WebhookPolicy, audit: AuditSource): Promise<Webhook> {
  // Fields first (422), then the id (404): the URL's shape before its address, which may need the network.
  if (input.url !== undefined) parseWebhookUrl(input.url)
  if (!(await repo.findWebhook(db, id))) throw new AppError(404, 'webhookNotFound')
  if (input.url !== undefined) await checkUrl(input.url, policy)
  const changes: Updateable<WebhooksTable> = { updated_at: nowIso() }
  if (input.url !== undefined) changes.url = input.url
  if (input.events !== undefined) changes.events = JSON.stringify(uniqueEvents(input.events))
  if (input.description !== undefined) changes.description = input.description
  if (input.active !== undefined) changes.active = input.active ? 1 : 0
  return db.transaction().execute(async (trx) => {
    const before = await repo.findWebhook(trx, id)
    const row = await repo.updateWebhook(trx, id, changes)
    if (!before || !row) throw new AppError(404, 'webhookNotFound')
    const webhook = webhookRowToWebhook(row)
    await recordAudit(trx, { by: audit, action: 'webhook.update', entityType: 'webhook', entityId: id, before: webhookRowToWebhook(before), after: webhook })
    return webhook
  })
}

/** The webhook goes, with its deliveries: pending ones are not attempted again. */
export async function deleteWebhook(db: Db, id: number, audit: AuditSource): Promise<{ message: string }> {
  await db.transaction().execute(async (trx) => {
    const before = await repo.findWebhook(trx, id)
    if (!before || !(await repo.deleteWebhook(trx, id))) throw new AppError(404, 'webhookNotFound')
    await recordAudit(trx, { by: audit, action: 'webhook.delete', entityType: 'webhook', entityId: id, before: webhookRowToWebhook(before), after: null })
  })
  return { message: messages.webhookDeleted }
}

export async function listDeliveries(db: Db, id: number, query: ListDeliveriesQuery): Promise<{ deliveries: Delivery[]; total: number }> {
  if (!(await repo.findWebhook(db, id))) throw new AppError(404, 'webhookNotFound')
  const { rows, total } = await repo.listDeliveries(db, id, { limit: query.limit ?? 100, offset: query.offset ?? 0, status: query.status })
  return { deliveries: rows.map(deliveryRowToDelivery), total }
}

/**
 * Queues a delivery again, due now, with the same id and body (whatever its status: a delivered one is sent
 * again too). A webhook that is not active delivers nothing: 409.
 */
export async function retryDelivery(db: Db, id: number, deliveryId: string, audit: AuditSource): Promise<Delivery> {
  const webhook = await repo.findWebhook(db, id)
  if (!webhook) throw new AppError(404, 'webhookNotFound')
  if (!(await repo.findDelivery(db, id, deliveryId))) throw new AppError(404, 'webhookDeliveryNotFound')
  if (webhook.active !== 1) throw new AppError(409, 'webhookInactive')
  return db.transaction().execute(async (trx) => {
    const before = await repo.findDelivery(trx, id, deliveryId)
    const row = await repo.requeueDelivery(trx, id, deliveryId, nowIso())
    // Deleted in between (with its webhook).
    if (!before || !row) throw new AppError(404, 'webhookDeliveryNotFound')
    const delivery = deliveryRowToDelivery(row)
    const change = { before: deliveryRowToDelivery(before), after: delivery }
    await recordAudit(trx, { by: audit, action: 'webhook_delivery.retry', entityType: 'webhook_delivery', entityId: deliveryId, ...change })
    return delivery
  })
}

/** An event of the shop, as the outbox hands it to its listeners. */
export interface ShopEvent {
  type: string
  data: unknown
}

/** The ids of the active webhooks subscribed to each event type. */
export type Subscriptions = ReadonlyMap<string, readonly number[]>

export async function loadSubscriptions(db: Transaction<Database> | Db): Promise<Subscriptions> {
  const byEvent = new Map<string, number[]>()
  for (const row of await repo.listActiveWebhooks(db)) {
    for (const type of JSON.parse(row.events) as string[]) byEvent.set(type, [...(byEvent.get(type) ?? []), row.id])
  }
  return byEvent
}

/**
 * The subscriptions, kept in memory between changes: every event of the shop needs them, inside its transaction,
 * and they change rarely. Emptied through the change feed's `webhooks` topic (a webhook created, changed, deleted
 * or deactivated by a 410, on any instance); read from the database while the feed is not live. A list read while
 * a change was being published is used once and not kept.
 */
export function subscriptionsCache(feed: ChangeFeed): (db: Transaction<Database> | Db) => Promise<Subscriptions> {
  let cached: Subscriptions | undefined
  let generation = 0
  feed.subscribe('webhooks', () => {
    generation += 1
    cached = undefined
  })
  return async (db) => {
    if (!feed.live) return loadSubscriptions(db)
    if (cached) return cached
    const started = generation
    const loaded = await loadSubscriptions(db)
    if (started === generation) cached = loaded
    return loaded
  }
}

/** One delivery row per webhook, for the outbox. */
export function deliveryRows(webhookIds: readonly number[], event: ShopEvent, now = nowIso()): OutboxInsert[] {
  return webhookIds.map((webhookId) => {
    const id = timeOrderedId()
    return {
      id,
      channel: 'webhook',
      webhook_id: webhookId,
      event: event.type,
      // The body, exactly as each attempt sends it: `id` is the `webhook-id` header, `timestamp` the event's instant.
      payload: JSON.stringify({ id, type: event.type, timestamp: now, data: event.data }),
      status: 'pending',
      next_attempt_at: now,
      created_at: now,
    }
  })
}

/**
 * Queues one delivery per active webhook subscribed to `event.type`, in the caller's transaction (the
 * change that caused the event): the delivery exists if and only if the change does. Returns how many.
 */
export async function enqueueWebhookDeliveries(trx: Transaction<Database> | Db, event: ShopEvent): Promise<number> {
  const rows = deliveryRows((await loadSubscriptions(trx)).get(event.type) ?? [], event)
  await insertOutboxRows(trx, rows)
  return rows.length
}

/** A delivery as the outbox dispatcher hands it over. */
export interface WebhookMessage {
  id: string
  webhookId: number | null
  /** The stored body: the text itself, or its parsed JSON (written back as the same text). */
  payload: unknown
}

export interface DeliveryOptions extends WebhookPolicy {
  timeoutMs?: number
  maxResponseBytes?: number
}

/**
 * The webhook channel: one attempt of one delivery, to the webhook's URL as it is now, signed with its secret.
 * A deleted or deactivated webhook fails the delivery for good. A 410 Gone from the receiver deactivates the
 * webhook (Standard Webhooks' advice): the endpoint says it will never take anything again.
 */
export async function deliverWebhook(
  db: Db,
  message: WebhookMessage,
  signal: AbortSignal,
  options: DeliveryOptions,
  send: typeof sendWebhook = sendWebhook,
): Promise<DeliveryOutcome> {
  const webhook = message.webhookId === null ? undefined : await repo.findWebhook(db, message.webhookId)
  if (!webhook) return { ok: false, error: messages.webhookNotFound, permanent: true }
  if (webhook.active !== 1) return { ok: false, error: messages.webhookInactive, permanent: true }
  const body = typeof message.payload === 'string' ? message.payload : JSON.stringify(message.payload)
  const outcome = await send({ url: webhook.url, secret: webhook.secret }, { id: message.id, body }, { ...options, signal })
  if (!outcome.ok && outcome.statusCode === 410) {
    await repo.updateWebhook(db, webhook.id, { active: 0, updated_at: nowIso() })
    return { ...outcome, error: `${outcome.error} (410 Gone: the webhook was deactivated)`, permanent: true }
  }
  return outcome
}
