import type { Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import type { OutboxInsert } from './outbox.js'

/**
 * The shop's events (docs/email.md); `data` is the resource as the API returns it, `{id}` for product.deleted,
 * `{order, fulfillment}` for order.fulfilled and `{order}` for order.delivered.
 */
export const SHOP_EVENT_TYPES = [
  'order.created',
  'order.paid',
  'order.status_changed',
  'order.cancelled',
  'order.fulfilled',
  'order.delivered',
  'order.refunded',
  'product.created',
  'product.updated',
  'product.deleted',
  'stock.low',
  'return.requested',
  'return.approved',
  'return.rejected',
  'return.received',
  'withdrawal.received',
] as const
export type ShopEventType = (typeof SHOP_EVENT_TYPES)[number]

export interface ShopEvent {
  type: ShopEventType
  data: unknown
  /** order.fulfilled: false when the customer is not to hear of the shipment (its `notifyCustomer`); e-mailed otherwise. */
  notifyCustomer?: boolean
  /** An account's name and e-mail when the change has just read them in its transaction (order.created): not read again. */
  customer?: { name: string; email: string }
}

/**
 * Called inside the transaction of the change; returns the outbox rows the event calls for (e-mails, webhook
 * deliveries). The rows of every listener are written together, in one statement of that transaction, so that
 * they commit or roll back with the change.
 */
export type EventListener = ((trx: Transaction<Database>, event: ShopEvent) => Promise<readonly OutboxInsert[]>) & {
  /**
   * Whether the listener writes anything for an event of this type (a webhook subscribed to it, an e-mail it calls
   * for), asked before the data of an event emitted with `emitLoaded` is read. Without it the data is always read.
   */
  takes?: (trx: Transaction<Database>, type: ShopEventType) => boolean | Promise<boolean>
}
