import { type Kysely, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/database.js'
import { isPostgres } from '../../src/db/dialect.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { parseRowJson, rowJson } from '../../src/db/row-json.js'
import { lockAndClearCartOfUser, readCartOfUserForCheckout, shippingMethodColumns } from '../../src/modules/cart/cart.repository.js'
import { openTestDatabase } from '../helpers/app.js'

// A row read as one JSON value beside another (rowJson) is the row a plain select reads: same columns, same types
// (numbers, text, nulls), on both databases. Checkout's read of a customer's cart row relies on it for the cart's
// code, the account, and the address and method the body names.

let opened: Awaited<ReturnType<typeof openTestDatabase>>
const now = '2026-12-03T10:00:00.000Z'
const ids = { user: 0, code: 0, address: 0, method: 0, inactiveMethod: 0, otherAddress: 0 }

beforeAll(async () => {
  opened = await openTestDatabase()
  const { db } = opened.handle
  await migrateToLatest(db, opened.handle.schema)
  const user = (name: string, email: string) =>
    db
      .insertInto('users')
      .values({ name, email, password_hash: 'x', role: 'customer', created_at: now, updated_at: now, credentials_changed_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
  ids.user = (await user('Ana Núñez', 'ana@example.com')).id
  const other = (await user('Otro', 'otro@example.com')).id
  ids.code = (
    await db
      .insertInto('discount_codes')
      .values({
        code: 'Verano10',
        type: 'percent',
        value: 1000,
        per_customer_limit: 2,
        product_ids: '[3]',
        category_ids: '[]',
        active: 1,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id
  const address = (userId: number) =>
    db
      .insertInto('addresses')
      .values({
        user_id: userId,
        full_name: 'Ana',
        line1: 'Calle Mayor 1',
        city: 'Madrid',
        postal_code: '28013',
        country: 'ES',
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
  ids.address = (await address(ids.user)).id
  ids.otherAddress = (await address(other)).id
  const method = (active: number) =>
    db
      .insertInto('shipping_methods')
      .values({ name: 'Envío', price_cents: 490, countries: '["ES"]', free_over_cents: null, active, created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
  ids.method = (await method(1)).id
  ids.inactiveMethod = (await method(0)).id
  await db.insertInto('carts').values({ user_id: ids.user, discount_code: 'VERANO10', note: 'Timbre 2', created_at: now, updated_at: now }).execute()
})
afterAll(async () => {
  await opened.drop()
})

describe('rowJson', () => {
  it('reads a row as a plain select does, and null when the subquery finds none', async () => {
    const { db } = opened.handle
    const read = async (id: number) => {
      const json = rowJson(isPostgres(db), 'm', shippingMethodColumns)
      const { rows } = await sql<{ row: unknown }>`select (select ${json} from shipping_methods m where m.id = ${id}) as row`.execute(db)
      return parseRowJson(rows[0]?.row)
    }
    const plain = await db.selectFrom('shipping_methods').selectAll().where('id', '=', ids.method).executeTakeFirstOrThrow()
    expect(await read(ids.method)).toStrictEqual(plain)
    expect(plain.free_over_cents).toBeNull()
    expect(await read(-1)).toBeNull()
  })
})

describe('a customer’s cart row for checkout', () => {
  type Taken = Awaited<ReturnType<typeof readCartOfUserForCheckout>>
  // Read in a transaction that is rolled back (PostgreSQL's form also clears the cart's choices), after `change`:
  // each test reads the same data.
  const read = (
    references: { addressId: number | null; methodId: number | null },
    options: { userId?: number; change?: (trx: Kysely<Database>) => Promise<unknown> } = {},
  ) =>
    opened.handle.db
      .transaction()
      .execute(async (trx) => {
        await options.change?.(trx)
        const v = { userId: options.userId ?? ids.user, ...references }
        const taken = isPostgres(trx) ? await lockAndClearCartOfUser(trx, { ...v, now }) : await readCartOfUserForCheckout(trx, v)
        throw Object.assign(new Error('rollback'), { taken })
      })
      .catch((error: { taken?: Taken }) => {
        if (!('taken' in error)) throw error
        return error.taken
      })

  it('comes with its code’s row, the account, whether the shop ships, and the address and method named', async () => {
    const { db } = opened.handle
    const taken = await read({ addressId: ids.address, methodId: ids.method })
    expect(taken?.cart).toMatchObject({ user_id: ids.user, discount_code: 'VERANO10', note: 'Timbre 2' })
    expect(taken?.codeRow).toStrictEqual(await db.selectFrom('discount_codes').selectAll().where('id', '=', ids.code).executeTakeFirstOrThrow())
    expect(taken?.account).toStrictEqual({ name: 'Ana Núñez', email: 'ana@example.com' })
    expect(taken?.ships).toBe(true)
    expect(taken?.references.addressRow).toStrictEqual(await db.selectFrom('addresses').selectAll().where('id', '=', ids.address).executeTakeFirstOrThrow())
    expect(taken?.references.methodRow).toStrictEqual(
      await db.selectFrom('shipping_methods').selectAll().where('id', '=', ids.method).executeTakeFirstOrThrow(),
    )
  })

  it('answers null for someone else’s address, an inactive method, or one not named', async () => {
    const refused = await read({ addressId: ids.otherAddress, methodId: ids.inactiveMethod })
    expect(refused?.references).toStrictEqual({ addressRow: null, methodRow: null })
    const addressOnly = await read({ addressId: ids.address, methodId: null })
    expect(addressOnly?.references.addressRow?.id).toBe(ids.address)
    expect(addressOnly?.references.methodRow).toBeNull()
    const methodOnly = await read({ addressId: null, methodId: ids.method })
    expect(methodOnly?.references.addressRow).toBeNull()
    expect(methodOnly?.references.methodRow?.id).toBe(ids.method)
    const none = await read({ addressId: null, methodId: null })
    expect(none?.references).toStrictEqual({ addressRow: null, methodRow: null })
    expect(none?.codeRow?.id).toBe(ids.code)
  })

  it('says the shop does not ship when no method is active, and null for a code deleted since it was kept', async () => {
    const taken = await read(
      { addressId: null, methodId: null },
      {
        change: async (trx) => {
          await trx.updateTable('shipping_methods').set({ active: 0 }).execute()
          await trx.deleteFrom('discount_codes').where('id', '=', ids.code).execute()
        },
      },
    )
    expect(taken?.cart.discount_code).toBe('VERANO10')
    expect(taken?.ships).toBe(false)
    expect(taken?.codeRow).toBeNull()
  })

  it('answers nothing for a customer without a cart row', async () => {
    const withoutCart = await opened.handle.db.selectFrom('users').select('id').where('email', '=', 'otro@example.com').executeTakeFirstOrThrow()
    expect(await read({ addressId: ids.address, methodId: ids.method }, { userId: withoutCart.id })).toBeUndefined()
  })
})
