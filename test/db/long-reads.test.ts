import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { dialect, openTestDatabase } from '../helpers/app.js'

// `reads`, the long reads' connections (the facets): SQLite's reader threads (test/db/sqlite-readers.sqlite.test.ts),
// or PostgreSQL's pool of its own.

describe.runIf(dialect === 'postgres')('PostgreSQL: the long reads’ pool', () => {
  it('works in the handle’s schema, with parallel query off, and closes with the database', async () => {
    const { handle, drop } = await openTestDatabase()
    const { db, reads } = handle
    if (!reads) throw new Error('no pool for the long reads')
    try {
      await sql`create table t (x integer not null)`.execute(db)
      await sql`insert into t (x) values (1), (2)`.execute(db)
      const counted = await sql<{ n: number }>`select count(*)::int as n from t`.execute(reads)
      expect(counted.rows).toEqual([{ n: 2 }])
      // Every connection of the pool says it, the first and those opened beside it.
      const settings = await Promise.all(
        Array.from({ length: 3 }, () => sql<{ max_parallel_workers_per_gather: string }>`show max_parallel_workers_per_gather`.execute(reads)),
      )
      expect(settings.map((result) => result.rows[0]?.max_parallel_workers_per_gather)).toEqual(['0', '0', '0'])
      // The orders' pool keeps the server's setting (what a session starts with there).
      const main = await sql<{ setting: string; reset_val: string }>`select setting, reset_val from pg_settings
        where name = 'max_parallel_workers_per_gather'`.execute(db)
      expect(main.rows[0]?.setting).toBe(main.rows[0]?.reset_val)
      const server = await sql<{ setting: string }>`select setting from pg_settings where name = 'max_parallel_workers_per_gather'`.execute(reads)
      expect(server.rows[0]?.setting).toBe('0')
    } finally {
      await drop()
    }
    await expect(sql`select 1`.execute(reads)).rejects.toThrow()
  })
})

describe.runIf(dialect === 'sqlite')('SQLite in memory', () => {
  it('has no reader threads: the app’s long reads use its one connection', async () => {
    const { handle, drop } = await openTestDatabase()
    try {
      expect(handle.reads).toBeUndefined()
    } finally {
      await drop()
    }
  })
})
