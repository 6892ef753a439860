import { type Kysely, PostgresAdapter, sql } from 'kysely'

// PostgreSQL: the facets' "other options" count reads, for each variant matching the filter, that variant's other
// rows of variant_filters (their option, value and product) by the primary key, which held only the key: each of the
// thousands of variants was a visit of the table too (at 100,000 products, a colour in stock in a price range within
// a category tree: 3,200 variants, 11–12 ms; 9 ms from the index alone). The primary key's index now carries those
// columns (INCLUDE: kept in its entries, not in its order, so the key and its uniqueness are the same). SQLite's table
// is WITHOUT ROWID, keyed on the same two columns: its rows are its key's entries already, nothing to do there.
// The new index is built beside the old key, which keeps serving reads meanwhile (building it locks the table against
// writes only, a few seconds at 3.6 million rows); then the key is swapped to it, which locks the table for an instant.

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

async function replaceKey(db: Kysely<any>, include: boolean): Promise<void> {
  const extra = include ? sql` include (name_key, value_key, product_id, option_id)` : sql``
  await sql`create unique index variant_filters_key_new on variant_filters (variant_id, option_value_id)${extra}`.execute(db)
  await sql`alter table variant_filters drop constraint variant_filters_pkey,
    add constraint variant_filters_pkey primary key using index variant_filters_key_new`.execute(db)
}

export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await replaceKey(db, true)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await replaceKey(db, false)
}
