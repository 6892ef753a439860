import { type Kysely, type Migration, type MigrationProvider, type MigrationResultSet, Migrator, PostgresAdapter, sql } from 'kysely'
import * as initial from './migrations/2026-11-22T0000-initial.js'
import * as productNameOrder from './migrations/2026-11-23T0000-product-name-order.js'
import * as addressesShipping from './migrations/2026-11-24T0000-addresses-shipping.js'
import * as payments from './migrations/2026-11-24T0100-payments.js'
import * as sessions from './migrations/2026-11-25T0000-sessions.js'
import * as outbox from './migrations/2026-11-25T0100-outbox.js'
import * as webhooks from './migrations/2026-11-25T0200-webhooks.js'
import * as ordersCreatedIndex from './migrations/2026-11-25T0300-orders-created-index.js'
import * as outboxPartialIndexes from './migrations/2026-11-26T0000-outbox-partial-indexes.js'
import * as orderLifecycle from './migrations/2026-11-27T0000-order-lifecycle.js'
import * as catalog from './migrations/2026-11-28T0000-catalog.js'
import * as catalogFilterIndexes from './migrations/2026-11-29T0100-catalog-filter-indexes.js'
import * as productCountsLocks from './migrations/2026-11-29T0200-product-counts-locks.js'
import * as optionValueKeyIndex from './migrations/2026-11-30T0000-option-value-key-index.js'
import * as taxes from './migrations/2026-12-01T0000-taxes.js'
import * as discountCodes from './migrations/2026-12-01T0100-discount-codes.js'
import * as guestOrders from './migrations/2026-12-01T0200-guest-orders.js'
import * as carts from './migrations/2026-12-01T0300-carts.js'
import * as orderTotals from './migrations/2026-12-01T0400-order-totals.js'
import * as afterSale from './migrations/2026-12-02T0000-after-sale.js'
import * as refunds from './migrations/2026-12-02T0200-refunds.js'
import * as returnsWithdrawals from './migrations/2026-12-02T0300-returns-withdrawals.js'
import * as team from './migrations/2026-12-03T0000-team.js'
import * as auditLogTime from './migrations/2026-12-04T0000-audit-log-time.js'
import * as outboxDueByChannel from './migrations/2026-12-04T0100-outbox-due-by-channel.js'
import * as variantFilters from './migrations/2026-12-05T0000-variant-filters.js'
import * as variantFiltersCovering from './migrations/2026-12-06T0000-variant-filters-covering.js'
import * as variantFiltersKeyCovering from './migrations/2026-12-07T0000-variant-filters-key-covering.js'
import * as catalogOutsideWrites from './migrations/2026-12-08T0000-catalog-outside-writes.js'
import * as derivedTriggersSchema from './migrations/2026-12-09T0000-derived-triggers-schema.js'
import * as redemptionsOnOrders from './migrations/2026-12-10T0000-redemptions-on-orders.js'

/** Migrations are listed here, in order, so the built service needs no directory scan. */
export const migrations: Record<string, Migration> = {
  '2026-11-22T0000-initial': initial,
  '2026-11-23T0000-product-name-order': productNameOrder,
  '2026-11-24T0000-addresses-shipping': addressesShipping,
  '2026-11-24T0100-payments': payments,
  '2026-11-25T0000-sessions': sessions,
  '2026-11-25T0100-outbox': outbox,
  '2026-11-25T0200-webhooks': webhooks,
  '2026-11-25T0300-orders-created-index': ordersCreatedIndex,
  '2026-11-26T0000-outbox-partial-indexes': outboxPartialIndexes,
  '2026-11-27T0000-order-lifecycle': orderLifecycle,
  '2026-11-28T0000-catalog': catalog,
  '2026-11-29T0100-catalog-filter-indexes': catalogFilterIndexes,
  '2026-11-29T0200-product-counts-locks': productCountsLocks,
  '2026-11-30T0000-option-value-key-index': optionValueKeyIndex,
  '2026-12-01T0000-taxes': taxes,
  '2026-12-01T0100-discount-codes': discountCodes,
  '2026-12-01T0200-guest-orders': guestOrders,
  '2026-12-01T0300-carts': carts,
  '2026-12-01T0400-order-totals': orderTotals,
  '2026-12-02T0000-after-sale': afterSale,
  '2026-12-02T0200-refunds': refunds,
  '2026-12-02T0300-returns-withdrawals': returnsWithdrawals,
  '2026-12-03T0000-team': team,
  '2026-12-04T0000-audit-log-time': auditLogTime,
  '2026-12-04T0100-outbox-due-by-channel': outboxDueByChannel,
  '2026-12-05T0000-variant-filters': variantFilters,
  '2026-12-06T0000-variant-filters-covering': variantFiltersCovering,
  '2026-12-07T0000-variant-filters-key-covering': variantFiltersKeyCovering,
  '2026-12-08T0000-catalog-outside-writes': catalogOutsideWrites,
  '2026-12-09T0000-derived-triggers-schema': derivedTriggersSchema,
  '2026-12-10T0000-redemptions-on-orders': redemptionsOnOrders,
}

const provider: MigrationProvider = { getMigrations: async () => migrations }

/**
 * Brings the schema up to date; throws with the failing migration's error. On PostgreSQL, Kysely's
 * bookkeeping tables live in `schema`, by default the connection's current schema (the first of its
 * `search_path`): Kysely's existence check looks at every schema, so without it a shop in its own
 * schema would take another schema's lock table for its own.
 */
export async function migrateToLatest(db: Kysely<any>, schema?: string): Promise<MigrationResultSet> {
  const home = schema ?? (await currentSchema(db))
  const migrator = new Migrator({ db, provider, ...(home ? { migrationTableSchema: home } : {}) })
  const result = await migrator.migrateToLatest()
  if (result.error) throw result.error instanceof Error ? result.error : new Error('migration failed', { cause: result.error })
  return result
}

/** The names of every migration, in order: what a database at the latest schema has applied. */
export const migrationNames: readonly string[] = Object.keys(migrations)

/** PostgreSQL: the schema new tables go to (`current_schema()`); SQLite has none. */
async function currentSchema(db: Kysely<any>): Promise<string | undefined> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return undefined
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)
  return rows[0]?.schema ?? undefined
}
