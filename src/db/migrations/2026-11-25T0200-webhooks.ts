import { type Kysely, PostgresAdapter } from 'kysely'

// Webhook endpoints (src/modules/webhooks): where the shop POSTs its events. Their deliveries are outbox
// rows (channel 'webhook', webhook_id); this adds the index their per-endpoint list reads.

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  await db.schema
    .createTable('webhooks')
    .addColumn('id', isPg ? 'serial' : 'integer', (c) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('url', 'text', (c) => c.notNull())
    // JSON array of event names.
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    // 1 or 0.
    .addColumn('active', 'integer', (c) => c.notNull())
    // `whsec_` + base64 of 32 random bytes: the HMAC key, so it is kept as it is (the signer needs it).
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('outbox_webhook_deliveries').on('outbox').columns(['webhook_id', 'created_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('outbox_webhook_deliveries').execute()
  await db.schema.dropTable('webhooks').execute()
}
