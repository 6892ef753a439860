import type { FastifyInstance } from 'fastify'
import { nowIso } from '../../src/shared/time.js'

let sequence = 0

export interface TestProduct {
  id: number
  name: string
  priceCents: number
  stock: number
}

/** Inserts a product row directly (the catalog module is not a dependency of cart and orders). */
export async function makeProduct(
  app: FastifyInstance,
  fields: { name?: string; priceCents?: number; stock?: number } = {},
): Promise<TestProduct> {
  sequence += 1
  const now = nowIso()
  const name = fields.name ?? `Product ${sequence}`
  const priceCents = fields.priceCents ?? 1999
  const stock = fields.stock ?? 10
  const row = await app.db
    .insertInto('products')
    .values({
      name,
      description: '',
      price_cents: priceCents,
      stock,
      image_key: `products/test-${sequence}.png`,
      image_url: `http://shop.test/uploads/products/test-${sequence}.png`,
      category_id: null,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  // Written behind the service's back: the product read cache must hear of it.
  app.catalogCache.invalidate()
  return { id: row.id, name, priceCents, stock }
}

export async function stockOf(app: FastifyInstance, productId: number): Promise<number> {
  const row = await app.db.selectFrom('products').select('stock').where('id', '=', productId).executeTakeFirstOrThrow()
  return row.stock
}

/** The user's cart lines as {productId: quantity}. */
export async function cartOf(app: FastifyInstance, userId: number): Promise<Record<number, number>> {
  const rows = await app.db.selectFrom('cart_items').select(['product_id', 'quantity']).where('user_id', '=', userId).execute()
  return Object.fromEntries(rows.map((r) => [r.product_id, r.quantity]))
}

export async function countRows(app: FastifyInstance, table: 'orders' | 'order_items' | 'idempotency_keys' | 'cart_items'): Promise<number> {
  const row = await app.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function deleteProduct(app: FastifyInstance, productId: number): Promise<void> {
  await app.db.deleteFrom('products').where('id', '=', productId).execute()
  app.catalogCache.invalidate()
}

/** Puts lines into a user's cart directly. */
export async function fillCart(app: FastifyInstance, userId: number, lines: Array<{ productId: number; quantity: number }>): Promise<void> {
  const now = nowIso()
  await app.db
    .insertInto('cart_items')
    .values(lines.map((l) => ({ user_id: userId, product_id: l.productId, quantity: l.quantity, created_at: now, updated_at: now })))
    .execute()
}
