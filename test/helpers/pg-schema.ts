import pg from 'pg'

/**
 * The one place that creates and drops throw-away PostgreSQL schemas, for the tests (a schema per
 * test file, or per shared database) and for the benches. Many processes use the same server at the
 * same time, so each schema has a name no other process will pick, and it is dropped with all it holds.
 */
export interface PgSchema {
  /** The schema's name: lower-case letters, digits and `_`, so it needs no quoting in `search_path`. */
  readonly name: string
  /** Drops the schema and everything in it. Close the connections that use it first. */
  drop: () => Promise<void>
}

/** The server the PostgreSQL tests run against (TEST_DATABASE_URL). */
export function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL
  if (!url) throw new Error('TEST_DIALECT=postgres needs TEST_DATABASE_URL')
  return url
}

/** Bounded waits, so that a silent server fails the test's hook instead of hanging it. */
const ADMIN_CLIENT = { connectionTimeoutMillis: 10_000, statement_timeout: 30_000 }

async function run(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, ...ADMIN_CLIENT })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/** Creates a new, empty schema named `<prefix>_<pid>_<time>_<random>`. */
export async function createPgSchema(url: string, prefix = 'test'): Promise<PgSchema> {
  const safePrefix = prefix.toLowerCase().replace(/[^a-z0-9_]/g, '_')
  const name = `${safePrefix}_${process.pid}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`
  await run(url, `create schema ${pg.escapeIdentifier(name)}`)
  return { name, drop: () => run(url, `drop schema if exists ${pg.escapeIdentifier(name)} cascade`) }
}
