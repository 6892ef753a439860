import { expect } from 'vitest'
import type { Database } from '../../src/db/database.js'
import type { FastifyInstance } from 'fastify'
import { nowIso } from '../../src/shared/time.js'

export async function stockOf(app: FastifyInstance, productId: number): Promise<number> {
  const row = await app.db.selectFrom('products').select('stock').where('id', '=', productId).executeTakeFirstOrThrow()
  return row.stock
}

/** The user's cart lines as {productId: quantity}. */
export async function cartOf(app: FastifyInstance, userId: number): Promise<Record<number, number>> {
  const rows = await app.db.selectFrom('cart_items').select(['product_id', 'quantity']).where('user_id', '=', userId).execute()
  return Object.fromEntries(rows.map((r) => [r.product_id, r.quantity]))
}

/** How many rows `table` holds. */
export async function countRows(app: FastifyInstance, table: keyof Database): Promise<number> {
  const row = await app.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function deleteProduct(app: FastifyInstance, productId: number): Promise<void> {
  await app.db.deleteFrom('products').where('id', '=', productId).execute()
  app.catalogCache.invalidate()
}

/** Puts lines into a user's cart directly. */
export async function fillCart(app: FastifyInstance, userId: number, lines: Array<{ productId: number; variantId?: number; quantity: number }>): Promise<void> {
  const now = nowIso()
  const cart = await app.db
    .insertInto('carts')
    .values({ user_id: userId, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ updated_at: now }))
    .returning('id')
    .executeTakeFirstOrThrow()
  const rows = []
  for (const l of lines) {
    // Without a variant named, the product's first.
    const variant = await app.db
      .selectFrom('product_variants')
      .select('id')
      .where('product_id', '=', l.productId)
      .$if(l.variantId !== undefined, (q) => q.where('id', '=', l.variantId ?? 0))
      .orderBy('position')
      .orderBy('id')
      .executeTakeFirstOrThrow()
    rows.push({ cart_id: cart.id, user_id: userId, product_id: l.productId, variant_id: variant.id, quantity: l.quantity, created_at: now, updated_at: now })
  }
  await app.db.insertInto('cart_items').values(rows).execute()
}

/** What every order line adds to the fields it always had, for a line without options, code or tax. */
export function plainLine(total: number) {
  return {
    variantId: expect.any(Number),
    sku: null,
    variantTitle: null,
    options: [],
    taxClass: 'standard',
    taxRate: 0,
    discount: 0,
    tax: 0,
    total,
    fulfilledQuantity: 0,
    refundedQuantity: 0,
  }
}

/** What every order adds to the fields it always had, for an order without code or tax. */
export const plainBreakdown = {
  fulfillmentStatus: 'unfulfilled',
  fulfillments: [],
  currency: 'EUR',
  pricesIncludeTax: true,
  taxCountry: 'ES',
  discountTotal: 0,
  shippingDiscount: 0,
  taxTotal: 0,
  discount: null,
  taxLines: [],
  refunds: [],
}
