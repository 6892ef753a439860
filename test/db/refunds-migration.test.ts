import { type Kysely, Migrator, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrations } from '../../src/db/migrate.js'
import { openTestDatabase } from '../helpers/app.js'

// The refunds migration on a shop with a paid order and a refund (the cancel's, from before refunds by line): seeded
// at the schema before it, migrated up (the refund kept, settled, with no shipping and no tax), used (a refund by
// line with its items and key), taken down (everything as it was, schema included) and up again.

const REFUNDS = '2026-12-02T0200-refunds'
// The migration just before it: the shop as it was.
const BEFORE = Object.keys(migrations)[Object.keys(migrations).indexOf(REFUNDS) - 1]!
const now = '2026-12-01T10:00:00.000Z'

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

const keyOf: Record<string, string> = { users: 'id', orders: 'id', order_items: 'id', payments: 'order_id', refunds: 'id' }

async function dataOf(db: Kysely<any>): Promise<Record<string, Row[]>> {
  const data: Record<string, Row[]> = {}
  for (const [table, key] of Object.entries(keyOf)) data[table] = await db.selectFrom(table).selectAll().orderBy(key).execute()
  return data
}

/** The schema, as the database describes it (as test/db/catalog-migration.test.ts reads it). */
async function schemaOf(db: Kysely<any>): Promise<Row[]> {
  if (!dialectIsPg) {
    const { rows } = await sql<Row>`select type, name, tbl_name, sql from sqlite_master
      where name not like 'kysely%' and name <> 'sqlite_sequence' order by type, name`.execute(db)
    return rows.map((row) => ({
      ...row,
      sql:
        typeof row.sql === 'string'
          ? row.sql
              .toLowerCase()
              .replaceAll('"', '')
              .replace(/\s+/g, ' ')
              .replace(/ ?\( ?/g, '(')
              .replace(/ ?\) ?/g, ')')
          : null,
    }))
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

async function insert(table: string, values: Row): Promise<number> {
  const row = await raw.insertInto(table).values(values).returning('id').executeTakeFirstOrThrow()
  return Number(row.id)
}

const ids = {} as Record<'ana' | 'order' | 'line' | 'refund', number>
let seeded: Record<string, Row[]>
let schemaBefore: Row[]

/** A customer, a paid order of 2 units with shipping, partly refunded (10.00) the old way. */
async function seedShop(): Promise<void> {
  ids.ana = await insert('users', {
    name: 'Ana',
    email: 'ana@shop.test',
    password_hash: 'x',
    role: 'customer',
    created_at: now,
    updated_at: now,
    credentials_changed_at: now,
  })
  ids.order = await insert('orders', {
    user_id: ids.ana,
    total_cents: 4488,
    subtotal_cents: 3998,
    shipping_cents: 490,
    status: 'paid',
    created_at: now,
    updated_at: now,
  })
  ids.line = await insert('order_items', {
    order_id: ids.order,
    product_id: 1,
    variant_id: 1,
    quantity: 2,
    price_cents: 1999,
    name: 'Taza',
    total_cents: 3998,
    tax_cents: 0,
  })
  await raw
    .insertInto('payments')
    .values({
      order_id: ids.order,
      provider: 'stripe',
      status: 'paid',
      amount_cents: 4488,
      currency: 'EUR',
      created_at: now,
      updated_at: now,
      refunded_cents: 1000,
    })
    .execute()
  ids.refund = await insert('refunds', {
    order_id: ids.order,
    amount_cents: 1000,
    provider: 'stripe',
    provider_ref: 'ch_1',
    reason: 'charge.refunded',
    actor_type: 'system',
    actor_id: null,
    actor_name: null,
    created_at: now,
  })
}

describe(`migration ${REFUNDS}`, () => {
  it('keeps every refund, settled, with no shipping and no tax', async () => {
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined()
    await seedShop()
    seeded = await dataOf(raw)
    schemaBefore = await schemaOf(raw)

    const up = await migrator.migrateTo(REFUNDS)
    expect(up.error).toBeUndefined()
    expect(up.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[REFUNDS, 'Up', 'Success']])
    const data = await dataOf(raw)
    expect(data.refunds).toEqual(seeded.refunds!.map((r) => ({ ...r, shipping_cents: 0, tax_cents: 0, pending_at: null })))
    for (const table of ['users', 'orders', 'order_items', 'payments']) expect(data[table]).toEqual(seeded[table])
  })

  it('holds refunds by line: items per line (unique per refund), keys per order (unique), cascading with the order', async () => {
    const refund = await insert('refunds', {
      order_id: ids.order,
      amount_cents: 1999,
      provider: 'stripe',
      provider_ref: null,
      reason: null,
      actor_type: 'user',
      actor_id: ids.ana,
      actor_name: 'Ana',
      created_at: now,
      shipping_cents: 0,
      tax_cents: 0,
      pending_at: now,
    })
    await raw
      .insertInto('refund_items')
      .values({ refund_id: refund, order_item_id: ids.line, quantity: 1, amount_cents: 1999, tax_cents: 0, restock: 1 })
      .execute()
    await expect(
      raw.insertInto('refund_items').values({ refund_id: refund, order_item_id: ids.line, quantity: 1, amount_cents: 1, tax_cents: 0 }).execute(),
    ).rejects.toThrow()
    await raw.insertInto('refund_keys').values({ order_id: ids.order, key: 'k-1', refund_id: refund, created_at: now }).execute()
    await expect(raw.insertInto('refund_keys').values({ order_id: ids.order, key: 'k-1', refund_id: null, created_at: now }).execute()).rejects.toThrow()
    const key = await raw.selectFrom('refund_keys').selectAll().executeTakeFirstOrThrow()
    expect(key).toMatchObject({ attempt: 1, refund_id: refund })
    // Dropping the refund (a refusal) leaves its items gone and the key without a refund.
    await raw.deleteFrom('refunds').where('id', '=', refund).execute()
    expect(await raw.selectFrom('refund_items').selectAll().execute()).toEqual([])
    expect((await raw.selectFrom('refund_keys').selectAll().executeTakeFirstOrThrow()).refund_id).toBeNull()
  })

  it('goes down to the schema and rows it found, and up again', async () => {
    await raw.deleteFrom('refund_keys').execute()
    const down = await migrator.migrateTo(BEFORE)
    expect(down.error).toBeUndefined()
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[REFUNDS, 'Down', 'Success']])
    expect(await schemaOf(raw)).toEqual(schemaBefore)
    expect(await dataOf(raw)).toEqual(seeded)
    expect((await migrator.migrateTo(REFUNDS)).error).toBeUndefined()
    expect((await dataOf(raw)).refunds).toHaveLength(1)
  })
})
