import { type Kysely, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { connectDatabase } from '../../src/db/connect.js'
import type { Database } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { prepared, preparedList, preparedRows, preparedStatementNames } from '../../src/db/prepared.js'
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

describe('preparedRows()', () => {
  type Method = { name: string; price_cents: number; free_over_cents: number | null; countries: string; active: number; created_at: string; updated_at: string }
  const method = (name: string, extra: Partial<Method> = {}): Method => ({
    name,
    price_cents: 100,
    free_over_cents: null,
    countries: '[]',
    active: 1,
    created_at: 'x',
    updated_at: 'x',
    ...extra,
  })
  const statements: string[] = []
  const insertMethods = preparedRows((db, rows: readonly Method[]) => {
    statements.push(`built ${rows.length}`)
    return db.insertInto('shipping_methods').values(rows).returning(['name', 'price_cents', 'free_over_cents'])
  }, 2)
  const names = async (prefix: string) =>
    await opened.handle.db
      .selectFrom('shipping_methods')
      .select(['name', 'price_cents', 'free_over_cents'])
      .where('name', 'like', `${prefix}%`)
      .orderBy('id')
      .execute()

  it('writes each call’s rows, building the statement once per number of rows', async () => {
    statements.length = 0
    const { db } = opened.handle
    expect((await insertMethods(db, [method('rows-a1', { price_cents: 1 })])).rows).toEqual([{ name: 'rows-a1', price_cents: 1, free_over_cents: null }])
    await insertMethods(db, [method('rows-a2', { free_over_cents: 5000 })])
    await insertMethods(db, [method('rows-a3'), method('rows-a4', { price_cents: 4 })])
    await insertMethods(db, [method('rows-a5'), method('rows-a6')])
    expect(statements).toEqual(['built 1', 'built 2'])
    expect(await names('rows-a')).toEqual([
      { name: 'rows-a1', price_cents: 1, free_over_cents: null },
      { name: 'rows-a2', price_cents: 100, free_over_cents: 5000 },
      { name: 'rows-a3', price_cents: 100, free_over_cents: null },
      { name: 'rows-a4', price_cents: 4, free_over_cents: null },
      { name: 'rows-a5', price_cents: 100, free_over_cents: null },
      { name: 'rows-a6', price_cents: 100, free_over_cents: null },
    ])
  })

  it('builds each time, as Kysely would, past its number of rows, for rows of different columns, and for an undefined value', async () => {
    const { db } = opened.handle
    await insertMethods(db, [method('rows-b0')])
    statements.length = 0
    await insertMethods(db, [method('rows-b1'), method('rows-b2'), method('rows-b3')])
    const { free_over_cents: _, ...withoutFree } = method('rows-b5', { price_cents: 5 })
    await insertMethods(db, [method('rows-b4', { free_over_cents: 40 }), withoutFree as Method])
    await insertMethods(db, [method('rows-b6', { free_over_cents: undefined as unknown as null })])
    // Past the bound, every time.
    await insertMethods(db, [method('rows-b7'), method('rows-b8'), method('rows-b9')])
    expect(statements).toEqual(['built 3', 'built 2', 'built 1', 'built 3'])
    await db.deleteFrom('shipping_methods').where('name', 'in', ['rows-b7', 'rows-b8', 'rows-b9']).execute()
    expect(await names('rows-b')).toEqual([
      { name: 'rows-b0', price_cents: 100, free_over_cents: null },
      { name: 'rows-b1', price_cents: 100, free_over_cents: null },
      { name: 'rows-b2', price_cents: 100, free_over_cents: null },
      { name: 'rows-b3', price_cents: 100, free_over_cents: null },
      { name: 'rows-b4', price_cents: 100, free_over_cents: 40 },
      { name: 'rows-b5', price_cents: 5, free_over_cents: null },
      { name: 'rows-b6', price_cents: 100, free_over_cents: null },
    ])
  })

  it('keys its statements by columns too: rows of another set of columns, as many, get a statement of their own', async () => {
    const { db } = opened.handle
    const { free_over_cents: _, ...withoutFree } = method('rows-c1', { price_cents: 7 })
    const { countries: __, ...withoutCountries } = method('rows-c4', { price_cents: 8, free_over_cents: 90 })
    statements.length = 0
    // Two rows of six columns, twice; then two of six others (free_over_cents for countries): same count, other columns.
    await insertMethods(db, [withoutFree, { ...withoutFree, name: 'rows-c2' }] as Method[])
    await insertMethods(db, [
      { ...withoutFree, name: 'rows-c3' },
      { ...withoutFree, name: 'rows-c3b' },
    ] as Method[])
    await insertMethods(db, [withoutCountries, { ...withoutCountries, name: 'rows-c5' }] as Method[])
    // The same columns in another order of keys: values go where they belong.
    const { free_over_cents: ___, ...rest } = withoutCountries
    const reordered = { free_over_cents: 91, ...rest, name: 'rows-c6' }
    await insertMethods(db, [reordered, { ...reordered, name: 'rows-c7' }] as Method[])
    expect(statements).toEqual(['built 2', 'built 2', 'built 2'])
    expect(await names('rows-c')).toEqual([
      { name: 'rows-c1', price_cents: 7, free_over_cents: null },
      { name: 'rows-c2', price_cents: 7, free_over_cents: null },
      { name: 'rows-c3', price_cents: 7, free_over_cents: null },
      { name: 'rows-c3b', price_cents: 7, free_over_cents: null },
      { name: 'rows-c4', price_cents: 8, free_over_cents: 90 },
      { name: 'rows-c5', price_cents: 8, free_over_cents: 90 },
      { name: 'rows-c6', price_cents: 8, free_over_cents: 91 },
      { name: 'rows-c7', price_cents: 8, free_over_cents: 91 },
    ])
  })
})

describe('preparedList()', () => {
  const statements: string[] = []
  const pricedIn = preparedList((db, names: readonly string[], v: { minCents: number }) => {
    statements.push(`built ${names.length}`)
    return db.selectFrom('shipping_methods').select('name').where('name', 'in', names).where('price_cents', '>=', v.minCents).orderBy('name')
  }, 2)
  const run = async (names: string[], minCents: number) => (await pricedIn(opened.handle.db, names, { minCents })).rows.map((row) => row.name)

  it('runs with each call’s list and values, building the statement once per length of the list', async () => {
    statements.length = 0
    expect(await run(['Correos'], 0)).toEqual(['Correos'])
    expect(await run(['Seur'], 0)).toEqual(['Seur'])
    expect(await run(['Seur'], 901)).toEqual([])
    expect(await run(['Seur', 'Correos'], 0)).toEqual(['Correos', 'Seur'])
    expect(await run(['Seur', 'Nadie'], 500)).toEqual(['Seur'])
    expect(statements).toEqual(['built 1', 'built 2'])
  })

  it('builds each time past its bound', async () => {
    statements.length = 0
    expect(await run(['Seur', 'Correos', 'Nadie'], 0)).toEqual(['Correos', 'Seur'])
    expect(await run(['Seur', 'Correos', 'Nadie'], 600)).toEqual(['Seur'])
    expect(statements).toEqual(['built 3', 'built 3'])
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
