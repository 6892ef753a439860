import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely, Transaction } from 'kysely'
import type { Config } from '../../config.js'
import type { Dialect } from '../../db/connect.js'
import type { Database } from '../../db/database.js'
import { emailNotifications } from './notifications.js'
import { insertOutboxRows, type OutboxInsert } from './outbox.js'
import * as repo from './outbox.repository.js'
import { createSendThread, type SendThread } from './send-thread.js'

/** Where a message goes: an e-mail (src/modules/outbox/mail) or a webhook endpoint (src/modules/webhooks). */
export type Channel = 'email' | 'webhook'

/** One outbox row as a channel sees it. `attempts` counts the attempts made before this one. */
export interface OutboxMessage {
  id: string
  channel: Channel
  webhookId: number | null
  event: string | null
  /** The row's JSON, parsed: an e-mail's {template, to, data}; a webhook delivery's body. */
  payload: unknown
  attempts: number
  createdAt: string
}

/** What a channel says of one attempt. `permanent` failures are not retried (a receiver that can never accept it). */
export type DeliveryOutcome = { ok: true; statusCode?: number } | { ok: false; error: string; statusCode?: number; permanent?: boolean }

/** Delivers one message; must give up when `signal` aborts (the delivery's timeout, or the app closing). */
export type Deliver = (message: OutboxMessage, signal: AbortSignal) => Promise<DeliveryOutcome>

/** The shop's events (docs/email.md); `data` is the resource as the API returns it, `{id}` for product.deleted. */
export const SHOP_EVENT_TYPES = [
  'order.created',
  'order.paid',
  'order.status_changed',
  'order.cancelled',
  'product.created',
  'product.updated',
  'product.deleted',
  'stock.low',
] as const
export type ShopEventType = (typeof SHOP_EVENT_TYPES)[number]

export interface ShopEvent {
  type: ShopEventType
  data: unknown
}

/**
 * Called inside the transaction of the change; returns the outbox rows the event calls for (e-mails, webhook
 * deliveries). The rows of every listener are written together, in one statement of that transaction, so that
 * they commit or roll back with the change.
 */
export type EventListener = (trx: Transaction<Database>, event: ShopEvent) => Promise<readonly OutboxInsert[]>

/** When a failed delivery is tried again: `firstDelayMs × factor^(n−1)` after the n-th failure, capped, ± jitter. */
export interface RetrySchedule {
  firstDelayMs: number
  factor: number
  maxDelayMs: number
  /** A message still undelivered this long after its creation is `failed`. */
  giveUpAfterMs: number
  /** 0.25: each delay is drawn between 75 % and 125 % of its nominal value. */
  jitter: number
}

export interface DispatcherOptions {
  /** Off: nothing is delivered (rows stay pending); events are still written. */
  enabled: boolean
  /** The safety net: due rows are looked for this often even when nothing woke the dispatcher. */
  pollMs: number
  /** A claimed row is this instance's until then; after it (a crashed instance), anyone takes it again. At least twice `timeoutMs`. */
  leaseMs: number
  /** One delivery's bound. */
  timeoutMs: number
  /** Deliveries in flight at once, per instance. */
  concurrency: number
  /** On app.close(), in-flight deliveries are awaited this long, then aborted (their rows' leases run out). */
  closeTimeoutMs: number
  retry: RetrySchedule
}

export const defaultRetrySchedule: RetrySchedule = {
  // 22.5–37.5 s, then 1.5–2.5 min, 6–10 min, 24–40 min, 1.6–2.7 h, then every 3–5 h until 24 h have passed.
  firstDelayMs: 30_000,
  factor: 4,
  maxDelayMs: 4 * 3_600_000,
  giveUpAfterMs: 24 * 3_600_000,
  jitter: 0.25,
}

export const defaultDispatcherOptions: DispatcherOptions = {
  enabled: true,
  pollMs: 1000,
  leaseMs: 60_000,
  timeoutMs: 15_000,
  concurrency: 8,
  closeTimeoutMs: 5000,
  retry: defaultRetrySchedule,
}

/** When the next attempt is due after the `failures`-th failure of a message created at `createdAt`; null: give up. */
export function nextAttemptAt(schedule: RetrySchedule, failures: number, createdAt: string, now: number, random = Math.random): string | null {
  const deadline = Date.parse(createdAt) + schedule.giveUpAfterMs
  if (now >= deadline) return null
  const nominal = Math.min(schedule.maxDelayMs, schedule.firstDelayMs * schedule.factor ** Math.max(0, failures - 1))
  const delay = nominal * (1 - schedule.jitter + 2 * schedule.jitter * random())
  // The last attempt is made at the deadline itself, not skipped.
  return new Date(Math.min(deadline, now + Math.max(0, Math.round(delay)))).toISOString()
}

/** The outbox of one app: its channels, its event listeners, and the loop that delivers due rows. */
export interface Outbox {
  /** The channel's deliver function; rows of a channel nobody registered stay pending. */
  registerChannel(channel: Channel, deliver: Deliver): void
  /** Called for every event, inside the change's transaction (emitEvent). */
  onEvent(listener: EventListener): void
  /** Looks for due rows now (call it after the commit of a transaction that queued something). */
  wake(): void
  /** Tests and the CLI: delivers until nothing is due and nothing is in flight; resolves with the attempts made. */
  drain(): Promise<number>
  readonly options: DispatcherOptions
  /** The thread that sends e-mails and webhook deliveries (the channels hand it their jobs). */
  readonly sender: SendThread
}

declare module 'fastify' {
  interface FastifyInstance {
    outbox: Outbox
  }
}

/** The outbox of each open database, so that services reach it through the `db` they are given (as payments do). */
const registry = new WeakMap<object, OutboxDispatcher>()

/**
 * Emits a shop event inside the transaction of the change: every listener (the e-mails, the webhooks) writes its
 * outbox rows in `trx`. `db` names the app (several apps share one process in the tests); without an outbox
 * attached to it, nothing happens.
 */
export async function emitEvent(db: Kysely<Database>, trx: Transaction<Database>, event: ShopEvent): Promise<void> {
  const outbox = registry.get(db)
  if (!outbox) return
  const rows: OutboxInsert[] = []
  for (const listener of outbox.listeners) rows.push(...(await listener(trx, event)))
  await insertOutboxRows(trx, rows)
  // On SQLite the claim waits for the one connection, so it runs right after this transaction; on PostgreSQL
  // the request's onResponse hook (after the commit) wakes it again, and the poll is the safety net.
  outbox.wake()
}

/**
 * stock.low, by its rule: emitted when a change took a product's stock from above LOW_STOCK_THRESHOLD to at or
 * below it (so once per fall; again only after it went back above). `product` is the product as the API returns it.
 */
export async function emitStockChange(db: Kysely<Database>, trx: Transaction<Database>, product: { stock: number }, stockBefore: number): Promise<void> {
  const outbox = registry.get(db)
  if (!outbox) return
  const threshold = outbox.lowStockThreshold
  if (stockBefore > threshold && product.stock <= threshold) await emitEvent(db, trx, { type: 'stock.low', data: product })
}

/** Looks up the outbox of a database (for code that holds only `db`). */
export function outboxOf(db: Kysely<Database>): Outbox | undefined {
  return registry.get(db)
}

class OutboxDispatcher implements Outbox {
  readonly listeners: EventListener[] = []
  private readonly channels = new Map<Channel, Deliver>()
  private readonly inFlight = new Set<Promise<void>>()
  private readonly closing = new AbortController()
  private pumping = false
  private again = false
  private wakeScheduled = false
  /** Delivered rows not yet recorded, and the one write that will record them (markDelivered). */
  private deliveredRows: { id: string; statusCode: number | null }[] = []
  private recording: Promise<void> | undefined
  private closed = false
  private poll: NodeJS.Timeout | undefined
  private reportedClaimFailure = false
  attempts = 0

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly log: FastifyBaseLogger,
    readonly options: DispatcherOptions,
    readonly lowStockThreshold: number,
    readonly sender: SendThread,
  ) {}

  registerChannel(channel: Channel, deliver: Deliver): void {
    this.channels.set(channel, deliver)
    this.wake()
  }

  onEvent(listener: EventListener): void {
    this.listeners.push(listener)
  }

  start(): void {
    if (!this.options.enabled) return
    const tick = () => {
      this.wake()
      this.poll = setTimeout(tick, this.options.pollMs)
      this.poll.unref()
    }
    this.poll = setTimeout(tick, 0)
    this.poll.unref()
  }

  /**
   * Claims due rows soon: once per turn of the event loop however many times it is called in it, and only while at
   * least half the delivery slots are free (the deliveries in flight wake it as they end), so that a busy shop
   * claims its rows in batches rather than one statement per row.
   */
  wake(): void {
    if (this.closed || !this.options.enabled) return
    if (this.pumping) {
      this.again = true
      return
    }
    if (this.wakeScheduled || this.inFlight.size > this.options.concurrency / 2) return
    this.wakeScheduled = true
    setImmediate(() => {
      this.wakeScheduled = false
      void this.pump()
    })
  }

  async drain(): Promise<number> {
    const before = this.attempts
    for (;;) {
      while (this.pumping || this.inFlight.size > 0) {
        if (this.pumping) await new Promise((resolve) => setTimeout(resolve, 5))
        else await Promise.race(this.inFlight)
      }
      const claimed = await this.pump()
      if (claimed === 0 && this.inFlight.size === 0 && !this.pumping) return this.attempts - before
    }
  }

  /** Claims what fits in the free slots and starts delivering it; again while rows keep coming and slots are free. */
  private async pump(): Promise<number> {
    if (this.pumping || this.closed) return 0
    this.pumping = true
    let total = 0
    try {
      do {
        this.again = false
        const free = this.options.concurrency - this.inFlight.size
        const channels = [...this.channels.keys()]
        if (free <= 0 || channels.length === 0) break
        let rows: repo.OutboxRow[]
        try {
          rows = await repo.claimDue(this.db, this.dialect, { channels, limit: free, now: Date.now(), leaseMs: this.options.leaseMs })
          if (this.reportedClaimFailure) {
            this.reportedClaimFailure = false
            this.log.info('outbox: claiming works again')
          }
        } catch (error) {
          if (!this.reportedClaimFailure) {
            this.reportedClaimFailure = true
            this.log.warn({ err: error }, 'outbox: could not claim due messages; trying again at the next poll')
          }
          break
        }
        total += rows.length
        if (rows.length > 0) this.log.debug({ outboxIds: rows.map((row) => row.id) }, 'outbox: claimed')
        for (const row of rows) this.track(this.deliver(row))
        if (rows.length === free) this.again = true
      } while (this.again && !this.closed)
    } finally {
      this.pumping = false
    }
    return total
  }

  private track(delivery: Promise<void>): void {
    this.inFlight.add(delivery)
    void delivery.finally(() => {
      this.inFlight.delete(delivery)
      // Slots are free: whatever else is due goes now rather than at the next poll.
      if (!this.closed) this.wake()
    })
  }

  private async deliver(row: repo.OutboxRow): Promise<void> {
    const deliver = this.channels.get(row.channel)
    if (!deliver) return
    const message: OutboxMessage = {
      id: row.id,
      channel: row.channel,
      webhookId: row.webhook_id,
      event: row.event,
      payload: JSON.parse(row.payload) as unknown,
      attempts: row.attempts,
      createdAt: row.created_at,
    }
    const outcome = await this.attempt(deliver, message)
    this.attempts += 1
    const now = Date.now()
    try {
      if (outcome.ok) {
        this.log.debug({ outboxId: row.id }, 'outbox: delivered')
        await this.recordDelivered(row.id, outcome.statusCode ?? null)
        return
      }
      const next = outcome.permanent ? null : nextAttemptAt(this.options.retry, row.attempts + 1, row.created_at, now)
      await repo.markFailedAttempt(this.db, row.id, {
        attempts: row.attempts + 1,
        statusCode: outcome.statusCode ?? null,
        error: outcome.error.slice(0, 1000),
        nextAttemptAt: next,
      })
      const context = { outboxId: row.id, channel: row.channel, attempts: row.attempts + 1, error: outcome.error, statusCode: outcome.statusCode }
      if (next === null) this.log.error(context, 'outbox: delivery failed for good')
      else this.log.warn({ ...context, nextAttemptAt: next }, 'outbox: delivery failed; will retry')
    } catch (error) {
      // The row keeps its lease; once it runs out, the message is delivered again (at least once).
      this.log.warn({ err: error, outboxId: row.id }, 'outbox: could not record a delivery attempt')
    }
  }

  /**
   * Records a delivery, together with the others that end in the same turn of the event loop: one UPDATE per
   * status code instead of one per row. Resolves once it is written.
   */
  private recordDelivered(id: string, statusCode: number | null): Promise<void> {
    this.deliveredRows.push({ id, statusCode })
    this.recording ??= new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      const rows = this.deliveredRows
      this.deliveredRows = []
      this.recording = undefined
      const at = new Date().toISOString()
      for (const statusCode of new Set(rows.map((row) => row.statusCode))) {
        const ids = rows.filter((row) => row.statusCode === statusCode).map((row) => row.id)
        await repo.markDelivered(this.db, ids, { statusCode, at })
      }
    })
    return this.recording
  }

  /** One bounded attempt: the channel's answer, its error, or the timeout, whichever comes first. */
  private async attempt(deliver: Deliver, message: OutboxMessage): Promise<DeliveryOutcome> {
    const signal = AbortSignal.any([AbortSignal.timeout(this.options.timeoutMs), this.closing.signal])
    let onAbort: (() => void) | undefined
    const aborted = new Promise<DeliveryOutcome>((resolve) => {
      onAbort = () => resolve({ ok: false, error: this.closing.signal.aborted ? 'the service was closing' : `no answer within ${this.options.timeoutMs} ms` })
      signal.addEventListener('abort', onAbort, { once: true })
    })
    try {
      return await Promise.race([
        deliver(message, signal).catch((error: unknown): DeliveryOutcome => ({ ok: false, error: error instanceof Error ? error.message : String(error) })),
        aborted,
      ])
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort)
    }
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.poll)
    while (this.pumping) await new Promise((resolve) => setTimeout(resolve, 5))
    if (this.inFlight.size === 0) return
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.options.closeTimeoutMs)
    })
    await Promise.race([Promise.allSettled([...this.inFlight]), bound])
    clearTimeout(timer)
    if (this.inFlight.size > 0) {
      this.log.warn({ inFlight: this.inFlight.size }, 'outbox: closing with deliveries in flight; they are made again once their lease runs out')
      this.closing.abort()
      await Promise.allSettled([...this.inFlight])
    }
  }
}

export interface OutboxPluginOptions {
  config: Config
  options?: Partial<Omit<DispatcherOptions, 'retry'>> & { retry?: Partial<RetrySchedule> }
}

/**
 * The dispatcher: delivers the outbox's due rows after commit, at least once, off the request path. Woken after
 * each write request (onResponse) and by emitEvent, and polls as a safety net. Several instances on one
 * PostgreSQL share the work: each claims rows with FOR UPDATE SKIP LOCKED and holds them for a lease.
 */
async function outboxPlugin(app: FastifyInstance, pluginOptions: OutboxPluginOptions): Promise<void> {
  const given = pluginOptions.options ?? {}
  const merged: DispatcherOptions = { ...defaultDispatcherOptions, ...given, retry: { ...defaultRetrySchedule, ...given.retry } }
  // A delivery ends (its timeout) well within its row's lease: a row is never taken again while its attempt may go on.
  const options = { ...merged, timeoutMs: Math.min(merged.timeoutMs, Math.floor(merged.leaseMs / 2)) }
  const { config } = pluginOptions
  const sender = createSendThread({
    mail: {
      smtpUrl: config.mail.smtpUrl,
      from: config.mail.from,
      timeoutMs: config.mail.timeoutMs,
      dataDir: config.dataDir,
      currency: config.payments.currency,
      publicUrl: config.publicUrl,
    },
  })
  const dispatcher = new OutboxDispatcher(app.db, app.dialect, app.log, options, config.lowStockThreshold, sender)
  registry.set(app.db, dispatcher)
  app.decorate('outbox', dispatcher as Outbox)
  dispatcher.registerChannel('email', async (message, signal) => {
    const { outcome, sent } = await sender.run({ kind: 'email', mail: { id: message.id, payload: message.payload, createdAt: message.createdAt } }, signal)
    // Recipient and subject only, never the body: a password reset's link is a credential.
    if (sent?.file) app.log.info({ to: sent.to, subject: sent.subject, file: sent.file }, 'e-mail written as a file (no SMTP_URL)')
    else if (sent) app.log.debug({ to: sent.to, subject: sent.subject }, 'e-mail sent')
    return outcome
  })
  dispatcher.onEvent(emailNotifications(pluginOptions.config))
  // A write request's transaction has committed by the time it answers: what it queued goes now.
  app.addHook('onResponse', async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') dispatcher.wake()
  })
  app.addHook('onReady', async () => dispatcher.start())
  app.addHook('onClose', async () => {
    await dispatcher.close()
    await sender.close()
    registry.delete(app.db)
  })
}

export default fp(outboxPlugin, { name: 'outbox', dependencies: ['database'] })
