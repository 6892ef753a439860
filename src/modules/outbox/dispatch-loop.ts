import type { FastifyBaseLogger } from 'fastify'
import type { Kysely, Transaction } from 'kysely'
import type { Dialect } from '../../db/connect.js'
import type { Database } from '../../db/database.js'
import type { EventSink } from '../../shared/event-sink.js'
import type { Channel, Deliver, DeliveryOutcome, OutboxMessage } from './channels.js'
import type { EventListener, ShopEvent, ShopEventType } from './events.js'
import { insertOutboxRows, type OutboxInsert } from './outbox.js'
import * as repo from './outbox.repository.js'
import { defaultRetrySchedule, nextAttemptAt, type RetrySchedule } from './retry.js'
import type { SendThread } from './send-thread.js'

// The dispatcher: claims due outbox rows, each lane within its slots, and hands them to their channels, off the
// request path; and the event sink services emit into (emit, stockChanged), handed to them by app.ts. Other
// modules import all of it from dispatcher.ts, the module's entry.

export interface DispatcherOptions {
  /** Off: nothing is delivered (rows stay pending); events are still written. */
  enabled: boolean
  /** The safety net: due rows are looked for this often even when nothing woke the dispatcher. */
  pollMs: number
  /** A claimed row is this instance's until then; after it (a crashed instance), anyone takes it again. At least twice `timeoutMs`. */
  leaseMs: number
  /** One delivery's bound. */
  timeoutMs: number
  /**
   * Deliveries in flight at once per instance, for each channel: each channel has slots of its own (its lane), so
   * that a slow webhook receiver never holds an e-mail back, nor a slow SMTP server a webhook.
   */
  concurrency: Record<Channel, number>
  /**
   * Webhook deliveries in flight at once to one endpoint, per instance: a receiver that is slow or never answers
   * holds at most this many of the webhook lane's slots, and the other endpoints share the rest.
   */
  perEndpoint: number
  /** On app.close(), in-flight deliveries are awaited this long, then aborted (their rows' leases run out). */
  closeTimeoutMs: number
  retry: RetrySchedule
}

export const defaultDispatcherOptions: DispatcherOptions = {
  enabled: true,
  pollMs: 1000,
  leaseMs: 60_000,
  timeoutMs: 15_000,
  concurrency: { email: 8, webhook: 8 },
  perEndpoint: 2,
  closeTimeoutMs: 5000,
  retry: defaultRetrySchedule,
}

/** Options to change (tests): any of them, the retry schedule's and the lanes' one by one. */
export type DispatcherOverrides = Partial<Omit<DispatcherOptions, 'retry' | 'concurrency'>> & {
  retry?: Partial<RetrySchedule>
  concurrency?: Partial<Record<Channel, number>>
}

/** The options given, over the defaults; a delivery ends (its timeout) well within its row's lease. */
export function dispatcherOptions(given: DispatcherOverrides = {}): DispatcherOptions {
  const merged: DispatcherOptions = {
    ...defaultDispatcherOptions,
    ...given,
    concurrency: { ...defaultDispatcherOptions.concurrency, ...given.concurrency },
    retry: { ...defaultRetrySchedule, ...given.retry },
  }
  // A row is never taken again while its attempt may go on.
  return { ...merged, timeoutMs: Math.min(merged.timeoutMs, Math.floor(merged.leaseMs / 2)) }
}

/**
 * The outbox of one app: its channels, its event listeners, and the loop that delivers due rows. It is the app's
 * event sink (src/shared/event-sink.ts): app.ts hands it to the modules that emit, which never look it up.
 */
export interface Outbox extends EventSink {
  /** The channel's deliver function; rows of a channel nobody registered stay pending. */
  registerChannel(channel: Channel, deliver: Deliver): void
  /** Called for every event, inside the change's transaction (emit). */
  onEvent(listener: EventListener): void
  /** Looks for due rows now (call it after the commit of a transaction that queued something). */
  wake(): void
  /** Tests and the CLI: delivers until nothing is due and nothing is in flight; resolves with the attempts made. */
  drain(): Promise<number>
  readonly options: DispatcherOptions
  /** The claims this dispatcher has made (queries for due rows), for tests: a write that queued nothing makes none. */
  readonly claimsMade: number
  /** The thread that sends e-mails and webhook deliveries (the channels hand it their jobs). */
  readonly sender: SendThread
}

export class OutboxDispatcher implements Outbox {
  readonly listeners: EventListener[] = []
  private readonly channels = new Map<Channel, Deliver>()
  private readonly inFlight = new Set<Promise<void>>()
  /** Deliveries in flight, per channel (its lane's slots taken) and per webhook endpoint. */
  private readonly lanes: Record<Channel, number> = { email: 0, webhook: 0 }
  private readonly endpoints = new Map<number, number>()
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
  claimsMade = 0

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

  /**
   * Emits a shop event inside the transaction of the change: every listener (the e-mails, the webhooks) writes
   * its outbox rows in `trx`.
   */
  async emit(trx: Transaction<Database>, event: ShopEvent): Promise<void> {
    const rows: OutboxInsert[] = []
    for (const listener of this.listeners) rows.push(...(await listener(trx, event)))
    await this.queue(trx, rows)
  }

  async emitLoaded(trx: Transaction<Database>, type: ShopEventType, load: () => Promise<unknown>): Promise<void> {
    const rows: OutboxInsert[] = []
    let event: ShopEvent | undefined
    for (const listener of this.listeners) {
      if (listener.takes && !(await listener.takes(trx, type))) continue
      event ??= { type, data: await load() }
      rows.push(...(await listener(trx, event)))
    }
    await this.queue(trx, rows)
  }

  private async queue(trx: Transaction<Database>, rows: readonly OutboxInsert[]): Promise<void> {
    if (rows.length === 0) return
    await insertOutboxRows(trx, rows)
    // On SQLite the claim waits for the one connection, so it runs right after this transaction; on PostgreSQL
    // the request's onResponse hook (after the commit) wakes it again, and the poll is the safety net.
    this.wake()
  }

  /**
   * stock.low, by its rule: emitted when a change took a product's stock from above LOW_STOCK_THRESHOLD to at or
   * below it (so once per fall; again only after it went back above). `product` is the product as the API shows it.
   */
  async stockChanged(trx: Transaction<Database>, product: { stock: number }, stockBefore: number, load?: () => Promise<unknown>): Promise<void> {
    if (stockBefore > this.lowStockThreshold && product.stock <= this.lowStockThreshold) {
      await this.emit(trx, { type: 'stock.low', data: load ? await load() : product })
    }
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
   * least half the slots of a lane are free (the deliveries in flight wake it as they end), so that a busy shop
   * claims its rows in batches rather than one statement per row.
   */
  wake(): void {
    if (this.closed || !this.options.enabled) return
    if (this.pumping) {
      this.again = true
      return
    }
    if (this.wakeScheduled || !this.wantsRows()) return
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

  /**
   * Whether a lane is claimed for: when at least half its slots are free, so that rows are claimed in batches (and a
   * lane with a slot or two free does not ride along on the other's claims: passing over the rows of webhook
   * endpoints at their cap is the one costly part of a claim).
   */
  private laneWants(channel: Channel): boolean {
    const slots = this.options.concurrency[channel]
    return slots - this.lanes[channel] >= slots / 2
  }

  private wantsRows(): boolean {
    return [...this.channels.keys()].some((channel) => this.laneWants(channel))
  }

  /** The endpoints at their cap here. */
  private fullEndpoints(): number[] {
    return [...this.endpoints].filter(([, count]) => count >= this.options.perEndpoint).map(([id]) => id)
  }

  /** What each lane that wants rows may claim: its free slots; the webhook lane within its endpoints' caps. */
  private claims(): repo.LaneClaim[] {
    const claims: repo.LaneClaim[] = []
    for (const channel of this.channels.keys()) {
      if (!this.laneWants(channel)) continue
      const limit = this.options.concurrency[channel] - this.lanes[channel]
      if (channel === 'webhook') claims.push({ channel, limit, perEndpoint: { cap: this.options.perEndpoint, inFlight: this.endpoints } })
      else claims.push({ channel, limit })
    }
    return claims
  }

  /**
   * Claims what fits in the free slots of each lane and starts delivering it; again while rows keep coming and slots
   * are free, or while a claim filled an endpoint to its cap (rows of others may be behind its).
   */
  private async pump(): Promise<number> {
    if (this.pumping || this.closed) return 0
    this.pumping = true
    let total = 0
    try {
      do {
        this.again = false
        const now = Date.now()
        const claims = this.claims()
        if (claims.length === 0) break
        const fullBefore = this.fullEndpoints().length
        let rows: repo.OutboxRow[]
        this.claimsMade += 1
        try {
          rows = await repo.claimDue(this.db, this.dialect, { lanes: claims, now, leaseMs: this.options.leaseMs })
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
        for (const row of rows) this.track(row)
        for (const claim of claims) {
          // Rows may be left: the lane filled up, or (webhooks) an endpoint did, and the rows of others may lie
          // behind its, which a claim passing over it will find.
          const taken = rows.filter((row) => row.channel === claim.channel).length
          if (taken === claim.limit || (claim.perEndpoint && this.fullEndpoints().length > fullBefore)) this.again = true
        }
      } while (this.again && !this.closed)
    } finally {
      this.pumping = false
    }
    return total
  }

  /** Starts a claimed row's delivery in its lane's slot (and its endpoint's), freed when it ends. */
  private track(row: repo.OutboxRow): void {
    const endpoint = row.channel === 'webhook' ? row.webhook_id : null
    this.lanes[row.channel] += 1
    if (endpoint !== null) this.endpoints.set(endpoint, (this.endpoints.get(endpoint) ?? 0) + 1)
    const delivery = this.deliver(row)
    this.inFlight.add(delivery)
    void delivery.finally(() => {
      this.inFlight.delete(delivery)
      this.lanes[row.channel] -= 1
      if (endpoint !== null) {
        const left = (this.endpoints.get(endpoint) ?? 1) - 1
        if (left > 0) this.endpoints.set(endpoint, left)
        else this.endpoints.delete(endpoint)
      }
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
