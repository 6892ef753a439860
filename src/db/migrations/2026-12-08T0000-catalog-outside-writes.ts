import { type Kysely, PostgresAdapter, sql } from 'kysely'

// PostgreSQL: writes to the catalog made outside the service (psql, a script, another tool) tell every instance, as
// the service's own writes do, so that the product read cache can keep its entries for a minute instead of the 5 s
// that bounded those writes until now (a product read that misses costs ~1 ms of the service's time: at 1,000 product
// pages, 5 s lifetimes were ~270 misses a second).
//
// A statement-level trigger on each table the cached reads show sends `NOTIFY shop_changes, 'catalog:<schema>'` (the
// change feed's channel, from no instance: every instance hears it), unless the connection is one of the service's, named
// in `service_connections` by its application_name (the service registers its name at start). The service's own
// writes then pay one lookup per statement and no NOTIFY inside their transaction: a NOTIFY serializes the commits of
// the transactions that send one, and the checkout updates variants. SQLite: nothing to do, `data_version` already
// moves with any other connection's commit.

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/** The tables whose rows the product reads (GET /products, /products/:id, /products/facets) show. */
export const CATALOG_TABLES = [
  'products',
  'product_variants',
  'product_options',
  'product_option_values',
  'variant_option_values',
  'product_images',
  'product_slugs',
  'product_tags',
  'categories',
  'category_slugs',
] as const

export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  await sql`create table service_connections (application_name text primary key)`.execute(db)
  // The schema the tables are created in, written into the function: a writer whose search_path differs (a DBA as
  // another role, a script naming `shop.products`) still finds the table. SECURITY DEFINER: the lookup runs as the
  // service's role, so a role that may write the catalog but not read this table is not refused its write.
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)
  const schema = rows[0]?.schema
  if (!schema) throw new Error('no current schema to create the catalog triggers in')
  const quoted = `"${schema.replaceAll('"', '""')}"`
  // The payload names the schema ('catalog:<schema>'): an instance takes any payload not its own as a change.
  await sql`create function shop_catalog_changed() returns trigger language plpgsql security definer
    set search_path = ${sql.raw(quoted)}, pg_temp as $$
    begin
      if not exists (select 1 from service_connections where application_name = current_setting('application_name', true)) then
        perform pg_notify('shop_changes', 'catalog:' || TG_TABLE_SCHEMA);
      end if;
      return null;
    end
  $$`.execute(db)
  for (const table of CATALOG_TABLES) {
    await sql`create trigger ${sql.raw(`${table}_outside_writes`)} after insert or update or delete or truncate on ${sql.table(table)}
      for each statement execute function shop_catalog_changed()`.execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  for (const table of CATALOG_TABLES) await sql`drop trigger ${sql.raw(`${table}_outside_writes`)} on ${sql.table(table)}`.execute(db)
  await sql`drop function shop_catalog_changed()`.execute(db)
  await sql`drop table service_connections`.execute(db)
}
