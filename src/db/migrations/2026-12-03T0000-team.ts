import { type Kysely, PostgresAdapter, sql } from 'kysely'

// A team:
// - `users.staff_role`: an admin's staff role (owner, manager, catalog, fulfillment, support), null for customers.
//   Every admin from before staff roles is an owner: they could do everything, and still can.
// - `api_keys`: keys for integrations, acting as an admin of their staff role (never owner). The secret is kept as its
//   SHA-256 only, found by its lookup id (the `sk_<lookup id>` prefix shown in lists); `created_by` is kept when its
//   admin is deleted (set null). A revoked key keeps its row, for the audit log's names.
// - `audit_log`: who changed what, one entry per change, written in the change's transaction; ids are UUIDv7 (their
//   order is their time). `actor_id` is text: a user's or a key's id, or null for the system.

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const id = isPg ? 'serial' : 'integer'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema.alterTable('users').addColumn('staff_role', 'text').execute()
  await sql`update users set staff_role = 'owner' where role = 'admin'`.execute(db)

  await db.schema
    .createTable('api_keys')
    .addColumn('id', id, primaryId)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('staff_role', 'text', (c) => c.notNull())
    .addColumn('lookup_id', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_by', 'integer', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .execute()

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('actor_name', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('entity_type', 'text', (c) => c.notNull())
    .addColumn('entity_id', 'text')
    // JSON, secrets redacted; null on create (before) and delete (after).
    .addColumn('before', 'text')
    .addColumn('after', 'text')
    .addColumn('request_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .execute()
  // Newest first, by themselves or within an entity or an actor; the retention job deletes by `at`.
  await db.schema.createIndex('audit_log_at').on('audit_log').columns(['at', 'id']).execute()
  await db.schema.createIndex('audit_log_entity').on('audit_log').columns(['entity_type', 'entity_id', 'id']).execute()
  await db.schema.createIndex('audit_log_actor').on('audit_log').columns(['actor_type', 'actor_id', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('audit_log').execute()
  await db.schema.dropTable('api_keys').execute()
  await db.schema.alterTable('users').dropColumn('staff_role').execute()
}
