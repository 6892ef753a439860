import { sql } from 'kysely'

// The lock that orders an admin giving a code a limit after the orders that took the code without one. It is its
// own file so that the orders' insert can take it (a module does not import another's repository).

/**
 * The advisory locks that order an admin giving a code a limit after the orders that took it without one
 * (PostgreSQL; the two-key form, a space of its own: this class, the code's id).
 */
export const CODE_LIMITS_LOCK = 1_397_247_824

/**
 * Takes the code's advisory lock, shared, until the transaction ends (PostgreSQL): an expression, so that the
 * statement that writes an order holding the code takes it too (`orders.repository`'s `insertOrder`). Any number of
 * orders hold it at once; an admin giving the code a limit (`lockCode`) takes it exclusive, so it waits for them and
 * then counts them, and orders that come meanwhile queue behind the admin.
 */
export function holdCode(codeId: number) {
  return sql<string>`(select pg_advisory_xact_lock_shared(${sql.lit(CODE_LIMITS_LOCK)}, ${codeId}))`
}
