import type { Kysely } from 'kysely'

// The audit log's entries are found by time through their ids (a UUIDv7 carries its millisecond, and the entry's
// `at` is that millisecond): the index on `at` cost every staff write a page and served nothing the primary key
// does not.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('audit_log_at').ifExists().execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('audit_log_at').ifNotExists().on('audit_log').columns(['at', 'id']).execute()
}
