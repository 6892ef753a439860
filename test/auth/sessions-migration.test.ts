import { type Kysely, type Migration, Migrator } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as initial from '../../src/db/migrations/2026-11-22T0000-initial.js'
import * as productNameOrder from '../../src/db/migrations/2026-11-23T0000-product-name-order.js'
import * as addressesShipping from '../../src/db/migrations/2026-11-24T0000-addresses-shipping.js'
import * as payments from '../../src/db/migrations/2026-11-24T0100-payments.js'
import * as sessions from '../../src/db/migrations/2026-11-25T0000-sessions.js'
import { openTestDatabase } from '../helpers/app.js'

// The sessions migration adds its three tables to a database with users, goes down without a trace, and up again;
// deleting a user takes their sessions, refresh tokens and reset links with it.

const migrations: Record<string, Migration> = {
  '2026-11-22T0000-initial': initial,
  '2026-11-23T0000-product-name-order': productNameOrder,
  '2026-11-24T0000-addresses-shipping': addressesShipping,
  '2026-11-24T0100-payments': payments,
  '2026-11-25T0000-sessions': sessions,
}

let opened: Awaited<ReturnType<typeof openTestDatabase>>

beforeAll(async () => {
  opened = await openTestDatabase()
})
afterAll(async () => {
  await opened.drop()
})

describe('migration 2026-11-25T0000-sessions', () => {
  it('goes up, down and up again; a deleted user takes their sessions, refresh tokens and reset links along', async () => {
    const { db, schema } = opened.handle
    const raw = db as unknown as Kysely<any>
    const migrator = new Migrator({ db: raw, provider: { getMigrations: async () => migrations }, ...(schema ? { migrationTableSchema: schema } : {}) })
    expect((await migrator.migrateToLatest()).error).toBeUndefined()
    const down = await migrator.migrateDown()
    expect(down.error).toBeUndefined()
    expect(down.results?.map((r) => r.migrationName)).toEqual(['2026-11-25T0000-sessions'])
    // On PostgreSQL the introspection sees every schema: only this database's own count.
    const tables = async () =>
      (await raw.introspection.getTables()).filter((table) => schema === undefined || table.schema === schema).map((table) => table.name)
    for (const table of ['sessions', 'refresh_tokens', 'password_resets']) expect(await tables()).not.toContain(table)
    expect((await migrator.migrateToLatest()).error).toBeUndefined()
    for (const table of ['sessions', 'refresh_tokens', 'password_resets']) expect(await tables()).toContain(table)

    const now = '2026-11-25T10:00:00.000Z'
    const user = await raw
      .insertInto('users')
      .values({ name: 'Gone', email: 'gone@example.com', password_hash: 'x', role: 'customer', created_at: now, updated_at: now, credentials_changed_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    const session = await raw
      .insertInto('sessions')
      .values({ user_id: user.id, credentials_at: now, created_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    await raw
      .insertInto('refresh_tokens')
      .values({ session_id: session.id, token_hash: 'a'.repeat(64), created_at: now, expires_at: now })
      .execute()
    await raw
      .insertInto('password_resets')
      .values({ user_id: user.id, token_hash: 'b'.repeat(64), created_at: now, expires_at: now })
      .execute()
    // A token hash is unique.
    await expect(
      raw
        .insertInto('password_resets')
        .values({ user_id: user.id, token_hash: 'b'.repeat(64), created_at: now, expires_at: now })
        .execute(),
    ).rejects.toThrow()
    await raw.deleteFrom('users').where('id', '=', user.id).execute()
    for (const table of ['sessions', 'refresh_tokens', 'password_resets']) {
      expect(await raw.selectFrom(table).selectAll().execute()).toEqual([])
    }
  })
})
