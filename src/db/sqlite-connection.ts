import SQLite from 'better-sqlite3'

/** How long a statement waits for another connection's write lock before failing with SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000

/**
 * A connection to a SQLite database as the service uses it: the main one (`writer`: it sets WAL mode), or a reader
 * thread's (db/sqlite-readers.ts), which refuses any write. Both fold text and reuse statements alike, so a query
 * answers the same on either.
 */
export function openSqlite(file: string, role: 'writer' | 'reader'): SQLite.Database {
  const database = new SQLite(file, { fileMustExist: role === 'reader' })
  if (role === 'writer') {
    database.pragma('journal_mode = WAL')
    database.pragma('foreign_keys = ON')
    database.pragma('synchronous = NORMAL')
  } else {
    database.pragma('query_only = ON')
  }
  database.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  reusePreparedStatements(database)
  // SQLite's own lower() and LIKE fold only ASCII letters; searches of non-ASCII text use this instead.
  database.function('fold_case', { deterministic: true }, (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : value))
  return database
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
