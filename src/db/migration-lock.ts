import { setTimeout as sleep } from 'node:timers/promises'
import { type Kysely, PostgresAdapter, PostgresDialect, type PostgresDialectConfig, sql } from 'kysely'

/**
 * The advisory lock Kysely's PostgreSQL migrator takes (its `LOCK_ID`, one for the whole server). The same one is
 * taken here, so an instance of an older version of the service, migrating with Kysely's own adapter, still takes
 * turns with this one.
 */
const KYSELY_MIGRATION_LOCK_ID = 3853314791062309107n

/** How long an instance waits for another one's migration by default before it gives up starting. */
export const MIGRATION_LOCK_WAIT_MS = 5 * 60_000
/** How often it asks for the lock meanwhile. */
const MIGRATION_LOCK_POLL_MS = 100

/** An instance waited `waitMs` for the migration lock and another process still held it. */
export class MigrationLockTimeoutError extends Error {
  constructor(readonly waitMs: number) {
    super(`another process held the migration lock for ${Math.round(waitMs / 1000)} s (a migration still running elsewhere)`)
    this.name = 'MigrationLockTimeoutError'
  }
}

/**
 * Kysely's adapter waits for the migration lock in one blocking statement (`pg_advisory_lock`), which the statement
 * timeout (5 s by default) cancels: when instances started together and a migration took longer than that, the next
 * one failed to start with "La base de datos no responde" (seen in CI: four services starting at once, each migrating a
 * new schema, on a slow VM). This one asks for the same session lock without blocking, every 0.1 s, and gives up
 * after `waitMs`; each try is one short statement. Kysely's own `releaseMigrationLock` lets go of it.
 */
export class MigrationLockAdapter extends PostgresAdapter {
  constructor(private readonly waitMs: number) {
    super()
  }

  override async acquireMigrationLock(db: Kysely<unknown>): Promise<void> {
    const deadline = Date.now() + this.waitMs
    for (;;) {
      const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${sql.lit(KYSELY_MIGRATION_LOCK_ID)}) as locked`.execute(db)
      if (rows[0]?.locked) return
      if (Date.now() >= deadline) throw new MigrationLockTimeoutError(this.waitMs)
      await sleep(MIGRATION_LOCK_POLL_MS)
    }
  }
}

/** PostgreSQL's dialect with the adapter above, waiting up to `lockWaitMs` for the lock. */
export class MigrationLockDialect extends PostgresDialect {
  constructor(
    config: PostgresDialectConfig,
    private readonly lockWaitMs: number,
  ) {
    super(config)
  }

  override createAdapter(): PostgresAdapter {
    return new MigrationLockAdapter(this.lockWaitMs)
  }
}
