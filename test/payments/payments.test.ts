import { describe, expect, it } from 'vitest'
import { createTestApp } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { stockOf } from '../helpers/shop.js'
import { signedHeaders } from '../fakes/stripe-fake.js'
import { deliver, intentEvent, intentKeyOf, intentOf, orderStatus, pay, paymentRow, placeOrder, stripeEnv, useStripeShop } from './helpers.js'

const { fake, shop: t } = await useStripeShop()

const setStatus = (id: number, status: string) => t.app.inject({ method: 'PATCH', url: `/orders/${id}/status`, headers: bearer(t.admin), payload: { status } })

describe('POST /orders/:id/payment with Stripe', () => {
  it('creates one PaymentIntent for the order, with an idempotency key and metadata.orderId, and answers its client secret', async () => {
    const order = await placeOrder(t.app)
    const response = await pay(t.app, order)
    expect(response.statusCode).toBe(200)
    const body = response.json() as Record<string, unknown>
    expect(body).toEqual({
      provider: 'stripe',
      status: 'unpaid',
      amount: 39.98,
      currency: 'EUR',
      refundedAmount: 0,
      clientSecret: expect.stringMatching(/^pi_/),
      publishableKey: 'pk_test_fake',
    })
    const intentId = await intentOf(t.app, order.id)
    expect(fake.intents.get(intentId)).toMatchObject({ amount: 3998, currency: 'eur', metadata: { orderId: String(order.id) } })
    const key = await intentKeyOf(t.app, order.id)
    expect(key).toMatch(new RegExp(`^order-${order.id}-\\d{13}-intent-1$`))
    const create = fake.calls.filter((c) => c.route === 'create-intent' && c.idempotencyKey === key)
    expect(create).toHaveLength(1)
  })

  it('two databases on one Stripe account: each order 1 gets its own intent', async () => {
    // No e-mails to send: closing an app whose send thread has started waits for it.
    const [one, two] = [
      await createTestApp(stripeEnv(fake), { outbox: { enabled: false } }),
      await createTestApp(stripeEnv(fake), { outbox: { enabled: false } }),
    ]
    try {
      const [a, b] = [await placeOrder(one.app), await placeOrder(two.app)]
      expect(a.id).toBe(b.id)
      expect((await pay(one.app, a)).statusCode).toBe(200)
      expect((await pay(two.app, b)).statusCode).toBe(200)
      expect(await intentOf(one.app, a.id)).not.toBe(await intentOf(two.app, b.id))
    } finally {
      await one.close()
      await two.close()
    }
  })

  it('answers the same intent while it can be paid, and a new one after it was canceled', async () => {
    const order = await placeOrder(t.app)
    const first = (await pay(t.app, order)).json() as { clientSecret: string }
    const again = (await pay(t.app, order)).json() as { clientSecret: string }
    expect(again.clientSecret).toBe(first.clientSecret)
    const before = await intentOf(t.app, order.id)
    fake.setStatus(before, 'canceled')
    const renewed = (await pay(t.app, order)).json() as { clientSecret: string }
    expect(renewed.clientSecret).not.toBe(first.clientSecret)
    expect(await intentOf(t.app, order.id)).not.toBe(before)
    expect((await paymentRow(t.app, order.id))?.intent_attempt).toBe(2)
  })

  it('racing first calls share one intent', async () => {
    const order = await placeOrder(t.app)
    const answers = await Promise.all(Array.from({ length: 5 }, () => pay(t.app, order)))
    const secrets = new Set(answers.map((a) => (a.json() as { clientSecret: string }).clientSecret))
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200])
    expect(secrets.size).toBe(1)
  })

  it('someone else’s order is not found, an admin’s call too; an order that is not pending is a 409', async () => {
    const order = await placeOrder(t.app)
    const other = await makeUser(t.app)
    for (const caller of [other, t.admin]) {
      const response = await t.app.inject({ method: 'POST', url: `/orders/${order.id}/payment`, headers: bearer(caller) })
      expect(response.statusCode).toBe(404)
      expect(response.json()).toEqual({ error: 'Orden no encontrada' })
    }
    expect((await t.app.inject({ method: 'POST', url: '/orders/999999/payment', headers: bearer(order.buyer) })).json()).toEqual({
      error: 'Orden no encontrada',
    })
    expect((await setStatus(order.id, 'cancelled')).statusCode).toBe(200)
    const response = await pay(t.app, order)
    expect(response.statusCode).toBe(409)
    expect(response.json()).toEqual({ error: 'La orden no está pendiente de pago' })
    expect(await paymentRow(t.app, order.id)).toBeUndefined()
  })

  it('Stripe not answering is a 502 and stores nothing', async () => {
    const order = await placeOrder(t.app)
    fake.fail('create-intent', { status: 500, type: 'api_error', message: 'down' }, 2)
    const response = await pay(t.app, order)
    expect(response.statusCode).toBe(502)
    expect(response.json()).toEqual({ error: 'El proveedor de pagos no responde' })
    expect(await paymentRow(t.app, order.id)).toBeUndefined()
    fake.heal()
  })

  it('the order JSON carries payment {provider, status, amount, currency}', async () => {
    const order = await placeOrder(t.app)
    const read = (await t.app.inject({ url: `/orders/${order.id}`, headers: bearer(order.buyer) })).json() as { payment: unknown }
    expect(read.payment).toEqual({ provider: 'stripe', status: 'unpaid', amount: 39.98, currency: 'EUR', refundedAmount: 0 })
    await pay(t.app, order)
    fake.succeed(await intentOf(t.app, order.id))
    await deliver(t.app, intentEvent('payment_intent.succeeded', fake.intents.get(await intentOf(t.app, order.id))!))
    const list = (await t.app.inject({ url: '/orders', headers: bearer(order.buyer) })).json() as Array<{ id: number; status: string; payment: unknown }>
    expect(list[0]).toMatchObject({ id: order.id, status: 'paid', payment: { provider: 'stripe', status: 'paid', amount: 39.98, currency: 'EUR' } })
  })
})

describe('the webhook', () => {
  const url = '/payments/stripe/webhook'

  it('a missing, bad or old signature, or a signed body that is not JSON, is 400 Firma de webhook inválida', async () => {
    const order = await placeOrder(t.app)
    await pay(t.app, order)
    const payload = JSON.stringify(intentEvent('payment_intent.succeeded', fake.succeed(await intentOf(t.app, order.id))))
    const attempts = [
      { 'content-type': 'application/json' },
      { ...signedHeaders(payload, { secret: 'whsec_wrong' }) },
      { ...signedHeaders(payload, { timestamp: Math.floor(Date.now() / 1000) - 301 }) },
      { ...signedHeaders(payload), 'stripe-signature': 'garbage' },
    ]
    for (const headers of attempts) {
      const response = await t.app.inject({ method: 'POST', url, headers, payload })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toEqual({ error: 'Firma de webhook inválida' })
    }
    const notJson = '{"id": "evt_1", "type":'
    const malformed = await t.app.inject({ method: 'POST', url, headers: signedHeaders(notJson), payload: notJson })
    expect(malformed.statusCode).toBe(400)
    expect(malformed.json()).toEqual({ error: 'Firma de webhook inválida' })
    // The signature is over the raw bytes: the same JSON re-spaced does not pass.
    const respaced = await t.app.inject({ method: 'POST', url, headers: signedHeaders(payload), payload: JSON.stringify(JSON.parse(payload), null, 2) })
    expect(respaced.statusCode).toBe(400)
    expect(respaced.json()).toEqual({ error: 'Firma de webhook inválida' })
    expect(await orderStatus(t.app, order.id)).toBe('pending')
  })

  it('signed events of other types, without an object, or about intents the shop did not create: 200, ignored', async () => {
    const order = await placeOrder(t.app)
    await pay(t.app, order)
    for (const event of [
      intentEvent('charge.refunded', { id: 'ch_1' }),
      { id: 'evt_no_data', type: 'payment_intent.succeeded' },
      intentEvent('payment_intent.succeeded', { id: 'pi_not_ours', amount_received: 3998, currency: 'eur', metadata: { orderId: String(order.id) } }),
      [1, 2, 3],
      'text',
    ]) {
      const response = await deliver(t.app, event)
      expect(response.statusCode).toBe(200)
      expect(response.json()).toEqual({ received: true })
    }
    // metadata.orderId named our order: never used to match.
    expect(await orderStatus(t.app, order.id)).toBe('pending')
  })

  it('succeeded with the right amount and currency: the order is paid', async () => {
    const order = await placeOrder(t.app)
    await pay(t.app, order)
    const intent = fake.succeed(await intentOf(t.app, order.id))
    const response = await deliver(t.app, intentEvent('payment_intent.succeeded', intent))
    expect(response.json()).toEqual({ received: true })
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    expect((await paymentRow(t.app, order.id))?.status).toBe('paid')
  })

  it('an amount or currency mismatch is recorded and the order stays pending', async () => {
    for (const [amount, currency] of [
      [3997, 'eur'],
      [3998, 'usd'],
    ] as const) {
      const order = await placeOrder(t.app)
      await pay(t.app, order)
      const intent = { ...fake.succeed(await intentOf(t.app, order.id), amount), currency }
      expect((await deliver(t.app, intentEvent('payment_intent.succeeded', intent))).statusCode).toBe(200)
      expect(await orderStatus(t.app, order.id)).toBe('pending')
      const row = await paymentRow(t.app, order.id)
      expect(row?.status).toBe('unpaid')
      expect(row?.mismatch).toMatch(/^received /)
    }
  })

  it('processing, then failed: the order stays pending and can be paid again; a processing payment is shown', async () => {
    const order = await placeOrder(t.app)
    await pay(t.app, order)
    const intentId = await intentOf(t.app, order.id)
    await deliver(t.app, intentEvent('payment_intent.processing', fake.setStatus(intentId, 'processing')))
    expect((await paymentRow(t.app, order.id))?.status).toBe('processing')
    await deliver(t.app, intentEvent('payment_intent.payment_failed', fake.setStatus(intentId, 'requires_payment_method')))
    expect((await paymentRow(t.app, order.id))?.status).toBe('failed')
    expect(await orderStatus(t.app, order.id)).toBe('pending')
    expect((await pay(t.app, order)).statusCode).toBe(200)
    await deliver(t.app, intentEvent('payment_intent.succeeded', fake.succeed(intentId)))
    expect(await orderStatus(t.app, order.id)).toBe('paid')
  })
})

describe('cancelling', () => {
  it('a paid order is refunded in the same step: one refund, key refund-order-<id>-1, stock back', async () => {
    const order = await placeOrder(t.app, 2, 10)
    await pay(t.app, order)
    await deliver(t.app, intentEvent('payment_intent.succeeded', fake.succeed(await intentOf(t.app, order.id))))
    expect(await stockOf(t.app, order.product.id)).toBe(8)
    const response = await setStatus(order.id, 'cancelled')
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({ status: 'cancelled', payment: { status: 'refunded' } })
    const intentId = await intentOf(t.app, order.id)
    expect(fake.refunds.filter((r) => r.payment_intent === intentId)).toEqual([
      expect.objectContaining({ amount: 3998, idempotencyKey: `refund-order-${order.id}-1` }),
    ])
    expect(await stockOf(t.app, order.product.id)).toBe(10)
  })

  it('a refund that fails is 502 No se pudo reembolsar el pago, and the status, stock and payment are unchanged', async () => {
    const order = await placeOrder(t.app, 2, 10)
    await pay(t.app, order)
    const intentId = await intentOf(t.app, order.id)
    await deliver(t.app, intentEvent('payment_intent.succeeded', fake.succeed(intentId)))
    // A definite refusal: the next attempt takes the next key (Stripe would replay the refusal for the same one).
    fake.fail('create-refund', { status: 402, type: 'card_error', message: 'refused' })
    const refused = await setStatus(order.id, 'cancelled')
    expect(refused.statusCode).toBe(502)
    expect(refused.json()).toEqual({ error: 'No se pudo reembolsar el pago' })
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    expect(await stockOf(t.app, order.product.id)).toBe(8)
    expect((await paymentRow(t.app, order.id))?.status).toBe('paid')
    // A timeout (a 5xx twice: the SDK retries once with the same key): the next attempt reuses the key.
    await expect.poll(async () => (await paymentRow(t.app, order.id))?.refund_attempt).toBe(2)
    fake.fail('create-refund', { status: 500, type: 'api_error', message: 'down' }, 2)
    expect((await setStatus(order.id, 'cancelled')).statusCode).toBe(502)
    expect((await paymentRow(t.app, order.id))?.refund_attempt).toBe(2)
    const done = await setStatus(order.id, 'cancelled')
    expect(done.statusCode).toBe(200)
    const keys = fake.calls.filter((c) => c.route === 'create-refund').map((c) => c.idempotencyKey)
    expect(keys.slice(-4)).toEqual([`refund-order-${order.id}-1`, `refund-order-${order.id}-2`, `refund-order-${order.id}-2`, `refund-order-${order.id}-2`])
    expect(fake.refunds.filter((r) => r.payment_intent === intentId)).toHaveLength(1)
    expect(await stockOf(t.app, order.product.id)).toBe(10)
  })

  it('an unpaid order’s intent is cancelled; a success that still arrives is refunded automatically', async () => {
    const order = await placeOrder(t.app)
    await pay(t.app, order)
    const intentId = await intentOf(t.app, order.id)
    expect((await setStatus(order.id, 'cancelled')).statusCode).toBe(200)
    expect(fake.intents.get(intentId)?.status).toBe('canceled')
    // The customer had paid a moment before the cancel reached Stripe.
    fake.setStatus(intentId, 'processing')
    const late = fake.succeed(intentId)
    expect((await deliver(t.app, intentEvent('payment_intent.succeeded', late))).statusCode).toBe(200)
    expect(await orderStatus(t.app, order.id)).toBe('cancelled')
    expect((await paymentRow(t.app, order.id))?.status).toBe('refunded')
    expect(fake.refunds.filter((r) => r.payment_intent === intentId)).toHaveLength(1)
  })
})

describe('the webhook’s body', () => {
  it('is read whatever its content type (the signature decides); a body over 256 KiB is 413', async () => {
    const order = await placeOrder(t.app)
    await pay(t.app, order)
    const payload = JSON.stringify(intentEvent('payment_intent.succeeded', fake.succeed(await intentOf(t.app, order.id))))
    const headers = { ...signedHeaders(payload), 'content-type': 'text/plain' }
    const response = await t.app.inject({ method: 'POST', url: '/payments/stripe/webhook', headers, payload })
    expect(response.statusCode).toBe(200)
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    const big = JSON.stringify({ id: 'evt_big', type: 'x', pad: 'x'.repeat(300 * 1024) })
    const tooBig = await t.app.inject({ method: 'POST', url: '/payments/stripe/webhook', headers: signedHeaders(big), payload: big })
    expect(tooBig.statusCode).toBe(413)
    expect(tooBig.json()).toEqual({ error: 'El cuerpo de la petición es demasiado grande' })
  })
})
