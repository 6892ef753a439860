import { type Kysely, type Migration, Migrator } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import * as initial from '../../src/db/migrations/2026-11-22T0000-initial.js'
import * as productNameOrder from '../../src/db/migrations/2026-11-23T0000-product-name-order.js'
import { migrations } from '../../src/db/migrate.js'
import { openTestDatabase, testConfig } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'

// Orders written before the addresses-and-shipping migration read exactly as before it, and their lines get the
// product's name when the product still exists. The migration also goes down and up again.

const before: Record<string, Migration> = { '2026-11-22T0000-initial': initial, '2026-11-23T0000-product-name-order': productNameOrder }
// Every migration of the service: it migrates to the latest at start-up.
const all: Record<string, Migration> = migrations

function migrator(db: Kysely<any>, schema: string | undefined, migrations: Record<string, Migration>) {
  return new Migrator({ db, provider: { getMigrations: async () => migrations }, ...(schema ? { migrationTableSchema: schema } : {}) })
}

/** A line written before variants and the breakdown were kept: its total is price × quantity, nothing else. */
function olderLine(total: number) {
  return {
    variantId: expect.any(Number),
    sku: null,
    variantTitle: null,
    options: [],
    taxClass: null,
    taxRate: 0,
    discount: 0,
    tax: 0,
    total,
    fulfilledQuantity: 0,
    refundedQuantity: 0,
  }
}

let opened: Awaited<ReturnType<typeof openTestDatabase>>

beforeAll(async () => {
  opened = await openTestDatabase()
})
afterAll(async () => {
  await opened.drop()
})

describe('migration 2026-11-24T0000-addresses-shipping', () => {
  it('keeps older orders readable, field for field, and names their lines', async () => {
    const { db, schema } = opened.handle
    const raw = db as unknown as Kysely<any>
    const up = await migrator(raw, schema, before).migrateToLatest()
    expect(up.error).toBeUndefined()
    const now = '2026-11-23T10:00:00.000Z'
    const user = await raw
      .insertInto('users')
      .values({ name: 'Old', email: 'old@example.com', password_hash: 'x', role: 'customer', created_at: now, updated_at: now, credentials_changed_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    const product = await raw
      .insertInto('products')
      .values({
        name: 'Kept',
        description: '',
        price_cents: 300,
        stock: 1,
        image_key: 'k',
        image_url: 'http://x/k',
        category_id: null,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    const order = await raw
      .insertInto('orders')
      .values({ user_id: user.id, total_cents: 1300, status: 'pending', created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    await raw
      .insertInto('order_items')
      .values([
        { order_id: order.id, product_id: product.id, quantity: 1, price_cents: 300 },
        { order_id: order.id, product_id: 999999, quantity: 2, price_cents: 500 },
      ])
      .execute()

    // buildApp runs the remaining migration, as a start-up does.
    const app = await buildApp(testConfig(), { database: opened.handle, logger: false, catalogCache: false })
    try {
      const names = await raw.selectFrom('order_items').select(['product_id', 'name']).orderBy('id').execute()
      expect(names).toEqual([
        { product_id: product.id, name: 'Kept' },
        { product_id: 999999, name: null },
      ])
      const admin = await makeUser(app, 'admin')
      const res = await app.inject({ method: 'GET', url: `/orders/${order.id}`, headers: bearer(admin) })
      expect(res.statusCode).toBe(200)
      expect(res.json()).toEqual({
        id: order.id,
        userId: user.id,
        email: 'old@example.com',
        guest: false,
        total: 13,
        status: 'pending',
        createdAt: now,
        updatedAt: now,
        items: [
          {
            id: expect.any(Number),
            orderId: order.id,
            productId: product.id,
            quantity: 1,
            price: 3,
            name: 'Kept',
            product: { id: product.id, name: 'Kept', imageUrl: 'http://x/k' },
            ...olderLine(3),
          },
          // A line of a product deleted before names were kept: its name is unknown.
          { id: expect.any(Number), orderId: order.id, productId: 999999, quantity: 2, price: 5, name: null, ...olderLine(10), variantId: null },
        ],
        // Every order carries the fields later parts added (a plain order: subtotal = total, no shipping).
        subtotal: 13,
        shippingTotal: 0,
        shippingAddress: null,
        shippingMethod: null,
        note: null,
        // Written before the breakdown was kept: no code, no tax, no tax country.
        currency: 'EUR',
        pricesIncludeTax: true,
        taxCountry: null,
        discountTotal: 0,
        shippingDiscount: 0,
        taxTotal: 0,
        discount: null,
        taxLines: [],
        payment: { provider: 'manual', status: 'unpaid', amount: 13, currency: 'EUR', refundedAmount: 0 },
        fulfillmentStatus: 'unfulfilled',
        fulfillments: [],
        refunds: [],
        customer: { id: user.id, name: 'Old', email: 'old@example.com' },
        nextStatuses: ['paid', 'cancelled'],
      })
    } finally {
      await app.close()
    }
  })

  it('goes down and up again', async () => {
    const { db, schema } = opened.handle
    const m = migrator(db as unknown as Kysely<any>, schema, all)
    // The service migrated to the latest (later ones come after this one): down past them first.
    await m.migrateTo('2026-11-24T0000-addresses-shipping')
    const down = await m.migrateDown()
    expect(down.error).toBeUndefined()
    expect(down.results?.[0]?.migrationName).toBe('2026-11-24T0000-addresses-shipping')
    const up = await m.migrateToLatest()
    expect(up.error).toBeUndefined()
  })
})
