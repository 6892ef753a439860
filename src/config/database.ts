import { join } from 'node:path'
import type { Config } from './index.js'
import type { Reader } from './read.js'

/** The database: SQLite in DATA_DIR by default, or PostgreSQL with bounded waits (src/db/connect.ts). */
export function readDatabase(read: Reader, { dataDir }: Pick<Config, 'dataDir'>): Pick<Config, 'databaseUrl' | 'postgres'> {
  const databaseUrl = read.string('DATABASE_URL') ?? `sqlite:${join(dataDir, 'shop.db')}`
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) read.problem('DATABASE_URL must start with sqlite: or postgres:// (got another scheme)')
  // PostgreSQL: every wait is bounded; 0 turns the statement timeout off (a long migration).
  const postgres = {
    connectTimeoutMs: read.integer('PG_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    statementTimeoutMs: read.integer('PG_STATEMENT_TIMEOUT_MS', 5000, 0, 86_400_000),
    startupTimeoutMs: read.integer('PG_STARTUP_TIMEOUT_MS', 30_000, 0, 3_600_000),
    // The hot statements prepared by name on each connection; off behind a pooler that cannot keep them.
    preparedStatements: read.boolean('PG_PREPARED_STATEMENTS', true),
  }
  return { databaseUrl, postgres: Object.freeze(postgres) }
}
