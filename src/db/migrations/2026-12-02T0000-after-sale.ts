import { type Kysely, PostgresAdapter } from 'kysely'

// After the sale, the ground the shipments, refunds, returns and withdrawals stand on:
// - each order line counts its units shipped (`fulfilled_quantity`), refunded (`refunded_quantity`) and, of those
//   refunded, the ones refunded before they shipped (`cancelled_quantity`: they will never ship). A line's units
//   left to ship are `quantity − fulfilled − cancelled`. The counters move by conditional updates inside the change's
//   transaction, so two requests never ship or refund the same unit twice. Lines written before start at 0.
// - `fulfillments`: a shipment of some units of an order, with its carrier and tracking, shipped and (later)
//   delivered; `fulfillment_items` its units per line.
// Orders already `shipped` or `delivered` keep their counters at 0: they were moved the old way, with no shipment
// recorded, and read as before.

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const id = isPg ? 'serial' : 'integer'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  for (const column of ['fulfilled_quantity', 'refunded_quantity', 'cancelled_quantity']) {
    await db.schema
      .alterTable('order_items')
      .addColumn(column, 'integer', (c) => c.notNull().defaultTo(0))
      .execute()
  }

  await db.schema
    .createTable('fulfillments')
    .addColumn('id', id, primaryId)
    .addColumn('order_id', 'integer', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('carrier', 'text')
    .addColumn('tracking_number', 'text')
    .addColumn('tracking_url', 'text')
    .addColumn('shipped_at', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('fulfillments_order').on('fulfillments').columns(['order_id', 'id']).execute()

  await db.schema
    .createTable('fulfillment_items')
    .addColumn('fulfillment_id', 'integer', (c) => c.notNull().references('fulfillments.id').onDelete('cascade'))
    .addColumn('order_item_id', 'integer', (c) => c.notNull().references('order_items.id').onDelete('cascade'))
    .addColumn('quantity', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('fulfillment_items_pk', ['fulfillment_id', 'order_item_id'])
    .execute()
  await db.schema.createIndex('fulfillment_items_line').on('fulfillment_items').column('order_item_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('fulfillment_items').execute()
  await db.schema.dropTable('fulfillments').execute()
  for (const column of ['cancelled_quantity', 'refunded_quantity', 'fulfilled_quantity']) {
    await db.schema.alterTable('order_items').dropColumn(column).execute()
  }
}
