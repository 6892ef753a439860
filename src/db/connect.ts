import { mkdirSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, resolve } from 'node:path'
import type SQLite from 'better-sqlite3'
import { CompiledQuery, type DatabaseConnection, type Driver, Kysely, PostgresDialect, type SqliteDialectConfig, SqliteDriver } from 'kysely'
import pg from 'pg'
import { alwaysAvailable, DatabaseStatus, DatabaseUnavailableError, guardPool } from './availability.js'
import type { Database } from './database.js'
import { SqliteStatementDialect } from './sqlite-compiler.js'
import { MIGRATION_LOCK_WAIT_MS, MigrationLockDialect, MigrationLockTimeoutError } from './migration-lock.js'
import { openSqlite } from './sqlite-connection.js'
import { readerKysely, SqliteReaderPool } from './sqlite-readers.js'

export type Dialect = 'sqlite' | 'postgres'

export interface DatabaseHandle {
  readonly db: Kysely<Database>
  readonly dialect: Dialect
  /** PostgreSQL schema the handle works in, when not the default. */
  readonly schema?: string
  /** PostgreSQL only: a new client outside the pool, same server and schema (the cache's LISTEN). */
  readonly createClient?: () => pg.Client
  /**
   * SQLite only: the connection itself, for the one synchronous read the cart view's front door makes
   * (src/modules/cart/cart-view-cache.ts). Everything else goes through `db`.
   */
  readonly sqlite?: SQLite.Database
  /**
   * For the long reads only (the catalog's facets), never a write. SQLite on a file: reader threads, each with its own
   * connection (src/db/sqlite-readers.ts), so they need not hold the one connection in turn. PostgreSQL: a small pool
   * of its own with parallel query off. None for SQLite in memory.
   */
  readonly reads?: Kysely<Database>
  /** The threads behind `reads`. */
  readonly readers?: SqliteReaderPool
  /** Whether the database can be reached now; while it cannot, queries fail at once with a 503. */
  readonly status: DatabaseStatus
  /** One bounded round trip on a fresh connection; rejects when the database does not answer. */
  readonly probe: () => Promise<void>
  /** PostgreSQL only: the pool's connections now (for the metrics). */
  readonly pool?: { readonly totalCount: number; readonly idleCount: number; readonly waitingCount: number }
  /** PostgreSQL only: the same of `reads`' pool. */
  readonly readPool?: { readonly totalCount: number; readonly idleCount: number; readonly waitingCount: number }
}

/** Bounded waits toward PostgreSQL (config.ts reads them from PG_*_TIMEOUT_MS). */
export interface PostgresTimeouts {
  /** Opening a connection, TCP and start-up handshake included; also the wait for a free pooled one. */
  readonly connectTimeoutMs: number
  /** The server cancels a statement (and a transaction left idle) after this long; 0 turns it off. */
  readonly statementTimeoutMs: number
}

export const defaultPostgresTimeouts: PostgresTimeouts = { connectTimeoutMs: 5000, statementTimeoutMs: 5000 }

/**
 * A query whose answer has not arrived this long after the server should have cancelled it is
 * given up on the client side (a server that accepts and never answers), and its connection dropped.
 */
const READ_TIMEOUT_MARGIN_MS = 1000
/** Idle connections are closed after this long, so a pool does not sit on connections it no longer needs. */
const IDLE_TIMEOUT_MS = 10_000
/** TCP keepalive on every connection, so a peer that vanished is noticed by the kernel too. */
const KEEPALIVE_DELAY_MS = 10_000

export interface ConnectOptions {
  /** PostgreSQL only: the schema to use (tests give each file its own). */
  readonly schema?: string
  readonly poolSize?: number
  readonly timeouts?: PostgresTimeouts
  /**
   * PostgreSQL only: send the statements of `prepared` (src/db/prepared.ts) as named prepared statements, parsed and
   * planned once per connection (default). Off for a pooler in transaction mode that cannot keep them (PgBouncer
   * before 1.21, or without `max_prepared_statements`).
   */
  readonly preparedStatements?: boolean
  /** SQLite on a file: the reader threads (default: up to 4, one per core; none on one core) and their bound. */
  readonly readers?: { readonly threads?: number; readonly timeoutMs?: number }
  /**
   * PostgreSQL only: added to the connections' application_name (`shop-api-cli`). The CLI's connections are then
   * not the running instances' (registered in `service_connections`), so the catalog's triggers tell the instances
   * of the CLI's writes (the seed, copy-images, a reconciliation that cancels an order).
   */
  readonly nameSuffix?: string
  /**
   * PostgreSQL only: how long a migration waits for another process's to end (another instance starting, `npm run
   * migrate`) before it fails (default 5 minutes; src/db/migration-lock.ts).
   */
  readonly migrationLockWaitMs?: number
}

/** PostgreSQL: the connections of `reads` (a facet request runs five or six queries at once). */
const READ_POOL_SIZE = 6
/** A read on a reader thread with no answer by then fails with a 503, as a PostgreSQL statement past its timeout. */
const READER_TIMEOUT_MS = 5000

// COUNT(*) and bigint columns come back as strings by default; every count we read fits a JS number.
pg.types.setTypeParser(20, (v) => Number.parseInt(v, 10))

/** Opens the database named by a `sqlite:` or `postgres://` URL. */
export function connectDatabase(url: string, options: ConnectOptions = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length)
    const memory = file === ':memory:' || file === ''
    if (!memory) mkdirSync(dirname(resolve(file)), { recursive: true })
    const database = openSqlite(memory ? ':memory:' : file, 'writer')
    dropStat4Samples(database)
    const cores = availableParallelism()
    const threads = memory ? 0 : (options.readers?.threads ?? (cores > 1 ? Math.min(4, cores) : 0))
    const readers = threads > 0 ? new SqliteReaderPool(resolve(file), { threads, timeoutMs: options.readers?.timeoutMs ?? READER_TIMEOUT_MS }) : undefined
    return {
      db: new Kysely<Database>({ dialect: new WriteFirstSqliteDialect({ database, onDestroy: async () => readers?.close() }) }),
      dialect: 'sqlite',
      sqlite: database,
      ...(readers ? { reads: readerKysely(readers), readers } : {}),
      status: alwaysAvailable(),
      probe: async () => {},
    }
  }
  const { connectTimeoutMs, statementTimeoutMs } = options.timeouts ?? defaultPostgresTimeouts
  // pg_stat_activity names every connection: `shop-api` unless the URL says (?application_name=),
  // and the change feed's listener the same with `-listener`.
  const { applicationName, poolUrl, listenerUrl } = nameConnections(url, options.nameSuffix)
  const clientConfig: pg.ClientConfig = {
    connectionString: poolUrl,
    application_name: applicationName,
    connectionTimeoutMillis: connectTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    ...(statementTimeoutMs > 0
      ? {
          statement_timeout: statementTimeoutMs,
          // A transaction left open (a frozen instance) would otherwise hold its row locks for hours.
          idle_in_transaction_session_timeout: statementTimeoutMs,
          query_timeout: statementTimeoutMs + READ_TIMEOUT_MARGIN_MS,
        }
      : {}),
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  }
  const pool = new pg.Pool({ ...clientConfig, max: options.poolSize ?? 10, idleTimeoutMillis: IDLE_TIMEOUT_MS })
  // The long reads' own connections (`reads`: the facets), with parallel query off: a facet request already runs its
  // five queries at once, and each also asking for parallel workers made them fight for the same cores (at 100,000
  // products, the facets took 57 ms at p50 with them, 37 without). A pool of their own also keeps them from taking
  // every connection the orders need.
  // Set at start-up, like the timeouts above (a URL that sets `options` itself replaces this, as it does the schema).
  const readPool = new pg.Pool({
    ...clientConfig,
    options: [clientConfig.options, '-c max_parallel_workers_per_gather=0'].filter(Boolean).join(' '),
    max: READ_POOL_SIZE,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
  })
  const probe = async () => {
    const client = new pg.Client({ ...clientConfig, query_timeout: connectTimeoutMs })
    client.on('error', () => {})
    try {
      await client.connect()
      await client.query('select 1')
    } catch (error) {
      // "Too many connections" is an answer: the server is there, only full (the pool's own still work).
      if ((error as { code?: unknown }).code === '53300') return
      // pg says "timeout expired" or "Query read timeout"; say what did not happen in time.
      if (error instanceof Error && /timeout/i.test(error.message) && !('code' in error)) {
        throw new Error(`no answer within ${connectTimeoutMs} ms`, { cause: error })
      }
      throw error
    } finally {
      await client.end().catch(() => {})
    }
  }
  const status = new DatabaseStatus(probe)
  // Without these, a pooled connection that PostgreSQL ends (a restart, a failover, pg_terminate_backend)
  // emits an 'error' nobody handles, and the process exits. pg-pool drops the idle one itself; a
  // checked-out one fails its next query, and that query's answer says so.
  for (const each of [pool, readPool]) {
    each.on('error', (error) => status.suspect(error))
    each.on('connect', (client) => client.on('error', (error) => status.suspect(error)))
  }
  const end = pool.end.bind(pool)
  pool.end = async () => {
    status.close()
    await Promise.all([end(), readPool.ended ? undefined : readPool.end()])
  }
  return {
    db: new Kysely<Database>({
      dialect: new MigrationLockDialect(
        { pool: guardPool(pool, status, { named: options.preparedStatements ?? true }) },
        options.migrationLockWaitMs ?? MIGRATION_LOCK_WAIT_MS,
      ),
    }),
    // Ended with `db` (its pool's end ends this one): destroying `reads` itself is not needed.
    reads: new Kysely<Database>({ dialect: new PostgresDialect({ pool: guardPool(readPool, status, { named: options.preparedStatements ?? true }) }) }),
    readPool,
    dialect: 'postgres',
    createClient: () => new pg.Client({ ...clientConfig, connectionString: listenerUrl }),
    status,
    probe,
    pool,
    ...(options.schema ? { schema: options.schema } : {}),
  }
}

/**
 * SQLite transactions begin with the write lock (`begin immediate`). Kysely's driver says `begin`, which takes the
 * lock at the first write: a transaction that read first (every update reads and locks its row before writing) then
 * failed at once with SQLITE_BUSY whenever another process (a second instance, a CLI command, a cron sweep) had
 * written since its read, and the busy timeout did not help (measured: 1 PATCH in about 12,000 answered 500 while
 * the bench's service ran beside it). Begun immediate, the transaction waits for the lock instead, up to the busy
 * timeout. Within one process nothing changes: Kysely gives its one connection to one transaction at a time.
 */
class WriteFirstSqliteDialect extends SqliteStatementDialect {
  readonly #config: SqliteDialectConfig & { onDestroy: () => Promise<void> }

  constructor(config: SqliteDialectConfig & { onDestroy: () => Promise<void> }) {
    super(config)
    this.#config = config
  }

  override createDriver(): Driver {
    return new WriteFirstSqliteDriver(this.#config)
  }
}

class WriteFirstSqliteDriver extends SqliteDriver {
  readonly #onDestroy: () => Promise<void>

  constructor(config: SqliteDialectConfig & { onDestroy: () => Promise<void> }) {
    super(config)
    this.#onDestroy = config.onDestroy
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
  }

  /** Closing the database ends its reader threads too (they would keep their connections open). */
  override async destroy(): Promise<void> {
    await this.#onDestroy()
    await super.destroy()
  }
}

function nameConnections(url: string, suffix = ''): { applicationName: string; poolUrl: string; listenerUrl: string } {
  try {
    const parsed = new URL(url)
    const named = parsed.searchParams.get('application_name')
    const applicationName = `${named ?? 'shop-api'}${suffix}`.slice(0, 63)
    // pg prefers the URL's name to the config's: a URL that names its connections gets the suffix in it.
    if (named !== null) parsed.searchParams.set('application_name', applicationName)
    const poolUrl = named !== null ? parsed.toString() : url
    parsed.searchParams.set('application_name', `${applicationName}-listener`.slice(0, 63))
    return { applicationName, poolUrl, listenerUrl: parsed.toString() }
  } catch {
    // pg reads more forms than URL does; such a URL names its connections itself, or not at all.
    return { applicationName: `shop-api${suffix}`, poolUrl: url, listenerUrl: url }
  }
}

/** The database URL without its password, for messages. */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url)
    parsed.password = ''
    parsed.search = ''
    return parsed.toString()
  } catch {
    return url.startsWith('sqlite:') ? url : 'the configured database'
  }
}

/** The service cannot start because the database does not answer, or refuses it; the message is one line for the operator. */
export class DatabaseStartupError extends Error {
  constructor(url: string, reason: unknown, within?: number) {
    super(startupMessage(url, reason, within))
    this.name = 'DatabaseStartupError'
  }
}

function startupMessage(url: string, reason: unknown, within: number | undefined): string {
  const database = `Cannot start: the database at ${describeDatabaseUrl(url)}`
  const why = reason instanceof Error ? reason.message : String(reason)
  const refusal = refusalCode(reason)
  if (refusal !== undefined) {
    const sqlstate = /^[0-9A-Z]{5}$/.test(refusal) ? `, SQLSTATE ${refusal}` : ''
    return `${database} refused the connection (${why}${sqlstate}); waiting will not change that: check DATABASE_URL.`
  }
  const when = within === undefined ? 'stopped answering during start-up' : `did not answer within ${Math.round(within / 1000)} s`
  return `${database} ${when} (${why || 'no answer'}); giving up.`
}

/**
 * The answers of a PostgreSQL server that waiting cannot change: no such database (3D000), a role that does not
 * exist or may not log in, no pg_hba.conf entry (28000), a wrong password (28P01), no CONNECT privilege (42501),
 * an unknown or bad setting in the URL's options (42704, 22023). Every other failure (refused, unreachable, a
 * server starting up or shutting down: 57P03, 57P01) may pass, and is waited for.
 */
const REFUSALS = new Set(['3D000', '28000', '28P01', '42501', '42704', '22023'])

/** The SQLSTATE of a refusal (or pg's own word for a missing password), or undefined for a failure that may pass. */
function refusalCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string' && (REFUSALS.has(code) || code.startsWith('28'))) return code
  // The server asks for a password (SCRAM) and the URL has none: pg says so before sending anything.
  if (error instanceof Error && /client password must be a string/.test(error.message)) return 'no password'
  return undefined
}

/** The one line to print when start-up failed for want of a database; undefined for any other failure. */
export function startupFailureLine(error: unknown, url: string): string | undefined {
  if (error instanceof DatabaseStartupError) return error.message
  if (error instanceof MigrationLockTimeoutError) {
    return `Cannot start: the database at ${describeDatabaseUrl(url)} is being migrated by another process, which held the migration lock for ${Math.round(error.waitMs / 1000)} s; giving up (start again once that migration has ended).`
  }
  if (error instanceof DatabaseUnavailableError) return new DatabaseStartupError(url, error.cause ?? error).message
  return undefined
}

/**
 * Start-up: waits until the database answers, trying again every half second, for at most
 * `timeoutMs`; then throws a DatabaseStartupError. A refusal that waiting cannot change (no such
 * database, a wrong user or password) throws at once.
 */
export async function waitForDatabase(handle: DatabaseHandle, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      await handle.probe()
      return
    } catch (error) {
      if (refusalCode(error) !== undefined) throw new DatabaseStartupError(url, error)
      if (Date.now() + 500 >= deadline) throw new DatabaseStartupError(url, error, timeoutMs)
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
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
