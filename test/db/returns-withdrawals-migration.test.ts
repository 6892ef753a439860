import { type Kysely, Migrator, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrations } from '../../src/db/migrate.js'
import { openTestDatabase } from '../helpers/app.js'

// The returns-and-withdrawals migration on a shop with an order: migrated up (the order's rows untouched), used
// (a withdrawal and the return made from it), taken down (the schema exactly as before, the order kept) and up again.

const RETURNS = '2026-12-02T0300-returns-withdrawals'
// The migration just before it: the shop as it was.
const BEFORE = Object.keys(migrations)[Object.keys(migrations).indexOf(RETURNS) - 1]!
const now = '2026-12-02T10:00:00.000Z'

let opened: Awaited<ReturnType<typeof openTestDatabase>>
let raw: Kysely<any>
let migrator: Migrator
let dialectIsPg: boolean

beforeAll(async () => {
  opened = await openTestDatabase()
  raw = opened.handle.db as unknown as Kysely<any>
  dialectIsPg = opened.handle.dialect === 'postgres'
  const schema = opened.handle.schema
  migrator = new Migrator({ db: raw, provider: { getMigrations: async () => migrations }, ...(schema ? { migrationTableSchema: schema } : {}) })
})
afterAll(async () => {
  await opened.drop()
})

type Row = Record<string, any>

/** The schema, as the database describes it (as test/db/guest-orders-migration.test.ts reads it). */
async function schemaOf(db: Kysely<any>): Promise<Row[]> {
  if (!dialectIsPg) {
    const { rows } = await sql<Row>`select type, name, tbl_name, sql from sqlite_master
      where name not like 'kysely%' and name <> 'sqlite_sequence' order by type, name`.execute(db)
    return rows
  }
  const schema = opened.handle.schema ?? 'public'
  const queries = [
    sql<Row>`select 'column' as kind, table_name as name, column_name as detail, data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') as def
      from information_schema.columns where table_schema = ${schema} and table_name not like 'kysely%'`,
    sql<Row>`select 'index' as kind, tablename as name, indexname as detail, indexdef as def from pg_indexes
      where schemaname = ${schema} and tablename not like 'kysely%'`,
    sql<Row>`select 'constraint' as kind, c.relname as name, k.conname as detail, pg_get_constraintdef(k.oid) as def
      from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relname not like 'kysely%'`,
  ]
  const rows: Row[] = []
  for (const query of queries) rows.push(...(await query.execute(db)).rows)
  const order = (row: Row) => `${row.kind}\u0000${row.name}\u0000${row.detail}`
  return rows.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0))
}

async function migrateTo(name: string): Promise<void> {
  const { error } = await migrator.migrateTo(name)
  if (error) throw error instanceof Error ? error : new Error('migration failed', { cause: error })
}

describe(`migration ${RETURNS}`, () => {
  let schemaBefore: Row[]
  let orderId: number
  let lineId: number

  it('adds returns, return_items and withdrawals, leaving the orders as they were', async () => {
    await migrateTo(BEFORE)
    schemaBefore = await schemaOf(raw)
    orderId = Number(
      (
        await raw
          .insertInto('orders')
          .values({ user_id: null, guest: 1, email: 'ana@shop.test', total_cents: 1000, status: 'delivered', created_at: now, updated_at: now })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id,
    )
    lineId = Number(
      (
        await raw
          .insertInto('order_items')
          .values({ order_id: orderId, product_id: 1, variant_id: 1, quantity: 2, price_cents: 500, name: 'Taza', fulfilled_quantity: 2 })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id,
    )
    const ordersBefore = await raw.selectFrom('order_items').selectAll().execute()
    await migrateTo(RETURNS)
    expect(await raw.selectFrom('order_items').selectAll().execute()).toEqual(ordersBefore)

    const items = JSON.stringify([{ orderItemId: lineId, name: 'Taza', variantTitle: null, quantity: 2 }])
    const withdrawal = await raw
      .insertInto('withdrawals')
      .values({
        order_id: orderId,
        name: 'Ana',
        email: 'ana@shop.test',
        items,
        statement: '…',
        received_at: now,
        deadline: null,
        ip: '127.0.0.1',
        user_agent: 'x',
        request_hash: 'h',
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    const ret = await raw
      .insertInto('returns')
      .values({ order_id: orderId, status: 'approved', source: 'withdrawal', reason: null, withdrawal_id: withdrawal.id, created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    await raw.insertInto('return_items').values({ return_id: ret.id, order_item_id: lineId, quantity: 2, reason: null }).execute()
    expect(await raw.selectFrom('return_items').selectAll().execute()).toEqual([
      { return_id: ret.id, order_item_id: lineId, quantity: 2, reason: null, received_quantity: null },
    ])
    // One return per withdrawal.
    await expect(
      raw
        .insertInto('returns')
        .values({ order_id: orderId, status: 'approved', source: 'withdrawal', reason: null, withdrawal_id: withdrawal.id, created_at: now, updated_at: now })
        .execute(),
    ).rejects.toThrow()
    // Any number of returns without one.
    for (let i = 0; i < 2; i++) {
      await raw
        .insertInto('returns')
        .values({ order_id: orderId, status: 'requested', source: 'customer', reason: null, created_at: now, updated_at: now })
        .execute()
    }
  })

  it('goes down to the schema before it, keeping the order, and up again', async () => {
    await migrateTo(BEFORE)
    expect(await schemaOf(raw)).toEqual(schemaBefore)
    expect(await raw.selectFrom('order_items').select(['id', 'quantity']).execute()).toEqual([{ id: lineId, quantity: 2 }])
    await migrateTo(RETURNS)
    expect(await raw.selectFrom('returns').selectAll().execute()).toEqual([])
    expect(await raw.selectFrom('orders').select('id').execute()).toEqual([{ id: orderId }])
  })
})
