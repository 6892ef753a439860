import { type Kysely, PostgresAdapter } from 'kysely'

// Returns and withdrawals:
// - `withdrawals`: a customer's declaration that they withdraw from the purchase of some of an order's units, as
//   received. The row is never changed afterwards: what was declared, when, and the deadline then in force stay as
//   they were (the return made from it points back to it, not the other way round).
// - `returns`: units of an order on their way back, moving `requested → approved | rejected`, `approved → received`;
//   `withdrawal_id` is the withdrawal it was made from (unique: one return per withdrawal, also when two staff race).
// - `return_items`: a return's units per order line, and how many of them arrived (`received_quantity`, null until
//   the return is received).

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const id = isPg ? 'serial' : 'integer'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('withdrawals')
    .addColumn('id', id, primaryId)
    .addColumn('order_id', 'integer', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    // JSON `[{orderItemId, name, variantTitle, quantity}]`.
    .addColumn('items', 'text', (c) => c.notNull())
    .addColumn('statement', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    // `YYYY-MM-DD` in the shop's zone, or null while the order is not yet all delivered.
    .addColumn('deadline', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    // SHA-256 of what the request asked (order, e-mail, name, items): a repeat within a day answers the first.
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('withdrawals_order').on('withdrawals').columns(['order_id', 'id']).execute()

  await db.schema
    .createTable('returns')
    .addColumn('id', id, primaryId)
    .addColumn('order_id', 'integer', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('reject_reason', 'text')
    .addColumn('refund_id', 'integer', (c) => c.references('refunds.id').onDelete('set null'))
    .addColumn('withdrawal_id', 'integer', (c) => c.references('withdrawals.id').onDelete('set null'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('returns_order').on('returns').columns(['order_id', 'id']).execute()
  await db.schema.createIndex('returns_status').on('returns').columns(['status', 'id']).execute()
  await db.schema.createIndex('returns_withdrawal').on('returns').column('withdrawal_id').unique().execute()

  await db.schema
    .createTable('return_items')
    .addColumn('return_id', 'integer', (c) => c.notNull().references('returns.id').onDelete('cascade'))
    .addColumn('order_item_id', 'integer', (c) => c.notNull().references('order_items.id').onDelete('cascade'))
    .addColumn('quantity', 'integer', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('received_quantity', 'integer')
    .addPrimaryKeyConstraint('return_items_pk', ['return_id', 'order_item_id'])
    .execute()
  await db.schema.createIndex('return_items_line').on('return_items').column('order_item_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('return_items').execute()
  await db.schema.dropTable('returns').execute()
  await db.schema.dropTable('withdrawals').execute()
}
