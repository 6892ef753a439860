import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { dialect } from '../helpers/app.js'
import { migrationBefore, useMigrationDatabase } from '../helpers/migrations.js'

// The redemptions move onto their orders: each redemption's code and e-mail become its order's, the table goes, and
// a code an order holds stays undeletable (a key on PostgreSQL; the service's check on both). Down brings the table
// back with the redemptions the orders hold, and the schema as it was.

const NAME = '2026-12-10T0000-redemptions-on-orders'
const BEFORE = migrationBefore(NAME)

const migrating = useMigrationDatabase()
const now = '2026-12-01T10:00:00.000Z'

async function columnsOfOrders(): Promise<string[]> {
  if (dialect === 'postgres') {
    const { rows } = await sql<{ name: string }>`select column_name as name from information_schema.columns
      where table_schema = current_schema() and table_name = 'orders'`.execute(migrating.raw)
    return rows.map((r) => r.name)
  }
  const { rows } = await sql<{ name: string }>`select name from pragma_table_info('orders')`.execute(migrating.raw)
  return rows.map((r) => r.name)
}

describe(`migration ${NAME}`, () => {
  it('moves each redemption onto its order, and back down', async () => {
    expect((await migrating.migrator.migrateTo(BEFORE)).error).toBeUndefined()
    const schemaBefore = await migrating.schemaOf()
    const code = await migrating.raw
      .insertInto('discount_codes')
      .values({ code: 'SUMMER', type: 'percent', value: 1000, usage_count: 2, created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    const user = await migrating.raw
      .insertInto('users')
      .values({ name: 'A', email: 'a@example.com', password_hash: 'x', role: 'customer', created_at: now, updated_at: now, credentials_changed_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    const order = (values: object) =>
      migrating.raw
        .insertInto('orders')
        .values({ total_cents: 900, status: 'pending', created_at: now, updated_at: now, ...values })
        .returning('id')
        .executeTakeFirstOrThrow()
    const account = await order({ user_id: user.id, discount_total_cents: 100 })
    const guest = await order({ user_id: null, guest: 1, email: 'Zoe@Example.com', discount_total_cents: 250 })
    const plain = await order({ user_id: user.id })
    await migrating.raw
      .insertInto('discount_redemptions')
      .values([
        { code_id: code.id, order_id: account.id, user_id: user.id, email: 'a@example.com', amount_cents: 100, created_at: now },
        { code_id: code.id, order_id: guest.id, user_id: null, email: 'zoe@example.com', amount_cents: 250, created_at: now },
      ])
      .execute()

    expect((await migrating.migrator.migrateTo(NAME)).error).toBeUndefined()
    const held = await migrating.raw.selectFrom('orders').select(['id', 'discount_code_id', 'discount_email']).orderBy('id').execute()
    expect(held).toEqual([
      { id: account.id, discount_code_id: code.id, discount_email: 'a@example.com' },
      { id: guest.id, discount_code_id: code.id, discount_email: 'zoe@example.com' },
      { id: plain.id, discount_code_id: null, discount_email: null },
    ])
    const tables = await sql<{
      n: number | string
    }>`select count(*) as n from ${sql.raw(dialect === 'postgres' ? 'information_schema.tables where table_schema = current_schema() and' : "sqlite_master where type = 'table' and")} ${sql.raw(dialect === 'postgres' ? 'table_name' : 'name')} = 'discount_redemptions'`.execute(
      migrating.raw,
    )
    expect(Number(tables.rows[0]?.n)).toBe(0)
    if (dialect === 'postgres') {
      // An order naming a code that does not exist is refused; so is deleting a code an order holds.
      await expect(migrating.raw.updateTable('orders').set({ discount_code_id: 424242 }).where('id', '=', plain.id).execute()).rejects.toThrow()
      await expect(migrating.raw.deleteFrom('discount_codes').where('id', '=', code.id).execute()).rejects.toThrow()
    }

    // Down: the table again, with the orders' redemptions (their amount the order's discount), the columns gone.
    const down = await migrating.migrator.migrateDown()
    expect(down.error).toBeUndefined()
    expect(down.results?.[0]?.migrationName).toBe(NAME)
    expect(await columnsOfOrders()).not.toContain('discount_code_id')
    expect(await migrating.schemaOf()).toEqual(schemaBefore)
    expect(
      await migrating.raw.selectFrom('discount_redemptions').select(['code_id', 'order_id', 'user_id', 'email', 'amount_cents']).orderBy('order_id').execute(),
    ).toEqual([
      { code_id: code.id, order_id: account.id, user_id: user.id, email: 'a@example.com', amount_cents: 100 },
      { code_id: code.id, order_id: guest.id, user_id: null, email: 'zoe@example.com', amount_cents: 250 },
    ])
    expect((await migrating.migrator.migrateToLatest()).error).toBeUndefined()
    expect(await columnsOfOrders()).toEqual(expect.arrayContaining(['discount_code_id', 'discount_email']))
    expect(await migrating.raw.selectFrom('orders').select('id').where('discount_code_id', '=', code.id).orderBy('id').execute()).toEqual([
      { id: account.id },
      { id: guest.id },
    ])
  })
})
