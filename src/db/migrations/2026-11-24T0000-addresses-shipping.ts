import { type Kysely, PostgresAdapter, sql } from 'kysely'

// Addresses, shipping methods, and what an order keeps of them. Orders written before this migration
// have no checkout columns (all null) and read exactly as before; their lines get the name of the product
// when it still exists, so a later deletion no longer loses what was bought.

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const id = isPg ? 'serial' : 'integer'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('addresses')
    .addColumn('id', id, primaryId)
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('full_name', 'text', (c) => c.notNull())
    .addColumn('line1', 'text', (c) => c.notNull())
    .addColumn('line2', 'text')
    .addColumn('city', 'text', (c) => c.notNull())
    .addColumn('region', 'text')
    .addColumn('postal_code', 'text', (c) => c.notNull())
    .addColumn('country', 'text', (c) => c.notNull())
    .addColumn('phone', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('addresses_user_idx').on('addresses').columns(['user_id', 'id']).execute()

  await db.schema
    .createTable('shipping_methods')
    .addColumn('id', id, primaryId)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('price_cents', 'bigint', (c) => c.notNull().check(sql`price_cents >= 0`))
    // A JSON array of country codes; [] ships everywhere. A handful of methods: filtered in the service.
    .addColumn('countries', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('free_over_cents', 'bigint')
    // 0 or 1 on both databases, so the service reads the same value from each.
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()

  // Null on orders placed without a checkout body while no shipping method was active: they keep the old shape.
  await db.schema.alterTable('orders').addColumn('subtotal_cents', 'bigint').execute()
  await db.schema.alterTable('orders').addColumn('shipping_cents', 'bigint').execute()
  await db.schema.alterTable('orders').addColumn('shipping_address', 'text').execute()
  await db.schema.alterTable('orders').addColumn('shipping_method', 'text').execute()
  await db.schema.alterTable('orders').addColumn('note', 'text').execute()

  await db.schema.alterTable('order_items').addColumn('name', 'text').execute()
  await sql`update order_items set name = (select p.name from products p where p.id = order_items.product_id) where name is null`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('order_items').dropColumn('name').execute()
  for (const column of ['note', 'shipping_method', 'shipping_address', 'shipping_cents', 'subtotal_cents']) {
    await db.schema.alterTable('orders').dropColumn(column).execute()
  }
  await db.schema.dropTable('shipping_methods').ifExists().execute()
  await db.schema.dropTable('addresses').ifExists().execute()
}
