import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { connectDatabase } from '../../src/db/connect.js'
import { migrateToLatest } from '../../src/db/migrate.js'

let dir: string | undefined
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

describe('SQLite statistics', () => {
  it('drops ANALYZE’s stat4 samples when the database is opened, keeps stat1, and plans from stat1', async () => {
    dir = mkdtempSync(join(tmpdir(), 'shop-stat4-'))
    const file = join(dir, 'shop.db')
    const first = connectDatabase(`sqlite:${file}`)
    await migrateToLatest(first.db)
    await first.db.destroy()

    // What an operator's ANALYZE leaves behind, written with a plain connection.
    const raw = new SQLite(file)
    raw.exec(`insert into users (name, email, password_hash, role, created_at, updated_at, credentials_changed_at)
              values ('a', 'a@shop.test', 'x', 'customer', 't', 't', 't'), ('b', 'b@shop.test', 'x', 'customer', 't', 't', 't')`)
    raw.exec('analyze')
    const stat4 = () => (raw.prepare('select count(*) as n from sqlite_stat4').get() as { n: number }).n
    const stat1 = () => (raw.prepare('select count(*) as n from sqlite_stat1').get() as { n: number }).n
    expect(stat4()).toBeGreaterThan(0)
    const stat1Rows = stat1()
    expect(stat1Rows).toBeGreaterThan(0)

    const reopened = connectDatabase(`sqlite:${file}`)
    expect(stat4()).toBe(0)
    expect(stat1()).toBe(stat1Rows)
    const user = await reopened.db.selectFrom('users').select('name').where('email', '=', 'b@shop.test').executeTakeFirst()
    expect(user).toEqual({ name: 'b' })
    await reopened.db.destroy()
    raw.close()
  })
})
