import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Kysely, sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../helpers/app.js'
import { migrationBefore, type Row, useMigrationDatabase } from '../helpers/migrations.js'
import { bearer, makeUser } from '../helpers/factories.js'

// The guest-orders migration on a shop with orders: seeded at the schema before it, migrated up (every order an
// account order, rows and ids kept), used, refused going down while a guest order exists, taken down (everything as
// it was, schema included) and up again.

const GUEST_ORDERS = '2026-12-01T0200-guest-orders'
// The migration just before it: the shop as it was.
const BEFORE = migrationBefore(GUEST_ORDERS)
const now = '2026-11-30T10:00:00.000Z'

const migrating = useMigrationDatabase()

const keyOf: Record<string, string> = { users: 'id', orders: 'id', order_items: 'id', payments: 'order_id', idempotency_keys: 'order_id', order_events: 'id' }

async function dataOf(db: Kysely<any>): Promise<Record<string, Row[]>> {
  const data: Record<string, Row[]> = {}
  for (const [table, key] of Object.entries(keyOf)) data[table] = await db.selectFrom(table).selectAll().orderBy(key).execute()
  return data
}

/** Where the ids of orders go on from. */
async function orderSequence(db: Kysely<any>): Promise<Row[]> {
  if (!migrating.isPg) return (await sql<Row>`select name, seq from sqlite_sequence where name = 'orders'`.execute(db)).rows
  return (await sql<Row>`select last_value, is_called from orders_id_seq`.execute(db)).rows
}

async function insert(table: string, values: Row): Promise<number> {
  const row = await migrating.raw.insertInto(table).values(values).returning('id').executeTakeFirstOrThrow()
  return Number(row.id)
}

const ids = {} as Record<'ana' | 'bea' | 'pending' | 'paid' | 'deleted' | 'anaGone', number>
let seeded: Record<string, Row[]>
let sequenceBefore: Row[]
let schemaBefore: Row[]

/** Two customers (one deleted since), their orders (one with a payment, one with an idempotency key), the last order deleted. */
async function seedShop(): Promise<void> {
  const user = (name: string) => ({
    name,
    email: `${name.toLowerCase()}@shop.test`,
    password_hash: 'x',
    role: 'customer',
    created_at: now,
    updated_at: now,
    credentials_changed_at: now,
  })
  ids.ana = await insert('users', user('Ana'))
  ids.bea = await insert('users', user('Bea'))
  const order = (userId: number, totalCents: number, status: string) => ({ user_id: userId, total_cents: totalCents, status, created_at: now, updated_at: now })
  ids.pending = await insert('orders', order(ids.ana, 2250, 'pending'))
  await migrating.raw
    .insertInto('order_items')
    .values({ order_id: ids.pending, product_id: 1, variant_id: 1, quantity: 1, price_cents: 2250, name: 'Café molido' })
    .execute()
  await migrating.raw.insertInto('idempotency_keys').values({ user_id: ids.ana, key: 'checkout-1', order_id: ids.pending, created_at: now }).execute()
  ids.paid = await insert('orders', {
    ...order(ids.bea, 1490, 'paid'),
    subtotal_cents: 990,
    shipping_cents: 500,
    shipping_address: JSON.stringify({
      fullName: 'Bea',
      line1: 'Calle 1',
      line2: null,
      city: 'Madrid',
      region: null,
      postalCode: '28001',
      country: 'ES',
      phone: null,
    }),
    shipping_method: JSON.stringify({ id: 1, name: 'Correos', price: 5 }),
    note: 'Por la tarde',
  })
  await migrating.raw
    .insertInto('order_items')
    .values({ order_id: ids.paid, product_id: 2, variant_id: 2, quantity: 1, price_cents: 990, name: 'Facets' })
    .execute()
  await migrating.raw
    .insertInto('payments')
    .values({ order_id: ids.paid, provider: 'manual', status: 'paid', amount_cents: 1490, currency: 'EUR', created_at: now, updated_at: now, paid_manually: 1 })
    .execute()
  await migrating.raw
    .insertInto('order_events')
    .values({ order_id: ids.paid, type: 'order.status_changed', at: now, actor_type: 'system', actor_id: null, actor_name: null, data: '{}' })
    .execute()
  // An order of a user deleted since (orders have no foreign key to users: kept for the books).
  const gone = await insert('users', user('Gone'))
  ids.anaGone = await insert('orders', order(gone, 700, 'delivered'))
  await migrating.raw.deleteFrom('users').where('id', '=', gone).execute()
  // The last order made, deleted: its id is never given again.
  ids.deleted = await insert('orders', order(ids.bea, 100, 'cancelled'))
  await migrating.raw.deleteFrom('orders').where('id', '=', ids.deleted).execute()
}

describe(`migration ${GUEST_ORDERS}`, () => {
  it('makes every existing order an account order, rows and ids kept; idempotency keys a user’s', async () => {
    expect((await migrating.migrator.migrateTo(BEFORE)).error).toBeUndefined()
    expect(await migrating.applied()).not.toContain(GUEST_ORDERS)
    await seedShop()
    seeded = await dataOf(migrating.raw)
    sequenceBefore = await orderSequence(migrating.raw)
    schemaBefore = await migrating.schemaOf()

    const up = await migrating.migrator.migrateTo(GUEST_ORDERS)
    expect(up.error).toBeUndefined()
    expect(up.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[GUEST_ORDERS, 'Up', 'Success']])

    const data = await dataOf(migrating.raw)
    expect(data.orders).toEqual(seeded.orders!.map((o) => ({ ...o, guest: 0, email: null })))
    expect(data.idempotency_keys).toEqual(seeded.idempotency_keys!.map((k) => ({ ...k, cart_token_hash: null })))
    for (const table of ['users', 'order_items', 'payments', 'order_events']) expect(data[table]).toEqual(seeded[table])
    // The rebuilt table goes on from the ids it had reached.
    expect(await orderSequence(migrating.raw)).toEqual(sequenceBefore)

    // Every index of orders is there, and the e-mail's.
    const schema = await migrating.schemaOf()
    const indexes = schema.filter((row) => (migrating.isPg ? row.kind === 'index' && row.name === 'orders' : row.type === 'index' && row.tbl_name === 'orders'))
    expect(indexes.map((row) => (migrating.isPg ? row.detail : row.name)).sort()).toEqual(
      ['orders_created_idx', 'orders_email_idx', 'orders_status_idx', 'orders_user_idx', ...(migrating.isPg ? ['orders_pkey'] : [])].sort(),
    )
  })

  it('holds guest orders and keeps the two kinds apart; keys are a user’s or a cart’s, unique in each', async () => {
    const guestId = await insert('orders', {
      user_id: null,
      guest: 1,
      email: 'Invitada@shop.test',
      total_cents: 500,
      status: 'pending',
      created_at: now,
      updated_at: now,
    })
    expect(guestId).toBeGreaterThan(ids.deleted)
    // Explicit ids: a refused insert then takes no number of PostgreSQL's sequence.
    const refused = [
      { id: 9001, user_id: null, guest: 1, email: null },
      { id: 9002, user_id: null, guest: 0, email: null },
      { id: 9003, user_id: ids.ana, guest: 1, email: 'x@shop.test' },
      { id: 9004, user_id: ids.ana, guest: 0, email: 'ana@shop.test' },
    ]
    for (const values of refused) {
      await expect(
        migrating.raw
          .insertInto('orders')
          .values({ ...values, total_cents: 1, status: 'pending', created_at: now, updated_at: now })
          .execute(),
      ).rejects.toThrow()
    }

    await migrating.raw
      .insertInto('idempotency_keys')
      .values({ user_id: null, cart_token_hash: 'hash-1', key: 'k', order_id: guestId, created_at: now })
      .execute()
    const second = await insert('orders', {
      user_id: null,
      guest: 1,
      email: 'otro@shop.test',
      total_cents: 500,
      status: 'pending',
      created_at: now,
      updated_at: now,
    })
    // The same key in the same cart, or in the same user's scope, is taken; both scopes or neither are refused.
    for (const values of [
      { user_id: null, cart_token_hash: 'hash-1', key: 'k' },
      { user_id: ids.ana, cart_token_hash: null, key: 'checkout-1' },
      { user_id: ids.ana, cart_token_hash: 'hash-2', key: 'k2' },
      { user_id: null, cart_token_hash: null, key: 'k3' },
    ]) {
      await expect(
        migrating.raw
          .insertInto('idempotency_keys')
          .values({ ...values, order_id: second, created_at: now })
          .execute(),
      ).rejects.toThrow()
    }
    // The same key in another cart is another key.
    await migrating.raw
      .insertInto('idempotency_keys')
      .values({ user_id: null, cart_token_hash: 'hash-2', key: 'k', order_id: second, created_at: now })
      .execute()
    // Foreign keys still hold after the rebuild: an order's lines and key go with it.
    await migrating.raw.insertInto('order_items').values({ order_id: second, product_id: 1, quantity: 1, price_cents: 500, name: 'x' }).execute()
    if (!migrating.isPg) await sql`pragma foreign_keys = on`.execute(migrating.raw)
    await migrating.raw.deleteFrom('orders').where('id', '=', second).execute()
    expect(await migrating.raw.selectFrom('idempotency_keys').select('order_id').where('order_id', '=', second).execute()).toEqual([])
    expect(await migrating.raw.selectFrom('order_items').select('id').where('order_id', '=', second).execute()).toEqual([])
  })

  it('serves the migrated orders: an account order’s e-mail is its user’s, a deleted user’s is null', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'shop-test-'))
    const app = await buildApp(testConfig({}, dataDir), { database: migrating.opened.handle, logger: false })
    try {
      const admin = await makeUser(app, 'admin')
      const res = await app.inject({ url: '/orders?guest=false', headers: bearer(admin) })
      expect(res.statusCode).toBe(200)
      const orders = (res.json() as Row[]).map((o) => ({ id: o.id, userId: o.userId, email: o.email, guest: o.guest }))
      expect(orders).toEqual([
        { id: ids.anaGone, userId: expect.any(Number), email: null, guest: false },
        { id: ids.paid, userId: ids.bea, email: 'bea@shop.test', guest: false },
        { id: ids.pending, userId: ids.ana, email: 'ana@shop.test', guest: false },
      ])
      const guests = await app.inject({ url: '/orders?guest=true', headers: bearer(admin) })
      expect((guests.json() as Row[]).map((o) => ({ userId: o.userId, email: o.email, customer: o.customer }))).toEqual([
        { userId: null, email: 'Invitada@shop.test', customer: null },
      ])
    } finally {
      await app.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('refuses to go down while a guest order exists, changing nothing; without one, goes down to the shop as it was, and up again', async () => {
    // The service ran the later migrations too: back to this one first.
    expect((await migrating.migrator.migrateTo(GUEST_ORDERS)).error).toBeUndefined()
    const schemaUp = await migrating.schemaOf()
    const dataUp = await dataOf(migrating.raw)
    const refused = await migrating.migrator.migrateDown()
    expect(String(refused.error)).toContain('guest orders migration down: 1 guest orders exist')
    expect(await migrating.applied()).toContain(GUEST_ORDERS)
    expect(await migrating.schemaOf()).toEqual(schemaUp)
    expect(await dataOf(migrating.raw)).toEqual(dataUp)

    await migrating.raw.deleteFrom('orders').where('guest', '=', 1).execute()
    // What the tests above left: the admin the service made, and the ids the sequence gave.
    await migrating.raw.deleteFrom('users').where('role', '=', 'admin').execute()
    const sequence = await orderSequence(migrating.raw)
    const down = await migrating.migrator.migrateDown()
    expect(down.error).toBeUndefined()
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[GUEST_ORDERS, 'Down', 'Success']])
    expect(await dataOf(migrating.raw)).toEqual(seeded)
    expect(await migrating.schemaOf()).toEqual(schemaBefore)
    expect(await orderSequence(migrating.raw)).toEqual(sequence)

    expect((await migrating.migrator.migrateTo(GUEST_ORDERS)).error).toBeUndefined()
    expect((await dataOf(migrating.raw)).orders).toEqual(seeded.orders!.map((o) => ({ ...o, guest: 0, email: null })))
  })
})
