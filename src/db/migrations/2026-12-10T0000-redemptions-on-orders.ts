import { type Kysely, PostgresAdapter, sql } from 'kysely'

// A discount code's redemption is its order's: the order row says which code it holds a use of
// (`discount_code_id`, cleared when a cancelled or expired order gives the use back) and the customer's lower-case
// e-mail then (`discount_email`, which the per-customer limit matches besides the user id). The redemption's own
// table cost every order with a code a row and four B-trees more (a WAL page each at the commit, on SQLite); on the
// order they cost one partial index, only on orders that hold a use: by code and e-mail. It serves the per-customer
// count by e-mail (by user id it goes through the orders' index by user), "was the code ever used", and a code's
// redemptions (newest first: the code's entries sorted by order id, an admin's page; an index by code and order
// would cost every order with a code one more page).
// A redemption's amount is the order's `discount_total_cents` and its time the order's `created_at`.

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

export async function up(db: Kysely<any>): Promise<void> {
  // A used code cannot be deleted: the service's delete checks for an order holding it in the same statement. On
  // PostgreSQL a foreign key also refuses an order that committed while the delete waited for the code's row; SQLite
  // runs one write at a time, so nothing can slip in there (and it could not drop a column a key names).
  await db.schema
    .alterTable('orders')
    .addColumn('discount_code_id', 'integer', (c) => (isPostgres(db) ? c.references('discount_codes.id') : c))
    .execute()
  await db.schema.alterTable('orders').addColumn('discount_email', 'text').execute()
  await sql`
    update orders set
      discount_code_id = (select r.code_id from discount_redemptions r where r.order_id = orders.id),
      discount_email = (select r.email from discount_redemptions r where r.order_id = orders.id)
    where id in (select order_id from discount_redemptions)`.execute(db)
  await db.schema
    .createIndex('orders_discount_email_idx')
    .on('orders')
    .columns(['discount_code_id', 'discount_email'])
    .where(sql.ref('discount_code_id'), 'is not', null)
    .execute()
  await db.schema.dropTable('discount_redemptions').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  const isPg = isPostgres(db)
  await db.schema
    .createTable('discount_redemptions')
    .addColumn('id', isPg ? 'serial' : 'integer', (c) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('code_id', 'integer', (c) => c.notNull().references('discount_codes.id'))
    .addColumn('order_id', 'integer', (c) => c.notNull().unique().references('orders.id').onDelete('cascade'))
    .addColumn('user_id', 'integer')
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull().check(sql`amount_cents >= 0`))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('discount_redemptions_code_user_idx').on('discount_redemptions').columns(['code_id', 'user_id']).execute()
  await db.schema.createIndex('discount_redemptions_code_email_idx').on('discount_redemptions').columns(['code_id', 'email']).execute()
  await db.schema.createIndex('discount_redemptions_code_idx').on('discount_redemptions').columns(['code_id', 'id']).execute()
  await sql`
    insert into discount_redemptions (code_id, order_id, user_id, email, amount_cents, created_at)
    select discount_code_id, id, user_id, coalesce(discount_email, ''), coalesce(discount_total_cents, 0), created_at
    from orders where discount_code_id is not null order by id`.execute(db)
  await db.schema.dropIndex('orders_discount_email_idx').execute()
  await db.schema.alterTable('orders').dropColumn('discount_email').execute()
  await db.schema.alterTable('orders').dropColumn('discount_code_id').execute()
}
