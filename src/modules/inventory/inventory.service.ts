import type { Transaction } from 'kysely'
import type { Database, ProductRow } from '../../db/database.js'
import { AppError } from '../../shared/errors.js'
import type { EventSink } from '../../shared/event-sink.js'
import { productRowToProduct } from '../catalog/products.service.js'
import * as repo from './inventory.repository.js'

type Trx = Transaction<Database>

/** A line to take or put back: a product and a number of units. */
export interface StockLine {
  productId: number
  quantity: number
}

/** A line whose units were taken, with the product as it is after taking them (its price is the order's). */
export interface ReservedLine {
  product: ProductRow
  quantity: number
}

/**
 * The one owner of stock: every unit that leaves or comes back goes through here, inside the transaction of the
 * change that moves it (an order placed, an order cancelled or expired). Lines are taken in product id order, so
 * two buyers never wait on each other in a cycle. `stock.low` is emitted here, by its rule, for every product
 * this change took to the threshold or below.
 */
export interface Inventory {
  /** Takes every line's units, or throws (409 short, 404 gone) and the caller's transaction rolls back. */
  reserve(trx: Trx, lines: readonly StockLine[]): Promise<ReservedLine[]>
  /** `stock.low` for each reserved product this change took to the threshold or below (after the change's own event). */
  announceLowStock(trx: Trx, reserved: readonly ReservedLine[]): Promise<void>
  /** Puts the units back (a product deleted since is skipped). */
  release(trx: Trx, lines: readonly StockLine[]): Promise<void>
}

export function createInventory(deps: { events: EventSink }): Inventory {
  const { events } = deps
  return {
    async reserve(trx, lines) {
      const ordered = [...lines].sort((a, b) => a.productId - b.productId)
      const reserved: ReservedLine[] = []
      for (const line of ordered) {
        const product = await repo.takeStock(trx, line.productId, line.quantity)
        if (!product) {
          const found = await repo.findProductName(trx, line.productId)
          throw found ? new AppError(409, 'insufficientStockFor', found.name) : new AppError(404, 'productNotFound')
        }
        reserved.push({ product, quantity: line.quantity })
      }
      return reserved
    },
    async announceLowStock(trx, reserved) {
      for (const { product, quantity } of reserved) await events.stockChanged(trx, productRowToProduct(product), product.stock + quantity)
    },
    async release(trx, lines) {
      const ordered = [...lines].sort((a, b) => a.productId - b.productId)
      for (const line of ordered) await repo.putBackStock(trx, line.productId, line.quantity)
    },
  }
}
