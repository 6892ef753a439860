import { type Kysely, sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { MAX_AMOUNT_CENTS, maxUnitCentsFor } from '../../shared/money.js'

type Db = Kysely<Database>

const cartItemColumns = ['id', 'user_id', 'product_id', 'quantity', 'created_at'] as const

export type CartItemRecord = { id: number; user_id: number; product_id: number; quantity: number; created_at: string }

/** The product fields the cart needs; read straight from `products` (the catalog module is not a dependency). */
export async function findProductForCart(db: Db, id: number) {
  return db.selectFrom('products').select(['id', 'name', 'stock', 'price_cents']).where('id', '=', id).executeTakeFirst()
}

/** The caller's cart with each line's product, in one query, oldest line first. */
export async function listCartLines(db: Db, userId: number) {
  return db
    .selectFrom('cart_items as c')
    .innerJoin('products as p', 'p.id', 'c.product_id')
    .select(['c.id', 'c.product_id', 'c.quantity', 'p.name', 'p.price_cents', 'p.image_url'])
    .where('c.user_id', '=', userId)
    .orderBy('c.id')
    .execute()
}

/**
 * Adds `quantity` of a product to the user's cart in one statement: a new line, or the quantities combined.
 * The stock rule is part of the statement (the insert selects only a product with enough stock; the update
 * applies only while the combined quantity fits), so concurrent adds can never push a line over the stock.
 * So is the amount rule: the line's subtotal stays within MAX_AMOUNT_CENTS.
 * Returns undefined when nothing was written (unknown product, not enough stock, or too large an amount).
 */
export async function upsertCartLine(db: Db, line: { userId: number; productId: number; quantity: number; now: string }): Promise<CartItemRecord | undefined> {
  return db
    .insertInto('cart_items')
    .columns(['user_id', 'product_id', 'quantity', 'created_at', 'updated_at'])
    .expression(
      db
        .selectFrom('products')
        .select([
          sql<number>`cast(${line.userId} as integer)`.as('user_id'),
          'id',
          sql<number>`cast(${line.quantity} as integer)`.as('quantity'),
          sql<string>`cast(${line.now} as text)`.as('created_at'),
          sql<string>`cast(${line.now} as text)`.as('updated_at'),
        ])
        .where('id', '=', line.productId)
        .where('stock', '>=', line.quantity)
        .where('price_cents', '<=', maxUnitCentsFor(line.quantity)),
    )
    .onConflict((oc) =>
      oc
        .columns(['user_id', 'product_id'])
        .doUpdateSet({
          quantity: sql`cart_items.quantity + excluded.quantity`,
          updated_at: sql`excluded.updated_at`,
        })
        // Written as a difference, and the sum in 64 bits, so the checks themselves cannot overflow a 32-bit integer.
        .where(sql<boolean>`excluded.quantity <= (select p.stock from products p where p.id = excluded.product_id) - cart_items.quantity`)
        .where(
          sql<boolean>`(select p.price_cents from products p where p.id = excluded.product_id) <= cast(${MAX_AMOUNT_CENTS} as bigint) / (cast(cart_items.quantity as bigint) + excluded.quantity)`,
        ),
    )
    .returning(cartItemColumns)
    .executeTakeFirst()
}

/** Sets a line's quantity when the line is the user's, the product has that much stock and the subtotal stays within MAX_AMOUNT_CENTS. */
export async function updateCartLineQuantity(
  db: Db,
  change: { id: number; userId: number; quantity: number; now: string },
): Promise<CartItemRecord | undefined> {
  return db
    .updateTable('cart_items')
    .set({ quantity: change.quantity, updated_at: change.now })
    .where('id', '=', change.id)
    .where('user_id', '=', change.userId)
    .where((eb) => eb(eb.selectFrom('products').select('products.stock').whereRef('products.id', '=', 'cart_items.product_id'), '>=', change.quantity))
    .where((eb) =>
      eb(
        eb.selectFrom('products').select('products.price_cents').whereRef('products.id', '=', 'cart_items.product_id'),
        '<=',
        maxUnitCentsFor(change.quantity),
      ),
    )
    .returning(cartItemColumns)
    .executeTakeFirst()
}

export async function findCartLineOfProduct(db: Db, userId: number, productId: number) {
  return db.selectFrom('cart_items').select('quantity').where('user_id', '=', userId).where('product_id', '=', productId).executeTakeFirst()
}

export async function findCartLine(db: Db, id: number, userId: number) {
  return db.selectFrom('cart_items').select(cartItemColumns).where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
}

export async function deleteCartLine(db: Db, id: number, userId: number): Promise<boolean> {
  const result = await db.deleteFrom('cart_items').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function deleteCartLines(db: Db, userId: number): Promise<number> {
  const result = await db.deleteFrom('cart_items').where('user_id', '=', userId).executeTakeFirst()
  return Number(result.numDeletedRows)
}
