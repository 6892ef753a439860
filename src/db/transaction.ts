import type { Kysely, Transaction } from 'kysely'
import { isDeadlock, isStalePlan } from '../shared/db-errors.js'
import type { Database } from './database.js'

/** Runs `work` in the caller's transaction when `db` is one, else in a transaction of its own. */
export function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db as Transaction<Database>) : db.transaction().execute(work)
}

/**
 * PostgreSQL aborts one of two transactions that wait for each other (`deadlock_detected`, 40P01); the aborted one
 * has rolled back completely and is run again, up to `attempts` times in all. `work` must start from nothing each
 * time (a transaction of its own, its counters made inside it). SQLite has one writer at a time: never a deadlock.
 * A transaction that failed on a prepared statement planned before another instance's migration (isStalePlan) is
 * run again the same way, on another connection.
 */
export async function retryAborted<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (error) {
      if (attempt >= attempts || !(isDeadlock(error) || isStalePlan(error))) throw error
    }
  }
}
