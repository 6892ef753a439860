import { type Kysely, PostgresAdapter } from 'kysely'

// The order lifecycle (src/modules/orders/order-lifecycle.ts) and the money that moves with it:
// - payments gain what a refund made outside the database transaction needs: the refund in flight
//   (`refund_pending_at`, `refund_pending_cents`: recorded and committed before Stripe is called, settled in a
//   second transaction, finished by the reconcile job when a crash or a timeout left it), the amount refunded so
//   far (`refunded_cents`: `payment.status` is derived from it), the amount a mismatched success received
//   (`received_cents`: refunded when its order is cancelled or expires), and whether an admin marked the order paid
//   (`paid_manually`: a card payment that succeeds after that is a second charge, refunded);
// - `refunds`: every refund, the shop's and those made in Stripe's dashboard (`charge.refunded`);
// - `order_events`: the order's timeline (a dispute, for now; part 3's timeline builds on it).

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const id = isPg ? 'serial' : 'integer'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .alterTable('payments')
    .addColumn('refunded_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.alterTable('payments').addColumn('refund_pending_at', 'text').execute()
  await db.schema.alterTable('payments').addColumn('refund_pending_cents', 'bigint').execute()
  await db.schema.alterTable('payments').addColumn('received_cents', 'bigint').execute()
  await db.schema
    .alterTable('payments')
    .addColumn('paid_manually', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()

  await db.schema
    .createTable('refunds')
    .addColumn('id', id, primaryId)
    .addColumn('order_id', 'integer', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    // Stripe's refund id, or the charge's cumulative amount for one recorded from `charge.refunded`.
    .addColumn('provider_ref', 'text')
    .addColumn('reason', 'text')
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'integer')
    .addColumn('actor_name', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('refunds_order').on('refunds').column('order_id').execute()

  await db.schema
    .createTable('order_events')
    .addColumn('id', id, primaryId)
    .addColumn('order_id', 'integer', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'integer')
    .addColumn('actor_name', 'text')
    // JSON.
    .addColumn('data', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('order_events_order').on('order_events').columns(['order_id', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('order_events').execute()
  await db.schema.dropTable('refunds').execute()
  for (const column of ['paid_manually', 'received_cents', 'refund_pending_cents', 'refund_pending_at', 'refunded_cents']) {
    await db.schema.alterTable('payments').dropColumn(column).execute()
  }
}
