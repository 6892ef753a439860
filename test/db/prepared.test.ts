import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrateToLatest } from '../../src/db/migrate.js'
import { prepared } from '../../src/db/prepared.js'
import { openTestDatabase } from '../helpers/app.js'

// A statement compiled once runs with each call's values, inside and outside a transaction, and refuses a stand-in
// that was used to shape the statement instead of as one of its values.

let opened: Awaited<ReturnType<typeof openTestDatabase>>

beforeAll(async () => {
  opened = await openTestDatabase()
  await migrateToLatest(opened.handle.db, opened.handle.schema)
  await opened.handle.db
    .insertInto('shipping_methods')
    .values([
      { name: 'Correos', price_cents: 495, free_over_cents: null, countries: '[]', active: 1, created_at: 'x', updated_at: 'x' },
      { name: 'Seur', price_cents: 900, free_over_cents: null, countries: '[]', active: 0, created_at: 'x', updated_at: 'x' },
    ])
    .execute()
})
afterAll(async () => {
  await opened.drop()
})

describe('prepared()', () => {
  const byName = prepared((db, v: { name: string; minCents: number }) =>
    db
      .selectFrom('shipping_methods')
      .select(['name', 'price_cents'])
      .where('name', '=', v.name)
      .where('price_cents', '>=', v.minCents)
      .where('active', 'in', [0, 1]),
  )

  it('runs with each call’s values, and keeps the literals the builder made', async () => {
    const { db } = opened.handle
    expect((await byName(db, { name: 'Correos', minCents: 0 })).rows).toEqual([{ name: 'Correos', price_cents: 495 }])
    expect((await byName(db, { name: 'Seur', minCents: 0 })).rows).toEqual([{ name: 'Seur', price_cents: 900 }])
    expect((await byName(db, { name: 'Seur', minCents: 901 })).rows).toEqual([])
  })

  it('runs inside a transaction, which sees its own writes', async () => {
    const { db } = opened.handle
    await db
      .transaction()
      .execute(async (trx) => {
        await sql`update shipping_methods set price_cents = 1 where name = 'Seur'`.execute(trx)
        expect((await byName(trx, { name: 'Seur', minCents: 0 })).rows).toEqual([{ name: 'Seur', price_cents: 1 }])
        throw new Error('roll back')
      })
      .catch(() => {})
    expect((await byName(db, { name: 'Seur', minCents: 0 })).rows).toEqual([{ name: 'Seur', price_cents: 900 }])
  })

  it('refuses a stand-in that shaped the statement (here: computed on) instead of being one of its values', async () => {
    const misuse = prepared((db, v: { cents: number }) =>
      db
        .selectFrom('shipping_methods')
        .select('name')
        .where('price_cents', '<=', `${v.cents}0` as unknown as number),
    )
    await expect(misuse(opened.handle.db, { cents: 5 })).rejects.toThrow('prepared statement: no value for cents0')
  })
})
