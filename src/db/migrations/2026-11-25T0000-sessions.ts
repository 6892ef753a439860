import { type Kysely, PostgresAdapter } from 'kysely'

// Sessions (src/modules/sessions): one row per log-in, its refresh tokens (opaque, stored as SHA-256
// hashes, rotated on each use), and the password-reset links (also stored hashed, single use).

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const id = isPg ? 'serial' : 'integer'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('sessions')
    .addColumn('id', id, primaryId)
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    // The user's credentials_changed_at the session lives under: when that moves on (role, password,
    // logout-all), the session has ended. A password change made by the session itself carries it over.
    .addColumn('credentials_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('ended_at', 'text')
    // logout, logout-all, password, reset, reuse.
    .addColumn('ended_reason', 'text')
    .execute()
  await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute()

  await db.schema
    .createTable('refresh_tokens')
    .addColumn('id', id, primaryId)
    .addColumn('session_id', 'integer', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    // Set once, by the one refresh that wins the conditional update.
    .addColumn('spent_at', 'text')
    .execute()
  await db.schema.createIndex('refresh_tokens_session').on('refresh_tokens').column('session_id').execute()

  await db.schema
    .createTable('password_resets')
    .addColumn('id', id, primaryId)
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    // Set when the link is used, or when another link of the user was used (every other link ends).
    .addColumn('used_at', 'text')
    .execute()
  await db.schema.createIndex('password_resets_user').on('password_resets').column('user_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('password_resets').execute()
  await db.schema.dropTable('refresh_tokens').execute()
  await db.schema.dropTable('sessions').execute()
}
