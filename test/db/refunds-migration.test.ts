import { type Kysely } from 'kysely'
import { describe, expect, it } from 'vitest'
import { migrationBefore, type Row, useMigrationDatabase } from '../helpers/migrations.js'

// The refunds migration on a shop with a paid order and a refund (the cancel's, from before refunds by line): seeded
// at the schema before it, migrated up (the refund kept, settled, with no shipping and no tax), used (a refund by
// line with its items and key), taken down (everything as it was, schema included) and up again.

const REFUNDS = '2026-12-02T0200-refunds'
// The migration just before it: the shop as it was.
const BEFORE = migrationBefore(REFUNDS)
const now = '2026-12-01T10:00:00.000Z'

const migrating = useMigrationDatabase()

const keyOf: Record<string, string> = { users: 'id', orders: 'id', order_items: 'id', payments: 'order_id', refunds: 'id' }

async function dataOf(db: Kysely<any>): Promise<Record<string, Row[]>> {
  const data: Record<string, Row[]> = {}
  for (const [table, key] of Object.entries(keyOf)) data[table] = await db.selectFrom(table).selectAll().orderBy(key).execute()
  return data
}

async function insert(table: string, values: Row): Promise<number> {
  const row = await migrating.raw.insertInto(table).values(values).returning('id').executeTakeFirstOrThrow()
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
  await migrating.raw
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
    expect((await migrating.migrator.migrateTo(BEFORE)).error).toBeUndefined()
    await seedShop()
    seeded = await dataOf(migrating.raw)
    schemaBefore = await migrating.schemaOf()

    const up = await migrating.migrator.migrateTo(REFUNDS)
    expect(up.error).toBeUndefined()
    expect(up.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[REFUNDS, 'Up', 'Success']])
    const data = await dataOf(migrating.raw)
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
    await migrating.raw
      .insertInto('refund_items')
      .values({ refund_id: refund, order_item_id: ids.line, quantity: 1, amount_cents: 1999, tax_cents: 0, restock: 1 })
      .execute()
    await expect(
      migrating.raw.insertInto('refund_items').values({ refund_id: refund, order_item_id: ids.line, quantity: 1, amount_cents: 1, tax_cents: 0 }).execute(),
    ).rejects.toThrow()
    await migrating.raw.insertInto('refund_keys').values({ order_id: ids.order, key: 'k-1', refund_id: refund, created_at: now }).execute()
    await expect(
      migrating.raw.insertInto('refund_keys').values({ order_id: ids.order, key: 'k-1', refund_id: null, created_at: now }).execute(),
    ).rejects.toThrow()
    const key = await migrating.raw.selectFrom('refund_keys').selectAll().executeTakeFirstOrThrow()
    expect(key).toMatchObject({ attempt: 1, refund_id: refund })
    // Dropping the refund (a refusal) leaves its items gone and the key without a refund.
    await migrating.raw.deleteFrom('refunds').where('id', '=', refund).execute()
    expect(await migrating.raw.selectFrom('refund_items').selectAll().execute()).toEqual([])
    expect((await migrating.raw.selectFrom('refund_keys').selectAll().executeTakeFirstOrThrow()).refund_id).toBeNull()
  })

  it('goes down to the schema and rows it found, and up again', async () => {
    await migrating.raw.deleteFrom('refund_keys').execute()
    const down = await migrating.migrator.migrateTo(BEFORE)
    expect(down.error).toBeUndefined()
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[REFUNDS, 'Down', 'Success']])
    expect(await migrating.schemaOf()).toEqual(schemaBefore)
    expect(await dataOf(migrating.raw)).toEqual(seeded)
    expect((await migrating.migrator.migrateTo(REFUNDS)).error).toBeUndefined()
    expect((await dataOf(migrating.raw)).refunds).toHaveLength(1)
  })
})
