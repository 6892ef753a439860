import type { Transaction } from 'kysely'
import type { Database } from '../db/database.js'
import type { ShopEvent, ShopEventType } from '../modules/outbox/dispatcher.js'

/**
 * Where a change's events go, inside the change's transaction (the outbox writes its rows there). Built once in
 * app.ts from the outbox and handed to the modules that emit: they never look the outbox up by their `db`.
 */
export interface EventSink {
  emit(trx: Transaction<Database>, event: ShopEvent): Promise<void>
  /**
   * `emit` of an event whose data is read only when a listener takes it (a webhook subscribed to its type, an e-mail
   * it calls for): `load` runs at most once, in the change's transaction. A variant's new price or stock then reads
   * no product whole for a `product.updated` nobody listens to.
   */
  emitLoaded(trx: Transaction<Database>, type: ShopEventType, load: () => Promise<unknown>): Promise<void>
  /**
   * `stock.low` by its rule, for a product (as the API shows it) whose stock was `stockBefore` before the change; with
   * `load`, `product` holds the stock alone and the event's data is what `load` reads, when the rule fires.
   */
  stockChanged(trx: Transaction<Database>, product: { stock: number }, stockBefore: number, load?: () => Promise<unknown>): Promise<void>
}

/** A sink that drops everything (a CLI command that emits nothing, a test of one module alone). */
export const noEvents: EventSink = { emit: async () => {}, emitLoaded: async () => {}, stockChanged: async () => {} }
