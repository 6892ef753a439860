import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { beforeAll, beforeEach } from 'vitest'
import type { Database } from '../../src/db/database.js'
import type { ShopEvent } from '../../src/modules/outbox/dispatcher.js'
import type { EmailMessage } from '../../src/modules/outbox/outbox.js'

/** The e-mails queued in the outbox (delivered or not), oldest first; only those to `to` when given. */
export async function queuedEmails(db: Kysely<Database>, to?: string): Promise<EmailMessage[]> {
  const rows = await db.selectFrom('outbox').select(['payload']).where('channel', '=', 'email').orderBy('created_at').orderBy('id').execute()
  const messages = rows.map((row) => JSON.parse(row.payload) as EmailMessage)
  return to === undefined ? messages : messages.filter((message) => message.to === to)
}

/**
 * The events a test app emits, recorded as they are emitted (in the change's transaction), emptied before each test.
 * Call it beside useTestApp; read the array inside tests.
 */
export function recordEvents(t: { app: FastifyInstance }): ShopEvent[] {
  const events: ShopEvent[] = []
  beforeAll(() => {
    t.app.outbox.onEvent(async (_trx, event) => {
      events.push(event)
      return []
    })
  })
  beforeEach(() => {
    events.length = 0
  })
  return events
}
