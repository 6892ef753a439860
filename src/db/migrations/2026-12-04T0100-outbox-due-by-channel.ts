import { type Kysely, sql } from 'kysely'

// The dispatcher claims each channel's due rows apart (e-mails, webhook deliveries), but `outbox_due` held the pending
// rows by time alone: a lane with nothing due walked the whole backlog of the other lane to find none. Under load the
// e-mails pile up (they are sent after the orders, at the mail server's pace), and each claim of the webhook lane
// then read all of them: 0.8 ms with 4,000 pending e-mails, 12 ms with 23,000, on the one SQLite connection every
// request waits for; a shop's order rate fell by a third within 20,000 orders. By channel, then time, each lane
// reads only its own due rows.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('outbox_due').execute()
  await db.schema.createIndex('outbox_due').on('outbox').columns(['channel', 'next_attempt_at']).where(sql.ref('status'), '=', sql.lit('pending')).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('outbox_due').execute()
  await db.schema.createIndex('outbox_due').on('outbox').columns(['next_attempt_at']).where(sql.ref('status'), '=', sql.lit('pending')).execute()
}
