import type { Transaction } from 'kysely'
import type { Database, ProductRow } from '../../db/database.js'

type Trx = Transaction<Database>

/**
 * Takes `quantity` units of a product when that many are in stock, in one conditional statement: racing buyers
 * cannot both pass the check. Returns the product as it is afterwards, or undefined (and changes nothing) when the
 * stock is short or the product is gone.
 */
export async function takeStock(trx: Trx, productId: number, quantity: number): Promise<ProductRow | undefined> {
  return trx
    .updateTable('products')
    .set((eb) => ({ stock: eb('stock', '-', quantity) }))
    .where('id', '=', productId)
    .where('stock', '>=', quantity)
    .returning(['id', 'name', 'description', 'price_cents', 'stock', 'image_key', 'image_url', 'category_id', 'created_at', 'updated_at'])
    .executeTakeFirst()
}

/** Puts units back and returns the product afterwards; a product deleted since is skipped (undefined). */
export async function putBackStock(trx: Trx, productId: number, quantity: number): Promise<ProductRow | undefined> {
  return trx
    .updateTable('products')
    .set((eb) => ({ stock: eb('stock', '+', quantity) }))
    .where('id', '=', productId)
    .returning(['id', 'name', 'description', 'price_cents', 'stock', 'image_key', 'image_url', 'category_id', 'created_at', 'updated_at'])
    .executeTakeFirst()
}

export async function findProductName(trx: Trx, productId: number) {
  return trx.selectFrom('products').select('name').where('id', '=', productId).executeTakeFirst()
}
