import { type Kysely, sql } from 'kysely'

// The outbox's two indexes hold only the rows they serve. `outbox_due` (the dispatcher's claim) holds pending rows
// alone: a delivered row leaves it, so it stays as small as the backlog. `outbox_webhook_deliveries` (an endpoint's
// delivery log) holds webhook rows alone, not e-mails. Each index entry is a page an order's commit writes: with
// 3 webhooks, the full indexes cost a SQLite shop about a quarter of its order rate (bench scenario `outbox`).

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('outbox_due').execute()
  await db.schema.createIndex('outbox_due').on('outbox').columns(['next_attempt_at']).where(sql.ref('status'), '=', sql.lit('pending')).execute()
  await db.schema.dropIndex('outbox_webhook_deliveries').execute()
  await db.schema.createIndex('outbox_webhook_deliveries').on('outbox').columns(['webhook_id', 'created_at']).where('webhook_id', 'is not', null).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('outbox_webhook_deliveries').execute()
  await db.schema.createIndex('outbox_webhook_deliveries').on('outbox').columns(['webhook_id', 'created_at']).execute()
  await db.schema.dropIndex('outbox_due').execute()
  await db.schema.createIndex('outbox_due').on('outbox').columns(['status', 'next_attempt_at']).execute()
}
