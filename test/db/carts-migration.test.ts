import { type Kysely, type Migration, Migrator } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { migrations } from '../../src/db/migrate.js'
import { insertDefaultVariant } from '../../src/modules/catalog/variants.repository.js'
import { openTestDatabase, testConfig } from '../helpers/app.js'
import { productRow } from '../helpers/catalog.js'
import { bearer } from '../helpers/factories.js'

// The carts migration on a shop with data: every user with lines gets a cart row, each line keeps its id and gets
// its cart, and the service reads the carts as before. `down` goes back to lines per user (guest carts go), and up
// again.

const CARTS = '2026-12-01T0300-carts'
const upToCarts: Record<string, Migration> = Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= CARTS))

let opened: Awaited<ReturnType<typeof openTestDatabase>>
beforeAll(async () => {
  opened = await openTestDatabase()
})
afterAll(async () => {
  await opened.drop()
})

function migrator(db: Kysely<any>, schema: string | undefined) {
  return new Migrator({ db, provider: { getMigrations: async () => upToCarts }, ...(schema ? { migrationTableSchema: schema } : {}) })
}

describe(`migration ${CARTS}`, () => {
  it('gives each user with lines a cart, keeps the lines and their ids, goes down and up again', async () => {
    const { db, schema } = opened.handle
    const raw = db as unknown as Kysely<any>
    const m = migrator(raw, schema)
    expect((await m.migrateToLatest()).error).toBeUndefined()
    // Down to the schema before carts, where the shop's data is seeded.
    const down = await m.migrateDown()
    expect(down.error).toBeUndefined()
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[CARTS, 'Down', 'Success']])

    const now = '2026-11-20T10:00:00.000Z'
    const users = []
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) {
      users.push(
        await raw
          .insertInto('users')
          .values({ name: 'U', email, password_hash: 'x', role: 'customer', created_at: now, updated_at: now, credentials_changed_at: now })
          .returning('id')
          .executeTakeFirstOrThrow(),
      )
    }
    const products = []
    for (let i = 0; i < 2; i++) {
      const row = await db
        .insertInto('products')
        .values(productRow({ priceCents: 250, stock: 9 }))
        .returningAll()
        .executeTakeFirstOrThrow()
      await insertDefaultVariant(db, row)
      products.push(row)
    }
    const variantOf = async (productId: number) =>
      (await raw.selectFrom('product_variants').select('id').where('product_id', '=', productId).executeTakeFirstOrThrow()).id
    const lines = [
      { user_id: users[0]!.id, product_id: products[0]!.id, variant_id: await variantOf(products[0]!.id), quantity: 2, created_at: now, updated_at: now },
      { user_id: users[0]!.id, product_id: products[1]!.id, variant_id: await variantOf(products[1]!.id), quantity: 1, created_at: now, updated_at: now },
      { user_id: users[1]!.id, product_id: products[1]!.id, variant_id: await variantOf(products[1]!.id), quantity: 3, created_at: now, updated_at: now },
    ]
    const inserted = await raw.insertInto('cart_items').values(lines).returning('id').execute()

    expect((await m.migrateToLatest()).error).toBeUndefined()
    const carts = await raw.selectFrom('carts').select(['id', 'user_id', 'token_hash', 'expires_at']).orderBy('user_id').execute()
    expect(carts.map((c) => [c.user_id, c.token_hash, c.expires_at])).toEqual([
      [users[0]!.id, null, null],
      [users[1]!.id, null, null],
    ])
    const after = await raw.selectFrom('cart_items').select(['id', 'cart_id', 'user_id', 'quantity']).orderBy('id').execute()
    expect(after).toEqual([
      { id: inserted[0]!.id, cart_id: carts[0]!.id, user_id: users[0]!.id, quantity: 2 },
      { id: inserted[1]!.id, cart_id: carts[0]!.id, user_id: users[0]!.id, quantity: 1 },
      { id: inserted[2]!.id, cart_id: carts[1]!.id, user_id: users[1]!.id, quantity: 3 },
    ])

    // A guest cart exists when going down: it goes, the users' lines stay.
    const guest = await raw
      .insertInto('carts')
      .values({ token_hash: 'h', created_at: now, updated_at: now, expires_at: '2099-01-01T00:00:00.000Z' })
      .returning('id')
      .executeTakeFirstOrThrow()
    await raw
      .insertInto('cart_items')
      .values({
        cart_id: guest.id,
        user_id: null,
        product_id: products[0]!.id,
        variant_id: lines[0]!.variant_id,
        quantity: 1,
        created_at: now,
        updated_at: now,
      })
      .execute()
    expect((await m.migrateDown()).error).toBeUndefined()
    expect(await raw.selectFrom('cart_items').select(['id', 'user_id', 'quantity']).orderBy('id').execute()).toEqual(
      after.map(({ id, user_id, quantity }) => ({ id, user_id, quantity })),
    )
    expect((await m.migrateToLatest()).error).toBeUndefined()

    // The service (which runs the rest of the migrations) shows the first user's cart as before.
    const app = await buildApp(testConfig(), { database: opened.handle, logger: false, catalogCache: false })
    try {
      const token = app.signToken({ id: users[0]!.id, role: 'customer' })
      const res = await app.inject({ method: 'GET', url: '/cart', headers: bearer({ token }) })
      expect(res.statusCode).toBe(200)
      expect(res.json()).toMatchObject({
        subtotal: 7.5,
        total: 7.5,
        items: [
          { id: inserted[0]!.id, quantity: 2 },
          { id: inserted[1]!.id, quantity: 1 },
        ],
      })
      // A new line goes on from the ids the old table had reached.
      const added = await app.inject({
        method: 'POST',
        url: '/cart/add',
        headers: { authorization: `Bearer ${app.signToken({ id: users[2]!.id, role: 'customer' })}` },
        payload: { productId: products[0]!.id, quantity: 1 },
      })
      expect(added.statusCode).toBe(201)
      expect(added.json().id).toBeGreaterThan(inserted[2]!.id + 1)
    } finally {
      await app.close()
    }
  })
})
