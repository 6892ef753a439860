import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { connectDatabase } from '../../src/db/connect.js'

let dir: string | undefined
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

/** Another process writing one row to `file`, waiting for the write lock up to 5 s (as the service does). */
function writeFromAnotherProcess(file: string): Promise<{ code: number | null; stderr: string }> {
  const script = `
    const SQLite = require('better-sqlite3')
    const db = new SQLite(${JSON.stringify(file)})
    db.pragma('busy_timeout = 5000')
    db.prepare('insert into t (x) values (2)').run()
    db.close()`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })))
}

describe('SQLite transactions and other processes', () => {
  it('a transaction that reads, then writes after another process wrote, waits for the lock instead of failing with SQLITE_BUSY', async () => {
    dir = mkdtempSync(join(tmpdir(), 'shop-write-lock-'))
    const file = join(dir, 'shop.db')
    const { db } = connectDatabase(`sqlite:${file}`)
    await sql`create table t (x integer not null)`.execute(db)
    await sql`insert into t (x) values (1)`.execute(db)
    let other: Promise<{ code: number | null; stderr: string }> | undefined
    try {
      await db.transaction().execute(async (trx) => {
        // The read that every update starts with (its row, under lock on PostgreSQL)...
        const before = await sql<{ n: number }>`select count(*) as n from t`.execute(trx)
        expect(before.rows[0]?.n).toBe(1)
        // ...then another process writes: begun with `begin`, its write went through at once and this
        // transaction's own write below failed with "database is locked"; begun immediate, it waits for this one.
        other = writeFromAnotherProcess(file)
        await new Promise((resolve) => setTimeout(resolve, 500))
        await sql`insert into t (x) values (3)`.execute(trx)
      })
    } finally {
      const result = await other
      expect(result?.code, result?.stderr).toBe(0)
    }
    const rows = await sql<{ x: number }>`select x from t order by rowid`.execute(db)
    // This transaction's row first: the other process waited for its commit.
    expect(rows.rows.map((row) => row.x)).toEqual([1, 3, 2])
    await db.destroy()
  })
})
