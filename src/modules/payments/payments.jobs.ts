import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { nowIso } from '../../shared/time.js'
import { claimJobRun } from './payments.repository.js'
import { type PaymentsService, RECONCILE_AGE_MS } from './payments.service.js'

/** The reconcile job runs every 10 minutes. */
export const RECONCILE_EVERY_MS = 10 * 60_000

/** The expiry runs at least once a minute, and every TTL/2 when the TTL is shorter than 2 minutes. */
export function expiryEveryMs(ttlMs: number): number {
  return Math.max(1000, Math.min(60_000, Math.floor(ttlMs / 2)))
}

/**
 * The timed jobs of payments, in the service's own process. Each run is claimed in the database first
 * (payment_jobs: the one conditional update that moves the next run on wins), so with several instances on one
 * PostgreSQL each run happens once; on SQLite there is one process anyway. Timers are unref'd (they never hold
 * the process up) and stopped when the app closes, after the run in progress.
 */
export class PaymentJobs {
  private timers: NodeJS.Timeout[] = []
  private running: Promise<unknown> = Promise.resolve()
  private stopped = false

  constructor(
    private readonly db: Kysely<Database>,
    private readonly payments: PaymentsService,
    /** Tells the caches that stock came back (an expired order). */
    private readonly stockChanged: () => void,
  ) {}

  start(): void {
    if (this.payments.provider.name === 'stripe') this.every('payments:reconcile', RECONCILE_EVERY_MS, () => this.reconcile())
    const ttl = this.payments.config.orderPaymentTtlMs
    if (ttl > 0) this.every('payments:expire', expiryEveryMs(ttl), () => this.expire())
  }

  /** Once per claimed run: intents of pending orders older than 10 minutes. */
  async reconcile() {
    return this.payments.reconcile({ olderThanMs: RECONCILE_AGE_MS })
  }

  async expire() {
    const expired = await this.payments.expireUnpaidOrders()
    if (expired.length > 0) this.stockChanged()
    return expired
  }

  async stop(): Promise<void> {
    this.stopped = true
    for (const timer of this.timers) clearInterval(timer)
    this.timers = []
    await this.running.catch(() => {})
  }

  private every(name: string, intervalMs: number, run: () => Promise<unknown>): void {
    const tick = async () => {
      const now = Date.now()
      // The claim runs out a little before the next tick, so the instance that ran stays able to run again.
      if (!(await claimJobRun(this.db, name, new Date(now).toISOString(), new Date(now + Math.floor(intervalMs * 0.9)).toISOString()))) return
      await run()
    }
    const timer = setInterval(() => {
      if (this.stopped) return
      this.running = this.running.then(tick).catch((error: unknown) => this.payments.log.error({ err: error, job: name, at: nowIso() }, 'payment job failed'))
    }, intervalMs)
    timer.unref()
    this.timers.push(timer)
  }
}
