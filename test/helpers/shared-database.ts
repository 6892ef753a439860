import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { dialect } from './app.js'

/**
 * One database for several real instances of the service, each opening its own connections (and
 * on PostgreSQL its own change listener): a SQLite file, or one PostgreSQL schema.
 */
export interface SharedDatabase {
  open: () => DatabaseHandle
  drop: () => Promise<void>
}

export async function createSharedDatabase(name: string): Promise<SharedDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `shop-${name}-`))
    return { open: () => connectDatabase(`sqlite:${join(dir, 'shop.db')}`), drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  const url = process.env.TEST_DATABASE_URL
  if (!url) throw new Error('TEST_DIALECT=postgres needs TEST_DATABASE_URL')
  const schema = `test_${name}_${process.pid}_${Date.now()}`
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`create schema ${schema}`)
  await admin.end()
  return {
    open: () => connectDatabase(url, { schema, poolSize: 4 }),
    drop: async () => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      await client.query(`drop schema ${schema} cascade`)
      await client.end()
    },
  }
}
