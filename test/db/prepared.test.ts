import { type Kysely, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { connectDatabase } from '../../src/db/connect.js'
import type { Database } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { prepared, preparedStatementNames } from '../../src/db/prepared.js'
import { retryAborted } from '../../src/db/transaction.js'
import { isStalePlan } from '../../src/shared/db-errors.js'
import { dialect, openTestDatabase } from '../helpers/app.js'
import { testDatabaseUrl } from '../helpers/pg-schema.js'

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

describe.runIf(dialect === 'postgres')('PostgreSQL: prepared by name on each connection', () => {
  const oneMethod = prepared((db, v: { id: number }) => db.selectFrom('shipping_methods').select(['name']).where('id', '=', v.id))
  // A statement returning every column of a table the test alters (as another instance's migration would).
  const everyColumn = prepared((db, v: { a: number }) => (db as unknown as Kysely<any>).selectFrom('stale_plan').selectAll().where('a', '=', v.a))

  /** A handle of one connection in the test's schema: the statement's prepared copy lives on that connection. */
  const oneConnection = (preparedStatements = true) =>
    connectDatabase(testDatabaseUrl(), { schema: opened.handle.schema as string, poolSize: 1, preparedStatements })
  const backend = async (db: Kysely<Database>) => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]?.pid

  it('parses and plans a statement of prepared() once per connection, under its name; other queries stay unnamed', async () => {
    const { db } = oneConnection()
    try {
      for (const id of [1, 2, 1]) await oneMethod(db, { id })
      await sql`select ${1}::int as one`.execute(db)
      const rows = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db)
      const [text] = [...preparedStatementNames].find(([, name]) => rows.rows.some((row) => row.name === name)) ?? []
      expect(rows.rows).toHaveLength(1)
      expect(text).toContain('from "shipping_methods"')
      expect(rows.rows[0]?.statement).toBe(text)
    } finally {
      await db.destroy()
    }
  })

  it('with PG_PREPARED_STATEMENTS off (a pooler that cannot keep them), nothing is prepared', async () => {
    expect(loadConfig({ JWT_SECRET: 'x'.repeat(32), PG_PREPARED_STATEMENTS: 'false' }).postgres.preparedStatements).toBe(false)
    expect(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).postgres.preparedStatements).toBe(true)
    const { db } = oneConnection(false)
    try {
      expect((await oneMethod(db, { id: 1 })).rows).toEqual([{ name: 'Correos' }])
      expect((await sql`select name from pg_prepared_statements`.execute(db)).rows).toEqual([])
    } finally {
      await db.destroy()
    }
  })

  it('a table altered under a prepared statement: answered again unnamed outside a transaction, retried inside one; the connection replaced', async () => {
    const { db } = oneConnection()
    try {
      await sql`create table stale_plan (a integer not null)`.execute(db)
      await sql`insert into stale_plan (a) values (1)`.execute(db)
      expect((await everyColumn(db, { a: 1 })).rows).toEqual([{ a: 1 }])
      const first = await backend(db)
      await sql`alter table stale_plan add column b integer not null default 2`.execute(db)
      // Outside a transaction: PostgreSQL refuses the prepared copy; the statement runs again unnamed and answers.
      expect((await everyColumn(db, { a: 1 })).rows).toEqual([{ a: 1, b: 2 }])
      const second = await backend(db)
      expect(second).not.toBe(first)
      // Inside a transaction the transaction fails (PostgreSQL aborted it) and the connection goes too...
      expect((await everyColumn(db, { a: 1 })).rows).toEqual([{ a: 1, b: 2 }])
      await sql`alter table stale_plan add column c integer not null default 3`.execute(db)
      const failed = await db
        .transaction()
        .execute((trx) => everyColumn(trx, { a: 1 }))
        .catch((error: unknown) => error)
      expect(isStalePlan(failed)).toBe(true)
      expect(await backend(db)).not.toBe(second)
      // ...and a transaction run through retryAborted (checkout, the import) is run again, and answers.
      expect((await everyColumn(db, { a: 1 })).rows).toEqual([{ a: 1, b: 2, c: 3 }])
      await sql`alter table stale_plan add column d integer not null default 4`.execute(db)
      let attempts = 0
      const answered = await retryAborted(() => {
        attempts += 1
        return db.transaction().execute((trx) => everyColumn(trx, { a: 1 }))
      })
      expect(answered.rows).toEqual([{ a: 1, b: 2, c: 3, d: 4 }])
      expect(attempts).toBe(2)
    } finally {
      await sql`drop table if exists stale_plan`.execute(db)
      await db.destroy()
    }
  })
})
