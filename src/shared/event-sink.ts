import type { Transaction } from 'kysely'
import type { Database } from '../db/database.js'
import type { ShopEvent } from '../modules/outbox/dispatcher.js'

/**
 * Where a change's events go, inside the change's transaction (the outbox writes its rows there). Built once in
 * app.ts from the outbox and handed to the modules that emit: they never look the outbox up by their `db`.
 */
export interface EventSink {
  emit(trx: Transaction<Database>, event: ShopEvent): Promise<void>
  /** `stock.low` by its rule, for a product (as the API shows it) whose stock was `stockBefore` before the change. */
  stockChanged(trx: Transaction<Database>, product: { stock: number }, stockBefore: number): Promise<void>
}

/** A sink that drops everything (a CLI command that emits nothing, a test of one module alone). */
export const noEvents: EventSink = { emit: async () => {}, stockChanged: async () => {} }
