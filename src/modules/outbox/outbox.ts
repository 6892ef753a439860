import { timeOrderedId } from '../../shared/ids.js'
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { nowIso } from '../../shared/time.js'
import { preparedRows } from '../../db/prepared.js'

type Db = Kysely<Database> | Transaction<Database>

/** The e-mails the shop sends; each has its templates under src/modules/outbox/mail/templates/. */
export type EmailTemplate =
  | 'password-reset'
  | 'order-received'
  | 'order-paid'
  | 'order-shipped'
  | 'order-cancelled'
  | 'order-refunded'
  | 'guest-order-link'
  | 'admin-new-order'
  | 'admin-low-stock'
  | 'admin-payment-disputed'
  | 'return-requested'
  | 'return-approved'
  | 'return-rejected'
  | 'return-received'
  | 'admin-return-requested'
  | 'withdrawal-receipt'
  | 'admin-withdrawal-received'

export interface EmailMessage {
  template: EmailTemplate
  to: string
  /** What the template shows; JSON. */
  data: Record<string, unknown>
}

/** One outbox row as written, every column given (the rows of one event go in one INSERT). */
export interface OutboxInsert {
  /** A UUIDv7 (src/shared/ids.ts): time-ordered, so new rows go to the end of the primary key's index, not anywhere in it. */
  id: string
  channel: 'email' | 'webhook'
  webhook_id: number | null
  event: string | null
  payload: string
  status: 'pending'
  next_attempt_at: string
  created_at: string
}

/** The rows of e-mails to queue. */
export function emailRows(messages: readonly EmailMessage[], now = nowIso()): OutboxInsert[] {
  return messages.map((message) => ({
    id: timeOrderedId(),
    channel: 'email',
    webhook_id: null,
    event: null,
    payload: JSON.stringify(message),
    status: 'pending',
    next_attempt_at: now,
    created_at: now,
  }))
}

/**
 * How many writes this process has begun that make outbox rows due (an insert, a retried delivery): a hint for the
 * dispatcher, which claims after a write request only when the number moved while the request ran (a write that
 * queued nothing claims nothing). Counted before the write, so a failed or rolled-back one counts too (a needless
 * claim at worst). Process-wide: several apps in one process (tests) may wake each other's dispatcher for nothing,
 * never miss one.
 */
let outboxWrites = 0
export const outboxWriteCount = (): number => outboxWrites

/** Call before any write that makes outbox rows due other than insertOutboxRows (which counts itself). */
export function countOutboxWrite(): void {
  outboxWrites++
}

/** Writes outbox rows in one statement. */
export async function insertOutboxRows(db: Db, rows: readonly OutboxInsert[]): Promise<void> {
  if (rows.length === 0) return
  countOutboxWrite()
  await insertOutboxStatement(db, rows)
}

// Compiled once per number of rows up to 8 (an order's e-mails and a few webhooks); more are built each time.
const insertOutboxStatement = preparedRows((db, rows: readonly OutboxInsert[]) => db.insertInto('outbox').values(rows), 8)

/**
 * Queues e-mails for delivery after the caller's transaction commits: call it with that transaction, so
 * that the message exists if and only if the change that caused it does.
 */
export async function enqueueEmail(db: Db, ...messages: EmailMessage[]): Promise<void> {
  await insertOutboxRows(db, emailRows(messages))
}
