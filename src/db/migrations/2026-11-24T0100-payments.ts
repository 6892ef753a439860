import { type Kysely, sql } from 'kysely'

// Payments (src/modules/payments): one row per order that a provider has seen, the Stripe events already
// applied (their id is unique, so a duplicate delivery is applied once), and the claims of the timed jobs
// (one row per job: the instance that moves `next_run_at` on runs the job this time).

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('payments')
    .addColumn('order_id', 'integer', (c) => c.primaryKey().references('orders.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull().check(sql`provider in ('manual', 'stripe')`))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('unpaid', 'processing', 'paid', 'failed', 'refunded')`))
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    // The intent the shop created; events are matched by it, never by their metadata.
    .addColumn('intent_id', 'text', (c) => c.unique())
    // How many intents were created for the order (the next one's idempotency key).
    .addColumn('intent_attempt', 'integer', (c) => c.notNull().defaultTo(0))
    // The refund's idempotency key is refund-order-<id>-<refund_attempt>; a definite refusal moves it on.
    .addColumn('refund_attempt', 'integer', (c) => c.notNull().defaultTo(1))
    // A success whose amount or currency did not match the order: recorded, never applied.
    .addColumn('mismatch', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('payment_events')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('payment_jobs')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('next_run_at', 'text', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payment_jobs').execute()
  await db.schema.dropTable('payment_events').execute()
  await db.schema.dropTable('payments').execute()
}
