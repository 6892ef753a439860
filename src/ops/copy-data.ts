import { createHash } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { describeDatabaseUrl } from '../db/connect.js'
import type { Database } from '../db/database.js'
import { migrateToLatest, migrationNames } from '../db/migrate.js'
import { SqliteStatementDialect } from '../db/sqlite-compiler.js'

/**
 * `copy-data`: carries every row of one shop database into another (SQLite → PostgreSQL, PostgreSQL →
 * SQLite, or the same kind), as an exact image. The tables are discovered from the migrated schema, so a
 * table added by a later migration is copied without a change here. The copy runs in one transaction on
 * the target and is checked (row counts and a checksum per table) before that transaction commits: a copy
 * that fails or is interrupted leaves the target without a single copied row, and can simply be run again.
 */

/** Bad input or a refusal: one line for the operator, nothing written (the CLI exits with 2). */
export class CopyRefusedError extends Error {
  override name = 'CopyRefusedError'
}

/** The copy ran but the target did not read back as the source: rolled back (the CLI exits with 1). */
export class CopyMismatchError extends Error {
  override name = 'CopyMismatchError'
  constructor(readonly tables: TableReport[]) {
    super(
      `the copy did not read back as the source (${tables
        .filter((t) => !t.ok)
        .map((t) => t.table)
        .join(', ')}); nothing was committed`,
    )
  }
}

export interface CopyOptions {
  readonly from: string
  readonly to: string
  /** Empty a target that holds rows, then copy. */
  readonly force?: boolean
  /** Rows per batch read from the source and written to the target. */
  readonly batchSize?: number
  /** PostgreSQL: the bounded wait for a connection (PG_CONNECT_TIMEOUT_MS). */
  readonly connectTimeoutMs?: number
  /** PostgreSQL: the longest one statement may run (a batch, a count); at least a minute. */
  readonly statementTimeoutMs?: number
  readonly progress?: CopyProgress
}

/** How far the copy is: `rows` of `total` in `table` (the tables in the order they are copied). */
export interface CopyProgress {
  start(tables: readonly { table: string; rows: number }[]): void
  advance(table: string, rows: number): void
  phase(name: string): void
  end(): void
}

export interface TableReport {
  readonly table: string
  readonly sourceRows: number
  readonly targetRows: number
  readonly sourceChecksum: string
  readonly targetChecksum: string
  readonly ok: boolean
}

export interface CopyReport {
  readonly tables: TableReport[]
  readonly rows: number
  readonly elapsedMs: number
  /** Whether the target was migrated by this run (a new database). */
  readonly migratedTarget: boolean
  /** Tables rebuilt from the copied rows instead of copied (SQLite's search index). */
  readonly rebuilt: string[]
}

export const DEFAULT_BATCH_SIZE = 5000
const MIN_STATEMENT_TIMEOUT_MS = 60_000
/**
 * Never copied: Kysely's own bookkeeping (compared instead: both sides at the same migration), and PostgreSQL's
 * `service_connections` (which connections are the service's on that server: each database learns its own from the
 * instances that start on it).
 */
const UNCOPIED_TABLES = new Set(['kysely_migration', 'kysely_migration_lock', 'service_connections'])

type Dialect = 'sqlite' | 'postgres'
type Value = unknown

interface Column {
  readonly name: string
  /** PostgreSQL's type name (for the batch insert's casts); SQLite's declared type. */
  readonly type: string
  /** Compared byte by byte (text): PostgreSQL orders it with the "C" collation, as SQLite does. */
  readonly text: boolean
}

interface Table {
  readonly name: string
  /** The stored columns (generated ones are computed by each database, and neither copied nor compared). */
  readonly columns: Column[]
  readonly key: Column[]
  readonly references: string[]
  /** PostgreSQL: a column that is `generated always as identity` (the insert then overrides it). */
  readonly identityAlways: boolean
}

/** One side of the copy: a single connection, raw SQL in its own dialect. */
interface Endpoint {
  readonly dialect: Dialect
  readonly label: string
  /** Rows as objects (catalog queries). */
  all<T = Record<string, unknown>>(text: string, params?: Value[]): Promise<T[]>
  /** Rows as arrays of values, integers exact (bigint when they need it). */
  rows(text: string, params?: Value[]): Promise<Value[][]>
  run(text: string, params?: Value[]): Promise<void>
  /** A Kysely over the same connection (migrations). */
  kysely(): Kysely<Database>
  close(): Promise<void>
}

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`

/** A URL as messages show it: without its password (a string that is no URL at all is shown as given, unless it has an @). */
function shown(url: string): string {
  return url.includes('@') ? describeDatabaseUrl(url) : url
}

function dialectOf(url: string): Dialect | undefined {
  if (url.startsWith('sqlite:')) return 'sqlite'
  if (/^postgres(ql)?:\/\//.test(url)) return 'postgres'
  return undefined
}

// ---------------------------------------------------------------------------------------------------
// Connections

function sqliteFileOf(url: string, flag: string): string {
  const file = url.slice('sqlite:'.length)
  if (file === '' || file === ':memory:') throw new CopyRefusedError(`${flag}: ${url} is an in-memory database; name a file (sqlite:./data/shop.db)`)
  return file
}

function openSqlite(url: string, flag: string, role: 'source' | 'target'): Endpoint {
  const file = sqliteFileOf(url, flag)
  // The source is only read: a file that is not there is a mistake in the command, never a new database.
  if (role === 'source' && !existsSync(file)) throw new CopyRefusedError(`${flag}: ${url}: no such file (the source must be an existing database)`)
  let database: SQLite.Database
  try {
    if (role === 'target') mkdirSync(dirname(resolve(file)), { recursive: true })
    database = new SQLite(file, role === 'source' ? { readonly: true, fileMustExist: true } : {})
    database.pragma('busy_timeout = 5000')
    if (role === 'target') {
      database.pragma('journal_mode = WAL')
      database.pragma('foreign_keys = ON')
    }
    database.prepare('select count(*) from sqlite_schema').get()
  } catch (error) {
    throw new CopyRefusedError(`${flag}: cannot open ${url} (${(error as Error).message})`)
  }
  return sqliteEndpoint(database, url)
}

function sqliteEndpoint(database: SQLite.Database, label: string): Endpoint {
  // Statements kept per text: the batch insert runs once per row. Arrays of values (exact integers) apart from objects.
  const cache = new Map<string, SQLite.Statement>()
  const prepare = (text: string, raw: boolean): SQLite.Statement => {
    const id = `${raw ? 'r' : 'o'}${text}`
    let statement = cache.get(id)
    if (!statement) {
      statement = database.prepare(text)
      if (raw) statement.safeIntegers(true).raw(true)
      cache.set(id, statement)
    }
    return statement
  }
  const bind = (params: Value[]) => params.map((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : v))
  return {
    dialect: 'sqlite',
    label,
    all: async <T>(text: string, params: Value[] = []) => prepare(text, false).all(...bind(params)) as T[],
    rows: async (text, params = []) => prepare(text, true).all(...bind(params)) as Value[][],
    run: async (text, params = []) => {
      const statement = prepare(text, false)
      if (statement.reader) statement.all(...bind(params))
      else statement.run(...bind(params))
    },
    kysely: () => new Kysely<Database>({ dialect: new SqliteStatementDialect({ database }) }),
    close: async () => {
      database.close()
    },
  }
}

/** Integers of 8 bytes exactly (bigint), and dates and JSON as the text PostgreSQL sends: values compare as stored. */
const exactTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === 20) return (value: string) => BigInt(value)
    if ([114, 3802, 1082, 1083, 1114, 1184, 1266, 1700].includes(oid)) return (value: string) => value
    return pg.types.getTypeParser(oid, format) as (value: string) => unknown
  }) as pg.CustomTypesConfig['getTypeParser'],
}

async function openPostgres(url: string, flag: string, options: CopyOptions): Promise<Endpoint> {
  const connectTimeoutMs = options.connectTimeoutMs ?? 5000
  const statementTimeoutMs = Math.max(options.statementTimeoutMs ?? 0, MIN_STATEMENT_TIMEOUT_MS)
  const client = new pg.Client({
    connectionString: url,
    application_name: 'shop-api-copy-data',
    connectionTimeoutMillis: connectTimeoutMs,
    statement_timeout: statementTimeoutMs,
    idle_in_transaction_session_timeout: statementTimeoutMs,
    lock_timeout: 10_000,
    query_timeout: statementTimeoutMs + 1000,
    keepAlive: true,
    types: exactTypes,
  })
  let lost: Error | undefined
  client.on('error', (error) => {
    lost = error
  })
  try {
    await client.connect()
    await client.query('select 1')
  } catch (error) {
    await client.end().catch(() => {})
    const why = error instanceof Error && /timeout/i.test(error.message) ? `no answer within ${connectTimeoutMs} ms` : (error as Error).message
    throw new CopyRefusedError(`${flag}: cannot reach ${describeDatabaseUrl(url)} (${why})`)
  }
  const query = async (config: pg.QueryConfig | pg.QueryArrayConfig): Promise<{ rows: unknown[] }> => {
    if (lost) throw new Error(`${describeDatabaseUrl(url)}: connection lost (${lost.message})`)
    return client.query(config)
  }
  return {
    dialect: 'postgres',
    label: describeDatabaseUrl(url),
    all: async <T>(text: string, params: Value[] = []) => (await query({ text, values: params })).rows as T[],
    rows: async (text, params = []) => (await query({ text, values: params, rowMode: 'array' } as pg.QueryArrayConfig)).rows as Value[][],
    run: async (text, params = []) => {
      await query({ text, values: params })
    },
    kysely: () =>
      new Kysely<Database>({
        dialect: new PostgresDialect({
          // The one connection, lent to Kysely and never closed by it.
          pool: { connect: async () => Object.assign(client, { release: () => {} }), end: async () => {} },
        }),
      }),
    close: async () => {
      await client.end().catch(() => {})
    },
  }
}

async function open(url: string, flag: string, role: 'source' | 'target', options: CopyOptions): Promise<Endpoint> {
  const dialect = dialectOf(url)
  if (dialect === undefined) throw new CopyRefusedError(`${flag}: "${shown(url)}" is not a database URL (sqlite:<file> or postgres://...)`)
  return dialect === 'sqlite' ? openSqlite(url, flag, role) : openPostgres(url, flag, options)
}

// ---------------------------------------------------------------------------------------------------
// The schema, as each database describes it

async function tableNames(side: Endpoint): Promise<string[]> {
  if (side.dialect === 'sqlite') {
    const rows = await side.all<{ name: string }>(
      "select name from pragma_table_list where schema = 'main' and type = 'table' and name not like 'sqlite\\_%' escape '\\'",
    )
    return rows.map((r) => r.name).sort()
  }
  const rows = await side.all<{ name: string }>(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = current_schema() and c.relkind in ('r', 'p') and not c.relispartition order by c.relname`,
  )
  return rows.map((r) => r.name)
}

async function describeTable(side: Endpoint, name: string): Promise<Table> {
  if (side.dialect === 'sqlite') {
    const columns = await side.all<{ name: string; type: string; pk: number; hidden: number }>(
      'select name, type, pk, hidden from pragma_table_xinfo(?) order by cid',
      [name],
    )
    const stored = columns.filter((c) => c.hidden === 0)
    const toColumn = (c: { name: string; type: string }): Column => ({ name: c.name, type: c.type, text: /char|clob|text/i.test(c.type) })
    const key = stored
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map(toColumn)
    const references = await side.all<{ table: string }>('select distinct "table" from pragma_foreign_key_list(?)', [name])
    return { name, columns: stored.map(toColumn), key, references: references.map((r) => r.table), identityAlways: false }
  }
  const relation = `${quote((await side.all<{ schema: string }>('select current_schema() as schema'))[0]!.schema)}.${quote(name)}`
  const columns = await side.all<{ name: string; type: string; generated: boolean; identity: string; category: string }>(
    `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, a.attgenerated <> '' as generated, a.attidentity as identity, t.typcategory as category
     from pg_attribute a join pg_type t on t.oid = a.atttypid
     where a.attrelid = $1::regclass and a.attnum > 0 and not a.attisdropped order by a.attnum`,
    [relation],
  )
  const keyNames = await side.all<{ name: string }>(
    `select a.attname as name from pg_index i cross join lateral unnest(i.indkey) with ordinality k(attnum, ord)
     join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
     where i.indrelid = $1::regclass and i.indisprimary order by k.ord`,
    [relation],
  )
  const references = await side.all<{ table: string }>(
    `select distinct r.relname as table from pg_constraint c join pg_class r on r.oid = c.confrelid where c.conrelid = $1::regclass and c.contype = 'f'`,
    [relation],
  )
  const stored = columns.filter((c) => !c.generated).map((c) => ({ name: c.name, type: c.type, text: c.category === 'S' }))
  return {
    name,
    columns: stored,
    key: keyNames.map((k) => stored.find((c) => c.name === k.name)!),
    references: references.map((r) => r.table),
    identityAlways: columns.some((c) => c.identity === 'a'),
  }
}

async function describeSchema(side: Endpoint): Promise<Map<string, Table>> {
  const tables = new Map<string, Table>()
  for (const name of await tableNames(side)) if (!UNCOPIED_TABLES.has(name)) tables.set(name, await describeTable(side, name))
  return tables
}

/**
 * Parents before children (foreign keys); a cycle, if one ever appears, keeps name order (the checks are deferred on
 * SQLite). Parents are visited by name too: the databases list a table's foreign keys in different orders, and the
 * copy's order (and its report) must not depend on which side it was read from.
 */
function inForeignKeyOrder(tables: Map<string, Table>): Table[] {
  const ordered: Table[] = []
  const placed = new Set<string>()
  const visiting = new Set<string>()
  const visit = (table: Table) => {
    if (placed.has(table.name) || visiting.has(table.name)) return
    visiting.add(table.name)
    for (const parent of [...table.references].sort()) {
      const referenced = tables.get(parent)
      if (referenced && parent !== table.name) visit(referenced)
    }
    visiting.delete(table.name)
    placed.add(table.name)
    ordered.push(table)
  }
  for (const name of [...tables.keys()].sort()) visit(tables.get(name)!)
  return ordered
}

/** The migrations a database has applied, or null when it has none of shop-api's schema. */
async function appliedMigrations(side: Endpoint): Promise<string[] | null> {
  const names = await tableNames(side)
  if (!names.includes('kysely_migration')) return null
  return (await side.all<{ name: string }>('select name from kysely_migration order by name')).map((r) => r.name)
}

function migrationState(applied: string[] | null): 'none' | 'latest' | 'older' | 'newer' {
  if (applied === null || applied.length === 0) return 'none'
  if (applied.some((name) => !migrationNames.includes(name))) return 'newer'
  return applied.length === migrationNames.length ? 'latest' : 'older'
}

let freshCounts: Promise<Map<string, number>> | undefined

/**
 * The rows a freshly migrated database holds in each table (a migration may seed some): a target with no
 * more than these is empty. Counted once on an in-memory SQLite database.
 */
function rowsOfFreshDatabase(): Promise<Map<string, number>> {
  freshCounts ??= (async () => {
    const side = sqliteEndpoint(new SQLite(':memory:'), 'sqlite::memory:')
    try {
      await migrateToLatest(side.kysely())
      const counts = new Map<string, number>()
      for (const name of await tableNames(side)) counts.set(name, await countRows(side, name))
      return counts
    } finally {
      await side.close()
    }
  })()
  return freshCounts
}

async function countRows(side: Endpoint, table: string): Promise<number> {
  const [row] = await side.all<{ n: number | string | bigint }>(`select count(*) as n from ${quote(table)}`)
  return Number(row?.n ?? 0)
}

// ---------------------------------------------------------------------------------------------------
// Rows: reading in key order, hashing, writing

/** A value as the checksum sees it: integers, text, reals, bytes and null, the same from either database. */
function token(value: Value): unknown {
  if (value === null || value === undefined) return null
  switch (typeof value) {
    case 'bigint':
      return `i${value}`
    case 'number':
      return Number.isInteger(value) ? `i${value}` : `f${value}`
    case 'boolean':
      return value ? 'i1' : 'i0'
    case 'string':
      return `s${value}`
    default:
      if (Buffer.isBuffer(value)) return `b${value.toString('hex')}`
      return `j${JSON.stringify(value)}`
  }
}

function placeholder(dialect: Dialect, index: number): string {
  return dialect === 'sqlite' ? '?' : `$${index}`
}

/** Keyset pagination on the primary key: the rows after `after`, in key order, `limit` of them. */
function pageQuery(side: Endpoint, table: Table, after: Value[] | null, limit: number): { text: string; params: Value[] } {
  const keyExpr = (c: Column) => (side.dialect === 'postgres' && c.text ? `${quote(c.name)} collate "C"` : quote(c.name))
  const params: Value[] = []
  let where = ''
  if (after) {
    // (k1 > a1) or (k1 = a1 and k2 > a2) or ...: the same order on both databases, whatever their row-value support.
    const alternatives = table.key.map((column, i) => {
      const terms = table.key.slice(0, i).map((c, j) => {
        params.push(after[j])
        return `${keyExpr(c)} = ${placeholder(side.dialect, params.length)}`
      })
      params.push(after[i])
      terms.push(`${keyExpr(column)} > ${placeholder(side.dialect, params.length)}`)
      return `(${terms.join(' and ')})`
    })
    where = ` where ${alternatives.join(' or ')}`
  }
  params.push(limit)
  const columns = table.columns.map((c) => quote(c.name)).join(', ')
  const order = table.key.map(keyExpr).join(', ')
  return { text: `select ${columns} from ${quote(table.name)}${where} order by ${order} limit ${placeholder(side.dialect, params.length)}`, params }
}

/** Reads a whole table in key order, batch by batch, and hashes it; `onBatch` sees each batch. */
async function readTable(
  side: Endpoint,
  table: Table,
  batchSize: number,
  onBatch?: (rows: Value[][]) => Promise<void>,
): Promise<{ rows: number; checksum: string }> {
  const hash = createHash('sha256')
  const keyIndexes = table.key.map((k) => table.columns.findIndex((c) => c.name === k.name))
  let after: Value[] | null = null
  let rows = 0
  for (;;) {
    const { text, params } = pageQuery(side, table, after, batchSize)
    const batch = await side.rows(text, params)
    if (batch.length === 0) break
    let chunk = ''
    for (const row of batch) chunk += `${JSON.stringify(row.map(token))}\n`
    hash.update(chunk)
    rows += batch.length
    if (onBatch) await onBatch(batch)
    if (batch.length < batchSize) break
    const last = batch[batch.length - 1]!
    after = keyIndexes.map((i) => last[i])
  }
  return { rows, checksum: hash.digest('hex') }
}

function insertWriter(target: Endpoint, table: Table): (rows: Value[][]) => Promise<void> {
  const names = table.columns.map((c) => quote(c.name)).join(', ')
  if (target.dialect === 'sqlite') {
    const text = `insert into ${quote(table.name)} (${names}) values (${table.columns.map(() => '?').join(', ')})`
    return async (rows) => {
      for (const row of rows) await target.run(text, row)
    }
  }
  // One statement per batch whatever its size: a column of values per array parameter.
  const arrays = table.columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')
  const overriding = table.identityAlways ? ' overriding system value' : ''
  const text = `insert into ${quote(table.name)} (${names})${overriding} select * from unnest(${arrays})`
  return async (rows) => {
    const columns = table.columns.map((_, i) => rows.map((row) => row[i]))
    await target.run(text, columns)
  }
}

// ---------------------------------------------------------------------------------------------------
// Sequences and derived data

/** The highest id a table's counter has handed out (a PostgreSQL sequence, SQLite's AUTOINCREMENT), or 0. */
async function counterOf(side: Endpoint, table: Table): Promise<bigint> {
  if (table.key.length !== 1) return 0n
  if (side.dialect === 'sqlite') {
    const [counters] = await side.all("select 1 as found from sqlite_schema where type = 'table' and name = 'sqlite_sequence'")
    if (!counters) return 0n
    const [row] = await side.all<{ seq: number | bigint }>('select seq from sqlite_sequence where name = ?', [table.name])
    return row ? BigInt(row.seq) : 0n
  }
  const sequence = await sequenceOf(side, table)
  if (!sequence) return 0n
  const [row] = await side.rows(`select last_value, is_called from ${sequence}`)
  if (!row) return 0n
  return row[1] ? BigInt(row[0] as bigint) : BigInt(row[0] as bigint) - 1n
}

async function sequenceOf(side: Endpoint, table: Table): Promise<string | null> {
  const [row] = await side.all<{ sequence: string | null }>(
    `select pg_get_serial_sequence(quote_ident(current_schema()) || '.' || quote_ident($1), $2) as sequence`,
    [table.name, table.key[0]!.name],
  )
  return row?.sequence ?? null
}

/** The next id the target hands out follows both the copied rows and the source's own counter. */
async function setCounter(target: Endpoint, table: Table, highest: bigint): Promise<void> {
  if (target.dialect === 'sqlite') {
    const [row] = await target.all<{ sql: string }>("select sql from sqlite_schema where type = 'table' and name = ?", [table.name])
    if (!row || !/autoincrement/i.test(row.sql)) return
    await target.run('delete from sqlite_sequence where name = ?', [table.name])
    if (highest > 0n) await target.run('insert into sqlite_sequence (name, seq) values (?, ?)', [table.name, highest])
    return
  }
  const sequence = await sequenceOf(target, table)
  if (!sequence) return
  if (highest > 0n) await target.run('select setval($1, $2, true)', [sequence, highest.toString()])
  else await target.run('select setval($1, 1, false)', [sequence])
}

async function maxKey(side: Endpoint, table: Table): Promise<bigint> {
  const [row] = await side.rows(`select max(${quote(table.key[0]!.name)}) from ${quote(table.name)}`)
  const value = row?.[0]
  return typeof value === 'bigint' || typeof value === 'number' ? BigInt(value) : 0n
}

/** SQLite: the triggers, dropped for the copy and created again before it commits. */
async function sqliteTriggers(side: Endpoint): Promise<{ name: string; sql: string }[]> {
  return side.all<{ name: string; sql: string }>("select name, sql from sqlite_schema where type = 'trigger' order by name")
}

/** SQLite: the full-text indexes (virtual tables), rebuilt from the copied rows. */
async function sqliteSearchIndexes(side: Endpoint): Promise<string[]> {
  const rows = await side.all<{ name: string; sql: string }>("select name, sql from sqlite_schema where type = 'table' and sql like 'create virtual table%'")
  return rows.filter((r) => /using\s+fts[345]/i.test(r.sql)).map((r) => r.name)
}

// ---------------------------------------------------------------------------------------------------
// The copy

async function checkSource(source: Endpoint, from: string): Promise<void> {
  const state = migrationState(await appliedMigrations(source))
  if (state === 'none') throw new CopyRefusedError(`--from: ${source.label} holds no shop-api schema (no migrations applied)`)
  if (state === 'older') {
    const url = from.startsWith('sqlite:') ? from : '<the source URL>'
    throw new CopyRefusedError(`--from: ${source.label} is at an older schema; run \`DATABASE_URL=${url} npm run migrate\` first, then copy again`)
  }
  if (state === 'newer') throw new CopyRefusedError(`--from: ${source.label} has migrations this shop-api does not know; copy with the version that wrote it`)
}

/** Tables of the target that hold more rows than a new database would, with their counts. */
async function rowsInTarget(target: Endpoint): Promise<{ table: string; rows: number }[]> {
  const fresh = await rowsOfFreshDatabase()
  const found: { table: string; rows: number }[] = []
  for (const table of await tableNames(target)) {
    if (UNCOPIED_TABLES.has(table)) continue
    const rows = await countRows(target, table)
    if (rows > (fresh.get(table) ?? 0)) found.push({ table, rows })
  }
  return found
}

/**
 * Copies every row of `from` into `to`. Throws CopyRefusedError (nothing written) for bad input and
 * refusals, CopyMismatchError when the copy does not read back as the source (rolled back).
 */
export async function copyData(options: CopyOptions): Promise<CopyReport> {
  const started = performance.now()
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE
  const progress = options.progress
  if (dialectOf(options.from) === undefined)
    throw new CopyRefusedError(`--from: "${shown(options.from)}" is not a database URL (sqlite:<file> or postgres://...)`)
  if (dialectOf(options.to) === undefined) throw new CopyRefusedError(`--to: "${shown(options.to)}" is not a database URL (sqlite:<file> or postgres://...)`)
  if (options.from === options.to) throw new CopyRefusedError('--from and --to name the same database')
  if (dialectOf(options.from) === 'sqlite' && dialectOf(options.to) === 'sqlite') {
    const file = (url: string, flag: string) => resolve(sqliteFileOf(url, flag))
    if (file(options.from, '--from') === file(options.to, '--to')) throw new CopyRefusedError('--from and --to name the same database')
  }

  const source = await open(options.from, '--from', 'source', options)
  let target: Endpoint | undefined
  try {
    await checkSource(source, options.from)
    target = await open(options.to, '--to', 'target', options)

    // The target: a new database is migrated; one at an older schema is migrated only when it holds nothing.
    const targetState = migrationState(await appliedMigrations(target))
    if (targetState === 'newer') throw new CopyRefusedError(`--to: ${target.label} has migrations this shop-api does not know`)
    const held = await rowsInTarget(target)
    if (targetState === 'older' && held.length > 0) {
      throw new CopyRefusedError(
        `--to: ${target.label} is at an older schema and holds data; run \`npm run migrate\` on it first (or copy into an empty database)`,
      )
    }
    if (held.length > 0 && !options.force) {
      const sample = held
        .slice(0, 3)
        .map((h) => `${h.table}: ${h.rows}`)
        .join(', ')
      throw new CopyRefusedError(`--to: ${target.label} is not empty (${sample}${held.length > 3 ? ', ...' : ''}); --force replaces its rows`)
    }
    let migratedTarget = false
    if (targetState !== 'latest') {
      progress?.phase('migrating the target')
      await migrateToLatest(target.kysely())
      migratedTarget = true
    }

    // Both schemas, compared: every table of the source must be in the target with the same columns.
    const sourceTables = await describeSchema(source)
    const targetTables = await describeSchema(target)
    for (const [name, table] of sourceTables) {
      const other = targetTables.get(name)
      if (!other) throw new CopyRefusedError(`the source's table ${name} is not in the target's schema`)
      const columns = (t: Table) =>
        t.columns
          .map((c) => c.name)
          .sort()
          .join(',')
      if (columns(table) !== columns(other))
        throw new CopyRefusedError(`table ${name} has other columns in the source (${columns(table)}) than in the target (${columns(other)})`)
      if (other.key.length === 0) throw new CopyRefusedError(`table ${name} has no primary key: copy-data reads every table in key order`)
    }
    // SQLite's search index (a virtual table and its shadow tables) is not listed: it is rebuilt from the copied rows.
    const targetIndexes = target.dialect === 'sqlite' ? await sqliteSearchIndexes(target) : []
    for (const name of targetTables.keys()) if (!sourceTables.has(name)) throw new CopyRefusedError(`the target's table ${name} is not in the source's schema`)
    // The target's own column order and types, the source's rows in the same column order.
    const order = inForeignKeyOrder(targetTables)
    const sourceOf = (table: Table): Table => {
      const theirs = sourceTables.get(table.name)!
      return {
        ...theirs,
        columns: table.columns.map((c) => theirs.columns.find((s) => s.name === c.name)!),
        key: table.key.map((k) => theirs.columns.find((s) => s.name === k.name)!),
      }
    }

    // One consistent view of the source for the whole copy.
    await source.run(source.dialect === 'postgres' ? 'begin isolation level repeatable read read only' : 'begin')
    const totals: { table: string; rows: number }[] = []
    for (const table of order) totals.push({ table: table.name, rows: await countRows(source, table.name) })
    progress?.start(totals)

    const rebuilt: string[] = []
    const reports: TableReport[] = []
    await target.run(target.dialect === 'postgres' ? 'begin' : 'begin immediate')
    try {
      // Triggers off: every table they maintain (product_counts) is copied as it is in the source.
      const triggers = target.dialect === 'sqlite' ? await sqliteTriggers(target) : []
      if (target.dialect === 'sqlite') {
        await target.run('pragma defer_foreign_keys = on')
        for (const trigger of triggers) await target.run(`drop trigger ${quote(trigger.name)}`)
        for (const table of [...order].reverse()) await target.run(`delete from ${quote(table.name)}`)
      } else {
        for (const table of order) await target.run(`alter table ${quote(table.name)} disable trigger user`)
        await target.run(`truncate ${order.map((t) => quote(t.name)).join(', ')}`)
      }

      const sourceSums = new Map<string, { rows: number; checksum: string }>()
      for (const table of order) {
        const write = insertWriter(target, table)
        const summary = await readTable(source, sourceOf(table), batchSize, async (rows) => {
          await write(rows)
          progress?.advance(table.name, rows.length)
        })
        sourceSums.set(table.name, summary)
        if (table.key.length === 1 && !table.key[0]!.text) {
          const highest = [await counterOf(source, table), await maxKey(target, table)].reduce((a, b) => (a > b ? a : b))
          await setCounter(target, table, highest)
        }
      }

      // Every row has been read: the source's view is not needed any longer (a long check must not hold it open).
      await source.run('rollback')
      progress?.phase('rebuilding')
      if (target.dialect === 'sqlite') {
        for (const trigger of triggers) await target.run(trigger.sql)
        for (const index of targetIndexes) {
          await target.run(`insert into ${quote(index)} (${quote(index)}) values ('rebuild')`)
          rebuilt.push(index)
        }
        const broken = await target.all('select * from pragma_foreign_key_check')
        if (broken.length > 0) throw new Error(`the copied rows break ${broken.length} foreign key(s); nothing was committed`)
      } else {
        for (const table of order) await target.run(`alter table ${quote(table.name)} enable trigger user`)
      }

      progress?.phase('verifying')
      for (const table of order) {
        const mine = await readTable(target, table, batchSize)
        const theirs = sourceSums.get(table.name)!
        reports.push({
          table: table.name,
          sourceRows: theirs.rows,
          targetRows: mine.rows,
          sourceChecksum: theirs.checksum,
          targetChecksum: mine.checksum,
          ok: theirs.rows === mine.rows && theirs.checksum === mine.checksum,
        })
      }
      if (reports.some((r) => !r.ok)) throw new CopyMismatchError(reports)
      await target.run('commit')
    } catch (error) {
      await target.run('rollback').catch(() => {})
      throw error
    } finally {
      progress?.end()
      await source.run('rollback').catch(() => {})
    }
    // Fresh statistics for the planner after a bulk load.
    await target.run('analyze').catch(() => {})
    return { tables: reports, rows: reports.reduce((n, r) => n + r.targetRows, 0), elapsedMs: performance.now() - started, migratedTarget, rebuilt }
  } finally {
    await target?.close()
    await source.close()
  }
}

/** The report as a table of lines: rows and checksum (first 16 hex digits) per table, on both sides. */
export function copyReportLines(report: Pick<CopyReport, 'tables'>): string[] {
  const width = Math.max(5, ...report.tables.map((t) => t.table.length))
  const lines = [`${'table'.padEnd(width)}  ${'source rows'.padStart(11)}  ${'target rows'.padStart(11)}  ${'checksum (sha-256)'.padEnd(16)}  result`]
  for (const t of report.tables) {
    const sum = t.sourceChecksum === t.targetChecksum ? t.sourceChecksum.slice(0, 16) : `${t.sourceChecksum.slice(0, 7)}≠${t.targetChecksum.slice(0, 8)}`
    lines.push(
      `${t.table.padEnd(width)}  ${String(t.sourceRows).padStart(11)}  ${String(t.targetRows).padStart(11)}  ${sum.padEnd(18)}  ${t.ok ? 'ok' : 'DIFFERENT'}`,
    )
  }
  return lines
}

/**
 * Progress on stderr: a bar redrawn in place on a terminal (at most ten times a second), plain lines
 * otherwise (one per table, and every 10 % of a large one), so a log stays readable.
 */
export function progressOn(stream: NodeJS.WriteStream): CopyProgress {
  const tty = stream.isTTY === true
  let totals = new Map<string, number>()
  let all = 0
  let done = 0
  const doneIn = new Map<string, number>()
  let drawnAt = 0
  let lastTable = ''
  const line = (text: string) => stream.write(tty ? `\r\x1b[2K${text}` : `${text}\n`)
  const bar = (table: string) => {
    const share = all === 0 ? 1 : done / all
    const width = 30
    const filled = Math.round(share * width)
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(share * 100).toFixed(1).padStart(5)}%  ${done}/${all} rows  ${table}`
  }
  return {
    start(tables) {
      totals = new Map(tables.map((t) => [t.table, t.rows]))
      all = tables.reduce((n, t) => n + t.rows, 0)
      if (!tty) stream.write(`copying ${all} rows in ${tables.length} tables\n`)
    },
    advance(table, rows) {
      done += rows
      const before = doneIn.get(table) ?? 0
      const now = before + rows
      doneIn.set(table, now)
      const total = totals.get(table) ?? 0
      lastTable = table
      if (tty) {
        if (Date.now() - drawnAt > 100 || now === total) {
          drawnAt = Date.now()
          line(bar(table))
        }
        return
      }
      const step = Math.max(1, Math.ceil(total / 10))
      if (now === total || Math.floor(now / step) > Math.floor(before / step)) {
        if (total >= 50_000 || now === total) line(`${table}: ${now}/${total} rows`)
      }
    },
    phase(name) {
      line(tty && totals.size > 0 ? `${bar(lastTable)}  (${name})` : name)
    },
    end() {
      if (tty) stream.write('\n')
    },
  }
}
