/** True when a database error is a unique-constraint violation, on SQLite or PostgreSQL. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

/** True when PostgreSQL aborted the transaction to break a deadlock (SQLite has one writer: never). */
export function isDeadlock(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '40P01'
}

/**
 * PostgreSQL refused a prepared statement whose result's columns changed since this connection planned it
 * (0A000, "cached plan must not change result type"): a table it returns every column of was altered meanwhile, by
 * another instance's migration. The connection is dropped (src/db/availability.ts); the statement's transaction
 * failed whole and may be run again.
 */
export function isStalePlan(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return code === '0A000' && typeof message === 'string' && message.includes('cached plan must not change result type')
}

/** True when a database error is a foreign-key violation, on SQLite or PostgreSQL. */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY'
}
