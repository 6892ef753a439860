import { type Kysely, PostgresAdapter, sql } from 'kysely'

// PostgreSQL: the triggers that keep the derived tables true (product_counts: active products per category;
// variant_filters: a variant's option values with its price, stock, category and status) name their tables without a
// schema, so they ran with the writer's search_path: a script or a DBA writing `shop.products` with another path (or
// another role's default) had its write refused ("relation product_counts does not exist"). Each function now runs
// with the schema it was created in, and as its owner (SECURITY DEFINER): like an index, a derived table is kept by
// the database whoever writes the source, with no grant of its own. The catalog's NOTIFY trigger
// (2026-12-08T0000-catalog-outside-writes) was created so. None of them may be executed by PUBLIC any more.
//
// A later `create or replace function` of one of these drops both settings unless it states them again.

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/** The trigger functions of the derived tables, as the migrations before this one left them. */
export const DERIVED_TRIGGER_FUNCTIONS = [
  'product_counts_after_insert',
  'product_counts_after_delete',
  'product_counts_after_update',
  'variant_filters_after_link',
  'variant_filters_after_variant',
  'variant_filters_after_product',
  'variant_filters_after_value',
  'variant_filters_after_option',
] as const

/** Those and the catalog's NOTIFY trigger (also SECURITY DEFINER, since 2026-12-08T0000). */
const ALL_TRIGGER_FUNCTIONS = [...DERIVED_TRIGGER_FUNCTIONS, 'shop_catalog_changed'] as const

export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)
  const schema = rows[0]?.schema
  if (!schema) throw new Error('no current schema to pin the derived tables’ triggers to')
  const quoted = `"${schema.replaceAll('"', '""')}"`
  for (const fn of DERIVED_TRIGGER_FUNCTIONS) {
    await sql`alter function ${sql.raw(fn)}() security definer set search_path = ${sql.raw(quoted)}, pg_temp`.execute(db)
  }
  // A function is executable by PUBLIC by default: a role with only USAGE on the schema could attach one of these to
  // a table of its own and have it write the derived tables as their owner. A trigger's function is checked for
  // EXECUTE when the trigger is created, not when it fires, so the shop's triggers keep firing for every writer.
  for (const fn of ALL_TRIGGER_FUNCTIONS) await sql`revoke execute on function ${sql.raw(fn)}() from public`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  for (const fn of ALL_TRIGGER_FUNCTIONS) await sql`grant execute on function ${sql.raw(fn)}() to public`.execute(db)
  for (const fn of DERIVED_TRIGGER_FUNCTIONS) await sql`alter function ${sql.raw(fn)}() security invoker reset search_path`.execute(db)
}
