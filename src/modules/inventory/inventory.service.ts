import type { Transaction } from 'kysely'
import type { Database, ProductRow } from '../../db/database.js'
import { isPostgres } from '../../db/dialect.js'
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
 * product's `stock` (their sum) moves with it. Lines are taken in (product id, variant id) order: a product's
 * variants, then the product once, as the catalog's writes lock them (all or one of its variants, then the
 * product): two changes never wait on each other in a cycle. `stock.low` is
 * emitted here, by its rule, for every product this change took to the threshold or below.
 */
export interface Inventory {
  /** Takes every line's units, or throws (409 off sale or short, 404 gone) and the caller's transaction rolls back. */
  reserve(trx: Trx, lines: readonly StockLine[]): Promise<ReservedLine[]>
  /** `stock.low` for each reserved product this change took to the threshold or below (after the change's own event). */
  announceLowStock(trx: Trx, reserved: readonly ReservedLine[]): Promise<void>
  /** Puts the units back (a variant deleted since is skipped). */
  release(trx: Trx, lines: readonly StockLine[]): Promise<void>
}

const byProductThenVariant = (a: StockLine, b: StockLine) => a.productId - b.productId || a.variantId - b.variantId

export function createInventory(deps: { events: EventSink }): Inventory {
  const { events } = deps
  return {
    async reserve(trx, lines) {
      const reserved: ReservedLine[] = []
      // Why a line could not be taken: its product taken off sale since it was added (a draft again, or archived),
      // short stock, or gone.
      const refusal = async (variantId: number) => {
        const found = await repo.findVariantProduct(trx, variantId)
        if (!found) return new AppError(404, 'productNotFound')
        return found.status !== 'active' ? new AppError(409, 'productUnavailable', found.name) : new AppError(409, 'insufficientStockFor', found.name)
      }
      const sorted = [...lines].sort(byProductThenVariant)
      for (let start = 0; start < sorted.length;) {
        // One product's lines: every variant (by id), then the product's copy of its stock once, for all of them.
        const productId = sorted[start]!.productId
        let end = start
        while (end < sorted.length && sorted[end]!.productId === productId) end += 1
        if (end === start + 1 && isPostgres(trx)) {
          // One line of this product: its variant and its product's copy in one statement.
          const line = sorted[start]!
          const taken = await repo.takeLineStock(trx, line.variantId, line.quantity)
          const { variant } = taken
          // The statement's product was read as it was when the statement began: a product put on sale by a write
          // this one waited for (its variants' lock) looks off sale. Asked again, as the two statements did.
          const product = taken.product ?? (variant ? await repo.takeProductStock(trx, variant.product_id, line.quantity) : undefined)
          if (!variant || !product) throw await refusal(line.variantId)
          reserved.push({ product, variant, quantity: line.quantity })
          start = end
          continue
        }
        const taken: Array<{ variant: repo.TakenVariant; quantity: number }> = []
        for (const line of sorted.slice(start, end)) {
          const variant = await repo.takeVariantStock(trx, line.variantId, line.quantity)
          if (!variant) throw await refusal(line.variantId)
          taken.push({ variant, quantity: line.quantity })
        }
        const product = await repo.takeProductStock(
          trx,
          taken[0]!.variant.product_id,
          taken.reduce((sum, line) => sum + line.quantity, 0),
        )
        if (!product) throw await refusal(taken[0]!.variant.id)
        for (const line of taken) reserved.push({ product, ...line })
        start = end
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
      const sorted = [...lines].sort(byProductThenVariant)
      for (let start = 0; start < sorted.length;) {
        // One product's lines: every variant (by id), then the product's copy of its stock once, as reserve() does.
        let end = start
        while (end < sorted.length && sorted[end]!.productId === sorted[start]!.productId) end += 1
        let productId: number | undefined
        let back = 0
        for (const line of sorted.slice(start, end)) {
          const variant = await repo.putBackVariantStock(trx, line.variantId, line.quantity)
          if (!variant) continue
          productId = variant.product_id
          back += line.quantity
        }
        if (productId !== undefined) await repo.moveProductStock(trx, productId, back)
        start = end
      }
    },
  }
}
