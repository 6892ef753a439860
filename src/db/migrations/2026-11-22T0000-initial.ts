import { type Kysely, PostgresAdapter, sql } from 'kysely'

// Migrations never import today's types: they describe the schema as it was when written.
// The same file runs on SQLite and PostgreSQL; only the id column differs.

function idType(db: Kysely<any>) {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'serial' : 'integer'
}

export async function up(db: Kysely<any>): Promise<void> {
  const id = idType(db)
  const isPg = id === 'serial'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('users')
    .addColumn('id', id, primaryId)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('customer', 'admin')`))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('credentials_changed_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('categories')
    .addColumn('id', id, primaryId)
    .addColumn('name', 'text', (c) => c.notNull())
    // lower-cased by the service (Unicode-aware, unlike SQLite's lower()): names are unique ignoring case.
    .addColumn('name_key', 'text', (c) => c.notNull().unique())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('products')
    .addColumn('id', id, primaryId)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('price_cents', 'bigint', (c) => c.notNull().check(sql`price_cents >= 0`))
    .addColumn('stock', 'integer', (c) => c.notNull().check(sql`stock >= 0`))
    .addColumn('image_key', 'text', (c) => c.notNull())
    .addColumn('image_url', 'text', (c) => c.notNull())
    .addColumn('category_id', 'integer', (c) => c.references('categories.id').onDelete('restrict'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('products_category_price_idx').on('products').columns(['category_id', 'price_cents', 'id']).execute()
  await db.schema.createIndex('products_category_created_idx').on('products').columns(['category_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('products_price_idx').on('products').columns(['price_cents', 'id']).execute()
  await db.schema.createIndex('products_created_idx').on('products').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('products_name_idx').on('products').columns(['name', 'id']).execute()
  await db.schema.createIndex('products_category_name_idx').on('products').columns(['category_id', 'name', 'id']).execute()
  await createProductSearchIndex(db, isPg)
  await createProductCounts(db, isPg)

  await db.schema
    .createTable('cart_items')
    .addColumn('id', id, primaryId)
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('quantity', 'integer', (c) => c.notNull().check(sql`quantity >= 1`))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('cart_items_user_product_key', ['user_id', 'product_id'])
    .execute()
  await db.schema.createIndex('cart_items_product_idx').on('cart_items').column('product_id').execute()

  await db.schema
    .createTable('orders')
    .addColumn('id', id, primaryId)
    .addColumn('user_id', 'integer', (c) => c.notNull())
    .addColumn('total_cents', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'paid', 'shipped', 'delivered', 'cancelled')`))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('orders_user_idx').on('orders').columns(['user_id', 'id']).execute()
  await db.schema.createIndex('orders_status_idx').on('orders').columns(['status', 'id']).execute()

  await db.schema
    .createTable('order_items')
    .addColumn('id', id, primaryId)
    .addColumn('order_id', 'integer', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('product_id', 'integer', (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull().check(sql`quantity >= 1`))
    .addColumn('price_cents', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('order_items_order_idx').on('order_items').column('order_id').execute()

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('user_id', 'integer', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('order_id', 'integer', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['user_id', 'key'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['product_counts', 'products_search', 'idempotency_keys', 'order_items', 'orders', 'cart_items', 'products', 'categories', 'users']) {
    await db.schema.dropTable(table).ifExists().execute()
  }
  if (idType(db) === 'serial') {
    for (const fn of ['product_counts_after_insert', 'product_counts_after_delete', 'product_counts_after_update']) {
      await sql`drop function if exists ${sql.raw(fn)}()`.execute(db)
    }
  }
}

/**
 * Substring search on product name and description (the list's `q`) without scanning the table:
 * trigram indexes. SQLite: an FTS5 trigram table kept in step by triggers. PostgreSQL: pg_trgm GIN
 * indexes, when the extension is installed or may be installed; without it `q` still works, unindexed.
 */
async function createProductSearchIndex(db: Kysely<any>, isPg: boolean): Promise<void> {
  if (!isPg) {
    await sql`create virtual table products_search using fts5(name, description, content='products', content_rowid='id', tokenize='trigram')`.execute(db)
    await sql`create trigger products_search_insert after insert on products begin
      insert into products_search(rowid, name, description) values (new.id, new.name, new.description);
    end`.execute(db)
    await sql`create trigger products_search_delete after delete on products begin
      insert into products_search(products_search, rowid, name, description) values ('delete', old.id, old.name, old.description);
    end`.execute(db)
    await sql`create trigger products_search_update after update of name, description on products begin
      insert into products_search(products_search, rowid, name, description) values ('delete', old.id, old.name, old.description);
      insert into products_search(rowid, name, description) values (new.id, new.name, new.description);
    end`.execute(db)
    return
  }
  // One extension per database, shared by every schema: serialize its creation (parallel migrations).
  await sql`select pg_advisory_xact_lock(hashtext('shop:pg_trgm'))`.execute(db)
  const schemaOf = async () =>
    (
      await sql<{
        schema: string
      }>`select n.nspname as schema from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_trgm'`.execute(db)
    ).rows[0]?.schema
  let schema = await schemaOf()
  if (schema === undefined) {
    await sql`savepoint shop_pg_trgm`.execute(db)
    try {
      await sql`create extension if not exists pg_trgm with schema public`.execute(db)
      await sql`release savepoint shop_pg_trgm`.execute(db)
      schema = await schemaOf()
    } catch {
      // Not available or not allowed: the list's `q` falls back to a scan.
      await sql`rollback to savepoint shop_pg_trgm`.execute(db)
      return
    }
  }
  const opclass = sql.raw(`"${schema}".gin_trgm_ops`)
  await sql`create index products_name_trgm_idx on products using gin (name ${opclass})`.execute(db)
  await sql`create index products_description_trgm_idx on products using gin (description ${opclass})`.execute(db)
}

/**
 * `product_counts`: how many products there are in all (`category_id` 0) and per category, kept by
 * triggers, so the list's X-Total-Count costs one key lookup for the common cases (no filter, or
 * only a category) instead of counting up to 100,000 index entries per request.
 */
async function createProductCounts(db: Kysely<any>, isPg: boolean): Promise<void> {
  await db.schema
    .createTable('product_counts')
    .addColumn('category_id', 'integer', (c) => c.primaryKey())
    .addColumn('total', 'bigint', (c) => c.notNull())
    .execute()
  await createProductCountTriggers(db, isPg)
}

/** The triggers that keep `product_counts` (every product; the catalog migration counts active ones only). */
export async function createProductCountTriggers(db: Kysely<any>, isPg: boolean): Promise<void> {
  if (!isPg) {
    await sql`create trigger product_counts_insert after insert on products begin
      insert into product_counts (category_id, total) values (0, 1) on conflict (category_id) do update set total = total + 1;
      insert into product_counts (category_id, total) select new.category_id, 1 where new.category_id is not null
        on conflict (category_id) do update set total = total + 1;
    end`.execute(db)
    await sql`create trigger product_counts_delete after delete on products begin
      update product_counts set total = total - 1 where category_id = 0 or category_id = old.category_id;
    end`.execute(db)
    await sql`create trigger product_counts_update after update of category_id on products
      when old.category_id is not new.category_id begin
      update product_counts set total = total - 1 where category_id = old.category_id;
      insert into product_counts (category_id, total) select new.category_id, 1 where new.category_id is not null
        on conflict (category_id) do update set total = total + 1;
    end`.execute(db)
    return
  }
  // PostgreSQL: statement-level triggers with transition tables, so a bulk insert updates each count once.
  await sql`create function product_counts_after_insert() returns trigger language plpgsql as $$
    begin
      insert into product_counts (category_id, total)
        select 0, count(*) from inserted
        union all
        select category_id, count(*) from inserted where category_id is not null group by category_id
      on conflict (category_id) do update set total = product_counts.total + excluded.total;
      return null;
    end $$`.execute(db)
  await sql`create function product_counts_after_delete() returns trigger language plpgsql as $$
    begin
      update product_counts c set total = c.total - d.n
      from (
        select 0 as category_id, count(*) as n from deleted
        union all
        select category_id, count(*) from deleted where category_id is not null group by category_id
      ) d
      where c.category_id = d.category_id;
      return null;
    end $$`.execute(db)
  await sql`create function product_counts_after_update() returns trigger language plpgsql as $$
    begin
      update product_counts c set total = c.total - d.n
      from (
        select o.category_id, count(*) as n from old_rows o join new_rows n on n.id = o.id
        where o.category_id is distinct from n.category_id and o.category_id is not null group by o.category_id
      ) d
      where c.category_id = d.category_id;
      insert into product_counts (category_id, total)
        select n.category_id, count(*) from old_rows o join new_rows n on n.id = o.id
        where o.category_id is distinct from n.category_id and n.category_id is not null group by n.category_id
      on conflict (category_id) do update set total = product_counts.total + excluded.total;
      return null;
    end $$`.execute(db)
  await sql`create trigger product_counts_insert after insert on products referencing new table as inserted
    for each statement execute function product_counts_after_insert()`.execute(db)
  await sql`create trigger product_counts_delete after delete on products referencing old table as deleted
    for each statement execute function product_counts_after_delete()`.execute(db)
  await sql`create trigger product_counts_update after update on products referencing old table as old_rows new table as new_rows
    for each statement execute function product_counts_after_update()`.execute(db)
}
