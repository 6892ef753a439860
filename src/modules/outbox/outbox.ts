import { randomUUID } from 'node:crypto'
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { nowIso } from '../../shared/time.js'

type Db = Kysely<Database> | Transaction<Database>

/** The e-mails the shop sends; each has its templates under src/modules/outbox/templates/. */
export type EmailTemplate = 'password-reset' | 'order-received' | 'order-paid' | 'order-shipped' | 'order-cancelled' | 'admin-new-order' | 'admin-low-stock'

export interface EmailMessage {
  template: EmailTemplate
  to: string
  /** What the template shows; JSON. */
  data: Record<string, unknown>
}

/**
 * Queues e-mails for delivery after the caller's transaction commits: call it with that transaction, so
 * that the message exists if and only if the change that caused it does.
 */
export async function enqueueEmail(db: Db, ...messages: EmailMessage[]): Promise<void> {
  if (messages.length === 0) return
  const now = nowIso()
  await db
    .insertInto('outbox')
    .values(
      messages.map((message) => ({
        id: randomUUID(),
        channel: 'email' as const,
        payload: JSON.stringify(message),
        status: 'pending' as const,
        next_attempt_at: now,
        created_at: now,
      })),
    )
    .execute()
}
