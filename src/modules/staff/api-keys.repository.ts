import type { Insertable, Kysely, Transaction } from 'kysely'
import type { ApiKeyRow, ApiKeysTable, Database } from '../../db/database.js'

type Db = Kysely<Database> | Transaction<Database>

/** A page of keys, newest first, revoked ones included. */
export async function listApiKeys(db: Db, page: { limit: number; offset: number }): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute()
}

/** How many keys there are, before paging (X-Total-Count). */
export async function countApiKeys(db: Db): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function findApiKeyById(db: Db, id: number): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The key a presented secret names by its lookup id: what the authentication needs of it. */
export async function findApiKeyByLookupId(db: Db, lookupId: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'name', 'staff_role', 'secret_hash', 'expires_at', 'last_used_at', 'revoked_at'])
    .where('lookup_id', '=', lookupId)
    .executeTakeFirst()
}

export async function insertApiKey(db: Db, row: Insertable<ApiKeysTable>): Promise<ApiKeyRow> {
  return db.insertInto('api_keys').values(row).returningAll().executeTakeFirstOrThrow()
}

/** A new secret for a key that is not revoked (one statement, so a revocation cannot slip in between); undefined otherwise. */
export async function replaceApiKeySecret(db: Db, id: number, secret: { lookup_id: string; secret_hash: string }): Promise<ApiKeyRow | undefined> {
  return db.updateTable('api_keys').set(secret).where('id', '=', id).where('revoked_at', 'is', null).returningAll().executeTakeFirst()
}

/** Revokes the key unless it already is (its first revocation time stays); the row is kept. */
export async function revokeApiKey(db: Db, id: number, now: string): Promise<void> {
  await db.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute()
}

/**
 * Records a use: `last_used_at` moves only when it is unset or no later than `staleBefore` (a minute ago), so instances
 * using the key at once write it once a minute between them.
 */
export async function touchApiKey(db: Db, id: number, now: string, staleBefore: string): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', staleBefore)]))
    .execute()
}
