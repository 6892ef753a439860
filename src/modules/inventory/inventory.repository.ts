import type { Transaction } from 'kysely'
import type { Database, ProductRow } from '../../db/database.js'
import { PRODUCT_COLUMNS } from '../catalog/product-view.js'

type Trx = Transaction<Database>

/** What an order line keeps of the variant it took units of. */
export interface TakenVariant {
  id: number
  product_id: number
  price_cents: number
  sku: string | null
  title: string | null
  stock: number
}

/**
 * Takes `quantity` units of a variant when that many are in stock, in one conditional statement: racing buyers
 * cannot both pass the check. Returns the variant as it is afterwards, or undefined (and changes nothing) when the
 * stock is short or the variant is gone.
 */
export async function takeVariantStock(trx: Trx, variantId: number, quantity: number): Promise<TakenVariant | undefined> {
  return trx
    .updateTable('product_variants')
    .set((eb) => ({ stock: eb('stock', '-', quantity) }))
    .where('id', '=', variantId)
    .where('stock', '>=', quantity)
    .returning(['id', 'product_id', 'price_cents', 'sku', 'title', 'stock'])
    .executeTakeFirst()
}

/** Moves the product's copy of its total stock by `delta`; the product as it is afterwards. */
export async function moveProductStock(trx: Trx, productId: number, delta: number): Promise<ProductRow | undefined> {
  return trx
    .updateTable('products')
    .set((eb) => ({ stock: eb('stock', '+', delta) }))
    .where('id', '=', productId)
    .returning(PRODUCT_COLUMNS)
    .executeTakeFirst()
}

/** Puts units back into a variant; a variant deleted since is skipped (undefined). */
export async function putBackVariantStock(trx: Trx, variantId: number, quantity: number): Promise<{ product_id: number } | undefined> {
  return trx
    .updateTable('product_variants')
    .set((eb) => ({ stock: eb('stock', '+', quantity) }))
    .where('id', '=', variantId)
    .returning('product_id')
    .executeTakeFirst()
}

export async function findVariantProduct(trx: Trx, variantId: number) {
  return trx
    .selectFrom('product_variants as v')
    .innerJoin('products as p', 'p.id', 'v.product_id')
    .select(['p.name'])
    .where('v.id', '=', variantId)
    .executeTakeFirst()
}
