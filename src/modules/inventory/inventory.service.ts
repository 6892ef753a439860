import type { Transaction } from 'kysely'
import type { Database, ProductRow } from '../../db/database.js'
import { AppError } from '../../shared/errors.js'
import type { EventSink } from '../../shared/event-sink.js'
import { productRowToProduct } from '../catalog/products.service.js'
import * as repo from './inventory.repository.js'

type Trx = Transaction<Database>

/** A line to take or put back: units of a product's variant. */
export interface StockLine {
  productId: number
  variantId: number
  quantity: number
}

/** A line whose units were taken: the variant and its product as they are after taking them (their price is the order's). */
export interface ReservedLine {
  product: ProductRow
  variant: repo.TakenVariant
  quantity: number
}

/**
 * The one owner of stock: every unit that leaves or comes back goes through here, inside the transaction of the
 * change that moves it (an order placed, an order cancelled or expired). A variant's stock is the truth; its
 * product's `stock` (their sum) moves with it. Lines are taken in (product id, variant id) order, each variant then
 * its product, as the catalog's writes lock them: two changes never wait on each other in a cycle. `stock.low` is
 * emitted here, by its rule, for every product this change took to the threshold or below.
 */
export interface Inventory {
  /** Takes every line's units, or throws (409 off sale or short, 404 gone) and the caller's transaction rolls back. */
  reserve(trx: Trx, lines: readonly StockLine[]): Promise<ReservedLine[]>
  /** `stock.low` for each reserved product this change took to the threshold or below (after the change's own event). */
  announceLowStock(trx: Trx, reserved: readonly ReservedLine[]): Promise<void>
  /** Puts the units back (a variant deleted since is skipped). */
  release(trx: Trx, lines: ReadonlyArray<Omit<StockLine, 'productId'> & { productId?: number }>): Promise<void>
}

const byProductThenVariant = (a: { productId?: number; variantId: number }, b: { productId?: number; variantId: number }) =>
  (a.productId ?? 0) - (b.productId ?? 0) || a.variantId - b.variantId

export function createInventory(deps: { events: EventSink }): Inventory {
  const { events } = deps
  return {
    async reserve(trx, lines) {
      const reserved: ReservedLine[] = []
      for (const line of [...lines].sort(byProductThenVariant)) {
        const variant = await repo.takeVariantStock(trx, line.variantId, line.quantity)
        const product = variant && (await repo.takeProductStock(trx, variant.product_id, line.quantity))
        if (!variant || !product) {
          // Why: a product taken off sale since it was added (a draft again, or archived), short stock, or gone.
          const found = await repo.findVariantProduct(trx, line.variantId)
          if (!found) throw new AppError(404, 'productNotFound')
          throw found.status !== 'active' ? new AppError(409, 'productUnavailable', found.name) : new AppError(409, 'insufficientStockFor', found.name)
        }
        reserved.push({ product, variant, quantity: line.quantity })
      }
      return reserved
    },
    async announceLowStock(trx, reserved) {
      // A product reserved on several lines: the stock before this change is the last line's plus every line's units.
      const taken = new Map<number, { product: ProductRow; quantity: number }>()
      for (const { product, quantity } of reserved) {
        const seen = taken.get(product.id)
        taken.set(product.id, { product, quantity: (seen?.quantity ?? 0) + quantity })
      }
      for (const { product, quantity } of taken.values()) await events.stockChanged(trx, productRowToProduct(product), product.stock + quantity)
    },
    async release(trx, lines) {
      for (const line of [...lines].sort(byProductThenVariant)) {
        const variant = await repo.putBackVariantStock(trx, line.variantId, line.quantity)
        if (variant) await repo.moveProductStock(trx, variant.product_id, line.quantity)
      }
    },
  }
}
