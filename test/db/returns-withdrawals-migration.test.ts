import { describe, expect, it } from 'vitest'
import { migrationBefore, type Row, useMigrationDatabase } from '../helpers/migrations.js'

// The returns-and-withdrawals migration on a shop with an order: migrated up (the order's rows untouched), used
// (a withdrawal and the return made from it), taken down (the schema exactly as before, the order kept) and up again.

const RETURNS = '2026-12-02T0300-returns-withdrawals'
// The migration just before it: the shop as it was.
const BEFORE = migrationBefore(RETURNS)
const now = '2026-12-02T10:00:00.000Z'

const migrating = useMigrationDatabase()

async function migrateTo(name: string): Promise<void> {
  const { error } = await migrating.migrator.migrateTo(name)
  if (error) throw error instanceof Error ? error : new Error('migration failed', { cause: error })
}

describe(`migration ${RETURNS}`, () => {
  let schemaBefore: Row[]
  let orderId: number
  let lineId: number

  it('adds returns, return_items and withdrawals, leaving the orders as they were', async () => {
    await migrateTo(BEFORE)
    schemaBefore = await migrating.schemaOf()
    orderId = Number(
      (
        await migrating.raw
          .insertInto('orders')
          .values({ user_id: null, guest: 1, email: 'ana@shop.test', total_cents: 1000, status: 'delivered', created_at: now, updated_at: now })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id,
    )
    lineId = Number(
      (
        await migrating.raw
          .insertInto('order_items')
          .values({ order_id: orderId, product_id: 1, variant_id: 1, quantity: 2, price_cents: 500, name: 'Taza', fulfilled_quantity: 2 })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id,
    )
    const ordersBefore = await migrating.raw.selectFrom('order_items').selectAll().execute()
    await migrateTo(RETURNS)
    expect(await migrating.raw.selectFrom('order_items').selectAll().execute()).toEqual(ordersBefore)

    const items = JSON.stringify([{ orderItemId: lineId, name: 'Taza', variantTitle: null, quantity: 2 }])
    const withdrawal = await migrating.raw
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
    const ret = await migrating.raw
      .insertInto('returns')
      .values({ order_id: orderId, status: 'approved', source: 'withdrawal', reason: null, withdrawal_id: withdrawal.id, created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    await migrating.raw.insertInto('return_items').values({ return_id: ret.id, order_item_id: lineId, quantity: 2, reason: null }).execute()
    expect(await migrating.raw.selectFrom('return_items').selectAll().execute()).toEqual([
      { return_id: ret.id, order_item_id: lineId, quantity: 2, reason: null, received_quantity: null },
    ])
    // One return per withdrawal.
    await expect(
      migrating.raw
        .insertInto('returns')
        .values({ order_id: orderId, status: 'approved', source: 'withdrawal', reason: null, withdrawal_id: withdrawal.id, created_at: now, updated_at: now })
        .execute(),
    ).rejects.toThrow()
    // Any number of returns without one.
    for (let i = 0; i < 2; i++) {
      await migrating.raw
        .insertInto('returns')
        .values({ order_id: orderId, status: 'requested', source: 'customer', reason: null, created_at: now, updated_at: now })
        .execute()
    }
  })

  it('goes down to the schema before it, keeping the order, and up again', async () => {
    await migrateTo(BEFORE)
    expect(await migrating.schemaOf()).toEqual(schemaBefore)
    expect(await migrating.raw.selectFrom('order_items').select(['id', 'quantity']).execute()).toEqual([{ id: lineId, quantity: 2 }])
    await migrateTo(RETURNS)
    expect(await migrating.raw.selectFrom('returns').selectAll().execute()).toEqual([])
    expect(await migrating.raw.selectFrom('orders').select('id').execute()).toEqual([{ id: orderId }])
  })
})
