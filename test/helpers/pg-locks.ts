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
 * Waits until some session (or `sessions` of them) waits for a lock that the session `pid` holds
 * (pg_blocking_pids), polling through `db`, which must not be that session. Fails after `timeout` ms.
 */
export async function waitUntilBlockedBy(db: Kysely<any>, pid: number, timeout = 5000, sessions = 1): Promise<void> {
  await vi.waitUntil(
    async () => {
      // Directly or behind another waiter (the second session waiting for a row waits for the first one's tuple lock).
      const { rows } = await sql<{ waiting: number | string }>`
        select count(*) as waiting from pg_stat_activity a
        where exists (
          with recursive chain(p) as (
            select unnest(pg_blocking_pids(a.pid))
            union
            select unnest(pg_blocking_pids(c.p)) from chain c
          )
          select 1 from chain where p = ${pid}::int
        )`.execute(db)
      return Number(rows[0]!.waiting) >= sessions
    },
    { timeout, interval: 10 },
  )
}
