import { type Kysely, PostgresAdapter, sql } from 'kysely'

// Discount codes and their redemptions (one per order). A code's product and category lists are JSON arrays of
// ids, with no foreign key: a product or category deleted later stays in the list and simply matches no cart
// line, so a code limited to it never turns into a code for everything (an empty list means "every product").

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const id = isPg ? 'serial' : 'integer'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('discount_codes')
    .addColumn('id', id, primaryId)
    // As the admin wrote it; unique ignoring case (codes are ASCII, so lower() folds them alike on both databases).
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('percent', 'fixed', 'free_shipping')`))
    // percent: hundredths of a percent (1250 = 12.5 %); fixed: cents; free_shipping: null.
    .addColumn('value', 'bigint', (c) => c.check(sql`value is null or value > 0`))
    .addColumn('min_subtotal_cents', 'bigint', (c) => c.check(sql`min_subtotal_cents is null or min_subtotal_cents >= 0`))
    .addColumn('starts_at', 'text')
    .addColumn('ends_at', 'text')
    .addColumn('usage_limit', 'integer', (c) => c.check(sql`usage_limit is null or usage_limit >= 1`))
    .addColumn('per_customer_limit', 'integer', (c) => c.check(sql`per_customer_limit is null or per_customer_limit >= 1`))
    .addColumn('usage_count', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`usage_count >= 0`),
    )
    .addColumn('product_ids', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('category_ids', 'text', (c) => c.notNull().defaultTo('[]'))
    // 0 or 1 on both databases, so the service reads the same value from each.
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await sql`create unique index discount_codes_code_key on discount_codes (lower(code))`.execute(db)

  await db.schema
    .createTable('discount_redemptions')
    .addColumn('id', id, primaryId)
    // A used code cannot be deleted (the service answers 409 first): no cascade.
    .addColumn('code_id', 'integer', (c) => c.notNull().references('discount_codes.id'))
    .addColumn('order_id', 'integer', (c) => c.notNull().unique().references('orders.id').onDelete('cascade'))
    // null for a guest; no foreign key, as on orders: a deleted account's redemptions still count by e-mail.
    .addColumn('user_id', 'integer')
    // Lower-cased by the service.
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull().check(sql`amount_cents >= 0`))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  // The per-customer count (code and user id, or code and e-mail) and a code's redemptions, newest first.
  await db.schema.createIndex('discount_redemptions_code_user_idx').on('discount_redemptions').columns(['code_id', 'user_id']).execute()
  await db.schema.createIndex('discount_redemptions_code_email_idx').on('discount_redemptions').columns(['code_id', 'email']).execute()
  await db.schema.createIndex('discount_redemptions_code_idx').on('discount_redemptions').columns(['code_id', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('discount_redemptions').ifExists().execute()
  await db.schema.dropTable('discount_codes').ifExists().execute()
}
