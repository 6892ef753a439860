import { type Kysely, PostgresAdapter, sql } from 'kysely'

// `sort=name` orders products ignoring case, as categories are ordered: "apple" before "Zebra".
// The key is a generated column, so every writer (the service, the seed, a script, psql) keeps it
// right without knowing of it, and the two name indexes move onto it.
// SQLite's lower() folds ASCII letters only ("Él" keeps its É); PostgreSQL's folds every letter.

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  await sql`alter table products add column name_key text generated always as (lower(name)) ${sql.raw(isPg ? 'stored' : 'virtual')}`.execute(db)
  await db.schema.dropIndex('products_name_idx').execute()
  await db.schema.dropIndex('products_category_name_idx').execute()
  await db.schema.createIndex('products_name_idx').on('products').columns(['name_key', 'id']).execute()
  await db.schema.createIndex('products_category_name_idx').on('products').columns(['category_id', 'name_key', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('products_name_idx').execute()
  await db.schema.dropIndex('products_category_name_idx').execute()
  await db.schema.alterTable('products').dropColumn('name_key').execute()
  await db.schema.createIndex('products_name_idx').on('products').columns(['name', 'id']).execute()
  await db.schema.createIndex('products_category_name_idx').on('products').columns(['category_id', 'name', 'id']).execute()
}
