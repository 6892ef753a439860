import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { DatabaseUnavailableError } from '../../src/db/availability.js'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'

// SQLite's reader threads (src/db/sqlite-readers.ts): the facets' queries on connections of their own.

let dir: string | undefined
let handle: DatabaseHandle | undefined
afterEach(async () => {
  await handle?.db.destroy()
  handle = undefined
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

function open(readers?: { threads?: number; timeoutMs?: number }): DatabaseHandle & { reads: NonNullable<DatabaseHandle['reads']> } {
  dir = mkdtempSync(join(tmpdir(), 'shop-readers-'))
  handle = connectDatabase(`sqlite:${join(dir, 'shop.db')}`, readers ? { readers } : {})
  const { reads } = handle
  if (!reads) throw new Error('no reader threads')
  return { ...handle, reads }
}

/** Starts each of the pool's `threads` threads (a thread started from the TypeScript sources loads tsx first). */
async function warm(reads: NonNullable<DatabaseHandle['reads']>, threads: number): Promise<void> {
  const oneEach = sql<{ one: number }>`with recursive c (x) as (select 1 union all select x + 1 from c where x < 200000) select count(*) as one from c`
  await Promise.all(Array.from({ length: threads }, () => oneEach.execute(reads)))
}

/**
 * A read that takes longer than BOUND_MS: counting to 25 million (about 5 s on the 2-core VM). The bound itself leaves
 * room for a thread's start through tsx (about 0.3 s alone, over 0.5 s in a loaded CI run).
 */
const slowRead = sql<{ n: number }>`with recursive c (x) as (select 1 union all select x + 1 from c where x < 25000000) select count(*) as n from c`
const BOUND_MS = 2000

describe('SQLite reader threads', () => {
  it('answer as the main connection, and see every commit made before the query', async () => {
    const { db, reads, readers } = open({ threads: 2 })
    await sql`create table t (x integer not null, word text not null)`.execute(db)
    await sql`insert into t (x, word) values (1, 'ÁRBOL'), (2, 'casa')`.execute(db)
    const main = await sql<{ x: number; folded: string }>`select x, fold_case(word) as folded from t order by x`.execute(db)
    const read = await sql<{ x: number; folded: string }>`select x, fold_case(word) as folded from t order by x`.execute(reads)
    expect(read.rows).toEqual(main.rows)
    expect(read.rows).toEqual([
      { x: 1, folded: 'árbol' },
      { x: 2, folded: 'casa' },
    ])
    await sql`insert into t (x, word) values (3, 'tres')`.execute(db)
    const after = await sql<{ n: number }>`select count(*) as n from t`.execute(reads)
    expect(after.rows).toEqual([{ n: 3 }])
    // Parameters are bound on the thread as on the main connection.
    const bound = await sql<{ x: number }>`select x from t where word = ${'casa'}`.execute(reads)
    expect(bound.rows).toEqual([{ x: 2 }])
    expect(readers?.answered).toBe(3)
  })

  it('refuse a write, which changes nothing', async () => {
    const { db, reads } = open({ threads: 1 })
    await sql`create table t (x integer not null)`.execute(db)
    await expect(sql`insert into t (x) values (1)`.execute(reads)).rejects.toThrow(/only statements that return rows/)
    await expect(sql`insert into t (x) values (1) returning x`.execute(reads)).rejects.toThrow(/readonly/i)
    await expect(reads.transaction().execute(async () => {})).rejects.toThrow(/no transactions/)
    const rows = await sql<{ n: number }>`select count(*) as n from t`.execute(db)
    expect(rows.rows).toEqual([{ n: 0 }])
  })

  it('a read with no answer within the bound fails as an unavailable database (503); the next query gets another thread', async () => {
    const { db, reads } = open({ threads: 2, timeoutMs: BOUND_MS })
    await sql`create table t (x integer not null)`.execute(db)
    await warm(reads, 2)
    const error = await slowRead.execute(reads).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DatabaseUnavailableError)
    expect((error as DatabaseUnavailableError).statusCode).toBe(503)
    // Its thread, still counting (a statement cannot be interrupted), takes no query: the other one answers.
    const next = await sql<{ one: number }>`select 1 as one`.execute(reads)
    expect(next.rows).toEqual([{ one: 1 }])
  })

  it('the bound counts the wait for a thread: queries queued behind a runaway read fail at their own deadline', async () => {
    const { db, reads } = open({ threads: 1, timeoutMs: BOUND_MS })
    await sql`create table t (x integer not null)`.execute(db)
    await warm(reads, 1)
    const running = slowRead.execute(reads).catch((e: unknown) => e)
    const queued = sql`select 1`.execute(reads).catch((e: unknown) => e)
    expect(await running).toBeInstanceOf(DatabaseUnavailableError)
    expect(await queued).toBeInstanceOf(DatabaseUnavailableError)
  })

  it('a thread that cannot open the database fails its query with a 503', async () => {
    const { db, reads } = open({ threads: 1 })
    await sql`create table t (x integer not null)`.execute(db)
    // The file gone (the main connection keeps its own open): the thread's open, which must find it, fails.
    rmSync(join(dir!, 'shop.db'))
    const error = await sql`select count(*) from t`.execute(reads).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DatabaseUnavailableError)
  })

  it('queries wait for a free thread, then each gets its own answer', async () => {
    const { db, reads } = open({ threads: 2 })
    await sql`create table t (x integer not null)`.execute(db)
    await sql`insert into t (x) values (1), (2), (3), (4), (5), (6), (7), (8)`.execute(db)
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => sql<{ x: number }>`select x from t where x = ${i + 1}`.execute(reads).then((result) => result.rows)),
    )
    expect(answers).toEqual(Array.from({ length: 8 }, (_, i) => [{ x: i + 1 }]))
  })

  it('closing the database fails the reads running and queued at once, and those asked later', async () => {
    const { db, reads } = open({ threads: 1 })
    await sql`create table t (x integer not null)`.execute(db)
    await warm(reads, 1)
    const running = slowRead.execute(reads).catch((e: unknown) => e)
    const queued = sql`select 1`.execute(reads).catch((e: unknown) => e)
    await db.destroy()
    handle = undefined
    for (const error of [await running, await queued]) {
      expect(error).toBeInstanceOf(Error)
      // Ended by the close, not by the read's bound (5 s).
      expect((error as Error).message).toMatch(/closed/)
    }
    await expect(sql`select 1`.execute(reads)).rejects.toThrow(/closed/)
  })

  it('an in-memory database has none (a second connection would open another database)', () => {
    handle = connectDatabase('sqlite::memory:')
    expect(handle.reads).toBeUndefined()
  })
})

describe('GET /products/facets on a SQLite file', () => {
  it('reads its counts on the reader threads, with the same answer as the main connection gives', async () => {
    dir = mkdtempSync(join(tmpdir(), 'shop-readers-app-'))
    const file = `sqlite:${join(dir, 'shop.db')}`
    const withThreads = connectDatabase(file, { readers: { threads: 2 } })
    handle = withThreads
    const app = await buildApp(testConfig({}, join(dir, 'data')), { logger: false, database: withThreads })
    // The same file, without threads: every query on its one connection.
    const without = connectDatabase(file, { readers: { threads: 0 } })
    const plain = await buildApp(testConfig({}, join(dir, 'data-plain')), { logger: false, database: without })
    try {
      expect(app.reads).toBe(withThreads.reads)
      expect(plain.reads).toBe(without.db)
      await makeProduct(app, { name: 'Taza', priceCents: 500, stock: 3 })
      await makeProduct(app, { name: 'Plato', priceCents: 900, stock: 0 })
      const answers = []
      for (const shop of [app, plain]) {
        const res = await shop.inject({ url: '/products/facets?inStock=true' })
        expect(res.statusCode, res.body).toBe(200)
        answers.push(res.json())
      }
      expect(answers[0]).toMatchObject({ total: 1, price: { min: 5, max: 5 } })
      expect(answers[0]).toEqual(answers[1])
      expect(withThreads.readers?.answered).toBeGreaterThan(0)
    } finally {
      await app.close()
      await plain.close()
      await without.db.destroy()
    }
  })
})
