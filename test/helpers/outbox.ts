import type { Kysely } from 'kysely'
import type { Database } from '../../src/db/database.js'
import type { EmailMessage } from '../../src/modules/outbox/outbox.js'

/** The e-mails queued in the outbox (delivered or not), oldest first; only those to `to` when given. */
export async function queuedEmails(db: Kysely<Database>, to?: string): Promise<EmailMessage[]> {
  const rows = await db.selectFrom('outbox').select(['payload']).where('channel', '=', 'email').orderBy('created_at').orderBy('id').execute()
  const messages = rows.map((row) => JSON.parse(row.payload) as EmailMessage)
  return to === undefined ? messages : messages.filter((message) => message.to === to)
}
