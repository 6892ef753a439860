import { type Kysely, sql } from 'kysely'

// The outbox (src/modules/outbox): one row per message that leaves the shop (an e-mail, a webhook
// delivery), written in the same transaction as the change that causes it, delivered after commit.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('outbox')
    // A UUID: the Standard Webhooks `webhook-id`, the receivers' deduplication key.
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('channel', 'text', (c) => c.notNull().check(sql`channel in ('email', 'webhook')`))
    // Webhook deliveries only: the endpoint (src/modules/webhooks) and the event's type.
    .addColumn('webhook_id', 'integer')
    .addColumn('event', 'text')
    // JSON: an e-mail's {template, to, data}; a webhook delivery's body {id, type, timestamp, data}.
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'delivered', 'failed')`))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text', (c) => c.notNull())
    // A dispatcher holds the row until then (several instances share the work).
    .addColumn('locked_until', 'text')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'text')
    .execute()
  await db.schema.createIndex('outbox_due').on('outbox').columns(['status', 'next_attempt_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('outbox').execute()
}
