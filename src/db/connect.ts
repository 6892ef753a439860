import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import type { Database } from './database.js'

export type Dialect = 'sqlite' | 'postgres'

export interface DatabaseHandle {
  readonly db: Kysely<Database>
  readonly dialect: Dialect
  /** PostgreSQL schema the handle works in, when not the default. */
  readonly schema?: string
  /** PostgreSQL only: a new client outside the pool, same server and schema (the cache's LISTEN). */
  readonly createClient?: () => pg.Client
}

export interface ConnectOptions {
  /** PostgreSQL only: the schema to use (tests give each file its own). */
  readonly schema?: string
  readonly poolSize?: number
}

// COUNT(*) and bigint columns come back as strings by default; every count we read fits a JS number.
pg.types.setTypeParser(20, (v) => Number.parseInt(v, 10))

/** Opens the database named by a `sqlite:` or `postgres://` URL. */
export function connectDatabase(url: string, options: ConnectOptions = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length)
    const memory = file === ':memory:' || file === ''
    if (!memory) mkdirSync(dirname(resolve(file)), { recursive: true })
    const database = new SQLite(memory ? ':memory:' : file)
    database.pragma('journal_mode = WAL')
    database.pragma('foreign_keys = ON')
    database.pragma('busy_timeout = 5000')
    database.pragma('synchronous = NORMAL')
    dropStat4Samples(database)
    reusePreparedStatements(database)
    // SQLite's own lower() and LIKE fold only ASCII letters; searches of non-ASCII text use this instead.
    database.function('fold_case', { deterministic: true }, (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : value))
    return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database }) }), dialect: 'sqlite' }
  }
  const clientConfig: pg.ClientConfig = {
    connectionString: url,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  }
  const pool = new pg.Pool({ ...clientConfig, max: options.poolSize ?? 10 })
  return {
    db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }),
    dialect: 'postgres',
    createClient: () => new pg.Client(clientConfig),
    ...(options.schema ? { schema: options.schema } : {}),
  }
}

/**
 * SQLite built with STAT4 (better-sqlite3 is) prepares a statement afresh every time a parameter changes
 * whose value its plan looked up in `sqlite_stat4`'s samples. Once someone has run ANALYZE, every cart
 * read and write was re-planned on each call (measured: 33 µs instead of 16 µs for a 5-line cart). The
 * service's queries are all index lookups that `sqlite_stat1` alone plans well, so the samples are
 * dropped when the database is opened and stat1 is kept.
 */
function dropStat4Samples(database: SQLite.Database): void {
  if (!database.prepare("select 1 from sqlite_schema where type = 'table' and name = 'sqlite_stat4'").get()) return
  if (!database.prepare('select 1 from sqlite_stat4 limit 1').get()) return
  database.exec('delete from sqlite_stat4; analyze sqlite_schema')
}

/**
 * Kysely's SQLite driver prepares every query afresh, which costs about as much as running it. A better-sqlite3
 * statement can be run again with new parameters (and SQLite re-prepares it after a schema change), so the most
 * recent ones are kept per SQL text. One connection runs one statement at a time, so a statement is never shared
 * by two running queries.
 */
function reusePreparedStatements(database: SQLite.Database, max = 1000): void {
  const prepare = database.prepare.bind(database)
  const statements = new Map<string, SQLite.Statement>()
  database.prepare = ((source: string) => {
    let statement = statements.get(source)
    if (!statement) {
      statement = prepare(source)
      if (statements.size >= max) statements.delete(statements.keys().next().value as string)
      statements.set(source, statement)
    }
    return statement
  }) as SQLite.Database['prepare']
}
