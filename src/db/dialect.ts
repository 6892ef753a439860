import { type Kysely, PostgresAdapter } from 'kysely'
import type { Database } from './database.js'

/** Whether `db` (a database or one of its transactions) runs on PostgreSQL, where each statement is a round trip. */
export function isPostgres(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}
