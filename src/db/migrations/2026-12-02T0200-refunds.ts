import type { Kysely } from 'kysely'

// Refunds by line (POST /orders/:id/refunds):
// - `refunds` gains what a refund by line records besides its amount: the shipping it gave back (`shipping_cents`),
//   the tax inside the amount (`tax_cents`), and `pending_at`: a refund through Stripe is written and committed
//   before Stripe is called (set), and settled in a second transaction (cleared); one still set after a crash or a
//   timeout is finished by the reconcile job. Refunds written before this migration are settled (null), with no
//   shipping and no tax.
// - `refund_items`: the units of each line a refund gave back (and how many of them had not shipped: they count as
//   cancelled), with their amount, their tax and whether they went back to stock.
// - `refund_keys`: the `Idempotency-Key` of each refund request, per order: the refund it made (null while none,
//   after the provider refused), and the attempt number of Stripe's key, which moves on after a definite refusal
//   (Stripe replays an answer under the same key for 24 hours). A key is the order's for 24 hours.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('refunds')
    .addColumn('shipping_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema
    .alterTable('refunds')
    .addColumn('tax_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.alterTable('refunds').addColumn('pending_at', 'text').execute()

  await db.schema
    .createTable('refund_items')
    .addColumn('refund_id', 'integer', (c) => c.notNull().references('refunds.id').onDelete('cascade'))
    .addColumn('order_item_id', 'integer', (c) => c.notNull().references('order_items.id').onDelete('cascade'))
    .addColumn('quantity', 'integer', (c) => c.notNull())
    .addColumn('cancelled_quantity', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .addColumn('tax_cents', 'bigint', (c) => c.notNull())
    .addColumn('restock', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('refund_items_pk', ['refund_id', 'order_item_id'])
    .execute()
  await db.schema.createIndex('refund_items_line').on('refund_items').column('order_item_id').execute()

  await db.schema
    .createTable('refund_keys')
    .addColumn('order_id', 'integer', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('refund_id', 'integer', (c) => c.references('refunds.id').onDelete('set null'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('refund_keys_pk', ['order_id', 'key'])
    .execute()
  await db.schema.createIndex('refund_keys_refund').on('refund_keys').column('refund_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('refund_keys').execute()
  await db.schema.dropTable('refund_items').execute()
  for (const column of ['pending_at', 'tax_cents', 'shipping_cents']) {
    await db.schema.alterTable('refunds').dropColumn(column).execute()
  }
}
