import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { connectDatabase, type DatabaseHandle, startupFailureLine } from '../../src/db/connect.js'
import { migrateToLatest, migrationNames } from '../../src/db/migrate.js'
import { MigrationLockTimeoutError } from '../../src/db/migration-lock.js'
import { createPgSchema, type PgSchema } from '../helpers/pg-schema.js'

// Instances that start together take turns at migrating (Kysely's advisory lock, one for the server). The wait for the
// lock is bounded on its own, not by the statement timeout: a migration elsewhere that takes longer than a statement may
// no longer stops this instance from starting (CI: four services starting at once, each on a new schema, on a slow VM).
const url = process.env.TEST_DIALECT === 'postgres' ? process.env.TEST_DATABASE_URL : undefined
/** Kysely's lock id, as its PostgreSQL adapter takes it (a session lock, released when the migration ends). */
const LOCK_ID = '3853314791062309107'
const STATEMENT_TIMEOUT_MS = 2000

describe.skipIf(!url)('the migration lock on PostgreSQL', () => {
  const schemas: PgSchema[] = []
  const handles: DatabaseHandle[] = []
  afterAll(async () => {
    for (const handle of handles) await handle.db.destroy()
    for (const schema of schemas) await schema.drop()
  })

  async function shop(options: { migrationLockWaitMs?: number } = {}): Promise<DatabaseHandle> {
    const schema = await createPgSchema(url as string, 'migration_lock')
    schemas.push(schema)
    const handle = connectDatabase(url as string, {
      schema: schema.name,
      timeouts: { connectTimeoutMs: 5000, statementTimeoutMs: STATEMENT_TIMEOUT_MS },
      ...options,
    })
    handles.push(handle)
    return handle
  }

  /** Another process migrating: a connection that holds the lock until `release` is called. */
  async function holdLock(): Promise<{ release: () => Promise<void> }> {
    // Waits as long as another test file's migration may take on a slow machine (the lock is one for the server).
    const client = new pg.Client({ connectionString: url, statement_timeout: 120_000 })
    await client.connect()
    await client.query(`select pg_advisory_lock(${LOCK_ID})`)
    return {
      release: async () => {
        await client.query(`select pg_advisory_unlock(${LOCK_ID})`)
        await client.end()
      },
    }
  }

  /** The schema's tables besides Kysely's bookkeeping (created before the lock is asked for). */
  const tables = async (handle: DatabaseHandle) =>
    (
      await sql<{ table: string }>`select table_name as table from information_schema.tables
        where table_schema = ${handle.schema} and table_name not like 'kysely_migration%'`.execute(handle.db)
    ).rows

  it('waits past the statement timeout for another process’s migration, then migrates', async () => {
    const handle = await shop()
    const held = await holdLock()
    const migrating = migrateToLatest(handle.db, handle.schema)
    // Still waiting, past the statement timeout that cancelled Kysely's blocking wait.
    await new Promise((resolve) => setTimeout(resolve, 2 * STATEMENT_TIMEOUT_MS))
    expect(await tables(handle)).toEqual([])
    await held.release()
    const result = await migrating
    expect(result.results?.map((applied) => applied.migrationName)).toEqual(migrationNames)
    expect(await tables(handle)).toContainEqual({ table: 'products' })
    // And let go of the lock: the next process gets it at once.
    const next = await holdLock()
    await next.release()
  })

  it('gives up after its own bound with a line that says why, and has created nothing', async () => {
    const handle = await shop({ migrationLockWaitMs: 2 * STATEMENT_TIMEOUT_MS })
    const held = await holdLock()
    try {
      const error = await migrateToLatest(handle.db, handle.schema).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(MigrationLockTimeoutError)
      expect(startupFailureLine(error, 'postgres://shop:secret@db.internal:5432/shop')).toBe(
        'Cannot start: the database at postgres://shop@db.internal:5432/shop is being migrated by another process, which held the migration lock for 4 s; giving up (start again once that migration has ended).',
      )
      expect(await tables(handle)).toEqual([])
    } finally {
      await held.release()
    }
    // Once the other process is done, the next start migrates.
    expect((await migrateToLatest(handle.db, handle.schema)).results?.map((applied) => applied.migrationName)).toEqual(migrationNames)
  })
})
