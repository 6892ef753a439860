import type { FastifyInstance } from 'fastify'
import { makeProduct } from './catalog.js'
import { bearer, makeUser } from './factories.js'
import { nowIso } from '../../src/shared/time.js'

/** An order written straight into the database, as checkout writes it, with its lines and (a guest's) token. */
export interface AfterSaleOrder {
  id: number
  email: string
  lines: Array<{ id: number; productId: number; variantId: number; quantity: number; name: string }>
  /** A guest order's token (undefined on an account order). */
  token: string | undefined
}

/**
 * A paid order of `lines` (new products, 10 in stock each after the sale), an account's (`userId`) or a guest's
 * (`guestEmail`).
 */
export async function paidOrder(
  app: FastifyInstance,
  buyer: { userId: number; email: string } | { guestEmail: string },
  lines: Array<{ name: string; quantity: number; priceCents?: number }>,
  status: 'pending' | 'paid' | 'shipped' | 'delivered' | 'cancelled' = 'paid',
): Promise<AfterSaleOrder> {
  const now = nowIso()
  const guest = 'guestEmail' in buyer
  const products = []
  for (const line of lines) {
    const product = await makeProduct(app, { name: line.name, stock: 10, priceCents: line.priceCents ?? 1000 })
    const variant = await app.db.selectFrom('product_variants').select('id').where('product_id', '=', product.id).executeTakeFirstOrThrow()
    products.push({ productId: product.id, variantId: variant.id })
  }
  const total = lines.reduce((sum, line) => sum + (line.priceCents ?? 1000) * line.quantity, 0)
  const order = await app.db
    .insertInto('orders')
    .values({
      user_id: guest ? null : buyer.userId,
      guest: guest ? 1 : 0,
      email: guest ? buyer.guestEmail : null,
      total_cents: total,
      status,
      created_at: now,
      updated_at: now,
      subtotal_cents: total,
      shipping_cents: 0,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  const written = []
  for (const [i, line] of lines.entries()) {
    const { productId, variantId } = products[i]!
    const row = await app.db
      .insertInto('order_items')
      .values({
        order_id: order.id,
        product_id: productId,
        variant_id: variantId,
        quantity: line.quantity,
        price_cents: line.priceCents ?? 1000,
        name: line.name,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    written.push({ id: row.id, productId, variantId, quantity: line.quantity, name: line.name })
  }
  return {
    id: order.id,
    email: guest ? buyer.guestEmail : buyer.email,
    lines: written,
    token: guest ? app.orderTokens.sign(order.id) : undefined,
  }
}

/**
 * Ships units of an order through the API, as staff do: one shipment of `items` (`POST /orders/:id/fulfillments`),
 * recorded delivered at `deliveredAt` when given (`POST /fulfillments/:id/delivered`). Returns the shipment's id.
 */
export async function shipUnits(
  app: FastifyInstance,
  orderId: number,
  items: Array<{ orderItemId: number; quantity: number }>,
  options: { deliveredAt?: string } = {},
): Promise<number> {
  const staff = bearer(await makeUser(app, 'admin'))
  const shipped = await app.inject({ method: 'POST', url: `/orders/${orderId}/fulfillments`, headers: staff, payload: { items, notifyCustomer: false } })
  if (shipped.statusCode !== 201) throw new Error(`shipping order ${orderId}: ${shipped.statusCode} ${shipped.body}`)
  const id = shipped.json<{ id: number }>().id
  if (options.deliveredAt !== undefined) {
    const delivered = await app.inject({ method: 'POST', url: `/fulfillments/${id}/delivered`, headers: staff, payload: { deliveredAt: options.deliveredAt } })
    if (delivered.statusCode !== 200) throw new Error(`delivering shipment ${id}: ${delivered.statusCode} ${delivered.body}`)
  }
  return id
}

/** Ships every unit of the order in one fulfillment, delivered `daysAgo` days ago (now when 0). */
export async function shipAll(app: FastifyInstance, order: AfterSaleOrder, deliveredDaysAgo?: number): Promise<number> {
  const deliveredAt = deliveredDaysAgo === undefined ? undefined : new Date(Date.now() - deliveredDaysAgo * 86_400_000).toISOString()
  return shipUnits(
    app,
    order.id,
    order.lines.map((line) => ({ orderItemId: line.id, quantity: line.quantity })),
    deliveredAt ? { deliveredAt } : {},
  )
}
