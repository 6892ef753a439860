import { type Kysely, sql } from 'kysely'
import { vi } from 'vitest'

// A test that needs "B is now waiting for A's lock" asks PostgreSQL rather than sleeping: a sleep
// is too short on a loaded machine and too long everywhere else.

/** The server process behind a connection (a transaction's, when given one). */
export async function backendPid(db: Kysely<any>): Promise<number> {
  const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)
  return rows[0]!.pid
}

/**
 * Waits until some session waits for a lock that the session `pid` holds (pg_blocking_pids), polling
 * through `db`, which must not be that session. Fails after `timeout` ms.
 */
export async function waitUntilBlockedBy(db: Kysely<any>, pid: number, timeout = 5000): Promise<void> {
  await vi.waitUntil(
    async () => {
      const { rows } = await sql<{ waiting: boolean }>`
        select exists (select 1 from pg_stat_activity where ${pid}::int = any(pg_blocking_pids(pid))) as waiting`.execute(db)
      return rows[0]!.waiting
    },
    { timeout, interval: 10 },
  )
}
