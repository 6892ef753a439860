import { sql } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { migrateToLatest, migrationNames } from '../../src/db/migrate.js'
import { createPgSchema, type PgSchema } from '../helpers/pg-schema.js'

// A shop whose DATABASE_URL puts it in a schema of its own (`?options=-c search_path=shop`), on a server where
// another schema already holds Kysely's bookkeeping tables (another shop, another app). Kysely's check for its
// lock table looks at every schema: the migration must keep to the URL's schema, not take the other one's.
const url = process.env.TEST_DIALECT === 'postgres' ? process.env.TEST_DATABASE_URL : undefined

describe.skipIf(!url)('migrations in the schema a DATABASE_URL names', () => {
  const schemas: PgSchema[] = []
  const handles: DatabaseHandle[] = []
  afterAll(async () => {
    for (const handle of handles) await handle.db.destroy()
    for (const schema of schemas) await schema.drop()
  })

  async function shopIn(prefix: string): Promise<{ handle: DatabaseHandle; schema: string }> {
    const schema = await createPgSchema(url as string, prefix)
    schemas.push(schema)
    const inSchema = new URL(url as string)
    inSchema.searchParams.set('options', `-c search_path=${schema.name}`)
    const handle = connectDatabase(inSchema.href)
    handles.push(handle)
    return { handle, schema: schema.name }
  }

  it('creates and fills its own bookkeeping tables while another schema has them', async () => {
    const first = await shopIn('migrate_first')
    await migrateToLatest(first.handle.db)
    const second = await shopIn('migrate_second')
    const result = await migrateToLatest(second.handle.db)
    expect(result.results?.map((applied) => applied.migrationName)).toEqual(migrationNames)

    const { rows } = await sql<{ schema: string; table: string }>`
      select table_schema as schema, table_name as table from information_schema.tables
      where table_schema in (${first.schema}, ${second.schema}) and table_name in ('kysely_migration', 'kysely_migration_lock', 'products')
      order by 1, 2`.execute(second.handle.db)
    expect(rows).toEqual(
      [first.schema, second.schema].flatMap((schema) => ['kysely_migration', 'kysely_migration_lock', 'products'].map((table) => ({ schema, table }))),
    )
    // A second start finds its schema up to date.
    expect((await migrateToLatest(second.handle.db)).results).toEqual([])
  })
})
