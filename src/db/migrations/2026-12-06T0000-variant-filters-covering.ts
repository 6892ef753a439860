import { type Kysely, PostgresAdapter, sql } from 'kysely'

// PostgreSQL: the facets read a matching row's variant (the other options' values are found by it) and its value's id
// (the spelling shown), which variant_filters_value_idx did not hold, so each of the thousands of rows a facet counts
// was a visit of the table (at 100,000 products, an option's own facet: 26 ms, 13 ms from the index alone). The index
// now carries both (INCLUDE: kept in its entries, not in its order). SQLite's table is WITHOUT ROWID, keyed on those
// two columns, so its indexes hold them already: nothing to do there.
// Rebuilding the index reads the table once: about 10 s at 3.6 million rows, the table locked for writes meanwhile.

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

const KEYS = sql.raw('name_key, value_key, status, in_stock, category_id, price_cents, product_id, option_id')

export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  await sql`drop index variant_filters_value_idx`.execute(db)
  await sql`create index variant_filters_value_idx on variant_filters (${KEYS}) include (variant_id, option_value_id)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  await sql`drop index variant_filters_value_idx`.execute(db)
  await sql`create index variant_filters_value_idx on variant_filters (${KEYS})`.execute(db)
}
