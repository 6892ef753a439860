import { type Kysely, type Migration, Migrator, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrations } from '../../src/db/migrate.js'
import { dialect, openTestDatabase } from '../helpers/app.js'

// The discount codes' migration: its tables and rules as the database holds them (a code unique ignoring case,
// one redemption per order), then down (the tables gone, the rest untouched) and up again. The redemptions' table
// lives until 2026-12-10T0000-redemptions-on-orders (test/db/redemptions-on-orders-migration.test.ts).

const NAME = '2026-12-01T0100-discount-codes'

function migrator(db: Kysely<any>, schema: string | undefined, list: Record<string, Migration>) {
  return new Migrator({ db, provider: { getMigrations: async () => list }, ...(schema ? { migrationTableSchema: schema } : {}) })
}

let opened: Awaited<ReturnType<typeof openTestDatabase>>

beforeAll(async () => {
  opened = await openTestDatabase()
})
afterAll(async () => {
  await opened.drop()
})

async function tableNames(db: Kysely<any>): Promise<string[]> {
  if (dialect === 'postgres') {
    const { rows } = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(db)
    return rows.map((r) => r.name).sort()
  }
  const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)
  return rows.map((r) => r.name).sort()
}

describe(`migration ${NAME}`, () => {
  it('creates the tables with their rules', async () => {
    const { db, schema } = opened.handle
    const raw = db as unknown as Kysely<any>
    // As this migration left them (a later one moves the redemptions onto their orders).
    expect((await migrator(raw, schema, migrations).migrateTo(NAME)).error).toBeUndefined()
    const now = '2026-12-01T10:00:00.000Z'
    const code = { type: 'percent', value: 1000, created_at: now, updated_at: now }
    const row = await raw
      .insertInto('discount_codes')
      .values({ code: 'Summer', ...code })
      .returningAll()
      .executeTakeFirstOrThrow()
    expect(row).toMatchObject({ usage_count: 0, product_ids: '[]', category_ids: '[]', active: 1, usage_limit: null, min_subtotal_cents: null })
    // Unique ignoring case.
    await expect(
      raw
        .insertInto('discount_codes')
        .values({ code: 'SUMMER', ...code })
        .execute(),
    ).rejects.toThrow()
    // The counter never goes below 0; a type is one of three.
    await expect(raw.updateTable('discount_codes').set({ usage_count: -1 }).execute()).rejects.toThrow()
    await expect(
      raw
        .insertInto('discount_codes')
        .values({ code: 'GIFT', ...code, type: 'gift' })
        .execute(),
    ).rejects.toThrow()

    const user = await raw
      .insertInto('users')
      .values({ name: 'A', email: 'a@example.com', password_hash: 'x', role: 'customer', created_at: now, updated_at: now, credentials_changed_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    const order = await raw
      .insertInto('orders')
      .values({ user_id: user.id, total_cents: 100, status: 'pending', created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    const redemption = { code_id: row.id, order_id: order.id, user_id: user.id, email: 'a@example.com', amount_cents: 10, created_at: now }
    await raw.insertInto('discount_redemptions').values(redemption).execute()
    // One redemption per order; a used code cannot be deleted under it.
    await expect(raw.insertInto('discount_redemptions').values(redemption).execute()).rejects.toThrow()
    await expect(raw.deleteFrom('discount_codes').where('id', '=', row.id).execute()).rejects.toThrow()
    // Deleting the user keeps the redemption (it still counts by e-mail).
    await raw.deleteFrom('users').where('id', '=', user.id).execute()
    expect(await raw.selectFrom('discount_redemptions').select('user_id').execute()).toEqual([{ user_id: user.id }])
  })

  it('goes down (its tables gone, nothing else) and up again', async () => {
    const { db, schema } = opened.handle
    const raw = db as unknown as Kysely<any>
    const m = migrator(raw, schema, migrations)
    // Later migrations come after this one: down past them first (none yet: the test before stopped here).
    expect((await m.migrateTo(NAME)).error).toBeUndefined()
    const withTables = await tableNames(raw)
    const down = await m.migrateDown()
    expect(down.error).toBeUndefined()
    expect(down.results?.[0]?.migrationName).toBe(NAME)
    expect(await tableNames(raw)).toEqual(withTables.filter((name) => name !== 'discount_codes' && name !== 'discount_redemptions'))
    expect((await m.migrateTo(NAME)).error).toBeUndefined()
    expect(await tableNames(raw)).toEqual(expect.arrayContaining(['discount_codes', 'discount_redemptions']))
    // The redemptions' table is gone at the latest schema (2026-12-10T0000-redemptions-on-orders).
    expect((await m.migrateToLatest()).error).toBeUndefined()
    expect(await tableNames(raw)).toContain('discount_codes')
    expect(await tableNames(raw)).not.toContain('discount_redemptions')
  })
})
