import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { dialect } from './app.js'
import { createPgSchema, testDatabaseUrl } from './pg-schema.js'

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
  const url = testDatabaseUrl()
  const schema = await createPgSchema(url, `test_${name}`)
  return { open: () => connectDatabase(url, { schema: schema.name, poolSize: 4 }), drop: schema.drop }
}
