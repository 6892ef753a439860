import type { FastifyInstance } from 'fastify'
import { afterAll } from 'vitest'
import { intentKey } from '../../src/modules/payments/payments.service.js'
import { type UsedTestApp, useTestApp } from '../helpers/app.js'
import { makeProduct, type TestProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'
import { intentEvent, signedHeaders, type StripeFake, startStripeFake, webhookSecret } from '../fakes/stripe-fake.js'

/** The environment of a shop that takes payments through the fake Stripe. */
export function stripeEnv(fake: StripeFake, extra: Record<string, string> = {}): Record<string, string> {
  return {
    STRIPE_SECRET_KEY: 'sk_test_fake',
    STRIPE_PUBLISHABLE_KEY: 'pk_test_fake',
    STRIPE_WEBHOOK_SECRET: webhookSecret,
    STRIPE_API_URL: fake.url,
    ...extra,
  }
}

/**
 * The set-up of a file whose shop takes payments through the fake Stripe: starts the fake at once (call it with a
 * top-level await, so that its URL is known when the shop is built), then builds the shop on it with useTestApp
 * (`env` adds to stripeEnv's); the shop is closed after the tests, then the fake.
 *
 *   const { fake, shop } = await useStripeShop({ ORDER_PAYMENT_TTL: '30m' })
 */
export async function useStripeShop(
  env: Record<string, string> = {},
  extra: Parameters<typeof useTestApp>[1] = {},
): Promise<{ fake: StripeFake; shop: UsedTestApp }> {
  const fake = await startStripeFake()
  // Registered first, so run last (Vitest runs the after hooks in reverse): the shop is closed before its Stripe.
  afterAll(async () => {
    await fake.close()
  })
  return { fake, shop: useTestApp(stripeEnv(fake, env), extra) }
}

export interface PlacedOrder {
  id: number
  buyer: TestUser
  product: TestProduct
  quantity: number
}

/** A customer orders `quantity` units of a new product at 19.99 (total 39.98 for 2). */
export async function placeOrder(app: FastifyInstance, quantity = 2, stock = 10): Promise<PlacedOrder> {
  const buyer = await makeUser(app)
  const product = await makeProduct(app, { stock, priceCents: 1999 })
  await fillCart(app, buyer.id, [{ productId: product.id, quantity }])
  const response = await app.inject({ method: 'POST', url: '/orders', headers: bearer(buyer) })
  if (response.statusCode !== 201) throw new Error(`POST /orders answered ${response.statusCode}: ${response.body}`)
  return { id: (response.json() as { id: number }).id, buyer, product, quantity }
}

export async function pay(app: FastifyInstance, order: PlacedOrder) {
  return app.inject({ method: 'POST', url: `/orders/${order.id}/payment`, headers: bearer(order.buyer) })
}

/** Posts a signed event to the webhook, as Stripe would. */
export async function deliver(app: FastifyInstance, event: unknown) {
  const payload = JSON.stringify(event)
  return app.inject({ method: 'POST', url: '/payments/stripe/webhook', headers: signedHeaders(payload), payload })
}

export async function paymentRow(app: FastifyInstance, orderId: number) {
  return app.db.selectFrom('payments').selectAll().where('order_id', '=', orderId).executeTakeFirst()
}

export async function orderStatus(app: FastifyInstance, orderId: number) {
  return (await app.db.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirstOrThrow()).status
}

/** The intent of an order, as the shop stored it. */
export async function intentOf(app: FastifyInstance, orderId: number): Promise<string> {
  const row = await paymentRow(app, orderId)
  if (!row?.intent_id) throw new Error(`order ${orderId} has no intent`)
  return row.intent_id
}

export { intentEvent }

/** The idempotency key the service uses for `orderId`'s PaymentIntent, attempt `attempt`. */
export async function intentKeyOf(app: FastifyInstance, orderId: number, attempt = 1): Promise<string> {
  const order = await app.db.selectFrom('orders').select(['id', 'created_at']).where('id', '=', orderId).executeTakeFirstOrThrow()
  return intentKey(order, attempt)
}
