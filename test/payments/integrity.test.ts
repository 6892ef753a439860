import { describe, expect, it, vi } from 'vitest'
import { claimJobRun } from '../../src/modules/payments/payments.repository.js'
import { createTestApp } from '../helpers/app.js'
import { bearer } from '../helpers/factories.js'
import { stockOf } from '../helpers/shop.js'
import { deliver, intentEvent, intentKeyOf, intentOf, orderStatus, pay, paymentRow, type PlacedOrder, placeOrder, stripeEnv, useStripeShop } from './helpers.js'

// Each integrity case of the payments, on SQLite and (with TEST_DATABASE_URL) on PostgreSQL, where the
// concurrent requests really run at once on a pool of connections.

const { fake, shop: t } = await useStripeShop({ ORDER_PAYMENT_TTL: '30m' })

const refundsOf = (intentId: string) => fake.refunds.filter((r) => r.payment_intent === intentId)
const cancel = (id: number) => t.app.inject({ method: 'PATCH', url: `/orders/${id}/status`, headers: bearer(t.admin), payload: { status: 'cancelled' } })

/** An order with its intent created (POST /orders/:id/payment), and the intent's id. */
async function orderWithIntent(quantity = 2, stock = 10): Promise<PlacedOrder & { intentId: string }> {
  const order = await placeOrder(t.app, quantity, stock)
  expect((await pay(t.app, order)).statusCode).toBe(200)
  return { ...order, intentId: await intentOf(t.app, order.id) }
}

/** Makes an order look placed `minutes` ago. */
async function age(orderId: number, minutes: number): Promise<void> {
  const createdAt = new Date(Date.now() - minutes * 60_000).toISOString()
  await t.app.db.updateTable('orders').set({ created_at: createdAt }).where('id', '=', orderId).execute()
}

describe('each event applied once', () => {
  it('the same event delivered 10 times at once: one transition', async () => {
    const order = await orderWithIntent()
    const event = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId))
    const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(t.app, event)))
    expect(answers.map((a) => a.statusCode)).toEqual(Array(10).fill(200))
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    const recorded = await t.app.db.selectFrom('payment_events').select('event_id').where('event_id', '=', event.id).execute()
    expect(recorded).toHaveLength(1)
  })

  it('out of order: failed and processing after succeeded change nothing; a late success after failed still pays', async () => {
    const order = await orderWithIntent()
    const succeeded = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId))
    const failed = intentEvent('payment_intent.payment_failed', { ...fake.intents.get(order.intentId), status: 'requires_payment_method' })
    const processing = intentEvent('payment_intent.processing', { ...fake.intents.get(order.intentId), status: 'processing' })
    await deliver(t.app, succeeded)
    await deliver(t.app, failed)
    await deliver(t.app, processing)
    await deliver(t.app, intentEvent('payment_intent.canceled', { ...fake.intents.get(order.intentId), status: 'canceled' }))
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    expect((await paymentRow(t.app, order.id))?.status).toBe('paid')

    const other = await orderWithIntent()
    await deliver(t.app, intentEvent('payment_intent.payment_failed', fake.setStatus(other.intentId, 'requires_payment_method')))
    await deliver(t.app, intentEvent('payment_intent.succeeded', fake.succeed(other.intentId)))
    expect(await orderStatus(t.app, other.id)).toBe('paid')
  })

  it('a refunded payment is never taken back: events after the refund change nothing', async () => {
    const order = await orderWithIntent()
    const succeeded = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId))
    await deliver(t.app, succeeded)
    expect((await cancel(order.id)).statusCode).toBe(200)
    await deliver(t.app, intentEvent('payment_intent.succeeded', fake.intents.get(order.intentId)!))
    await deliver(t.app, intentEvent('payment_intent.processing', { ...fake.intents.get(order.intentId), status: 'processing' }))
    expect(await orderStatus(t.app, order.id)).toBe('cancelled')
    expect((await paymentRow(t.app, order.id))?.status).toBe('refunded')
    expect(refundsOf(order.intentId)).toHaveLength(1)
  })

  it('a success after the cancel, delivered as 5 different events at once: refunded, exactly one refund', async () => {
    const order = await orderWithIntent(3, 10)
    expect((await cancel(order.id)).statusCode).toBe(200)
    expect(await stockOf(t.app, order.product.id)).toBe(10)
    fake.setStatus(order.intentId, 'processing')
    const intent = fake.succeed(order.intentId)
    const answers = await Promise.all(Array.from({ length: 5 }, () => deliver(t.app, intentEvent('payment_intent.succeeded', intent))))
    expect(answers.map((a) => a.statusCode)).toEqual(Array(5).fill(200))
    expect(await orderStatus(t.app, order.id)).toBe('cancelled')
    expect((await paymentRow(t.app, order.id))?.status).toBe('refunded')
    expect(refundsOf(order.intentId)).toHaveLength(1)
    expect(await stockOf(t.app, order.product.id)).toBe(10)
  })

  it('an amount mismatch: not paid, even when delivered again', async () => {
    const order = await orderWithIntent()
    const event = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId, 100))
    await deliver(t.app, event)
    await deliver(t.app, event)
    expect(await orderStatus(t.app, order.id)).toBe('pending')
    expect((await paymentRow(t.app, order.id))?.mismatch).toBe('received 100 EUR, expected 3998 EUR')
  })

  it('a refund failure on cancel: 502, status, stock and payment unchanged; no refund at Stripe', async () => {
    const order = await orderWithIntent(2, 10)
    await deliver(t.app, intentEvent('payment_intent.succeeded', fake.succeed(order.intentId)))
    // Stripe down (a 503, and again on the SDK's one retry).
    fake.fail('create-refund', { status: 503, type: 'api_error', message: 'unavailable' }, 2)
    const response = await cancel(order.id)
    expect(response.statusCode).toBe(502)
    expect(response.json()).toEqual({ error: 'No se pudo reembolsar el pago' })
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    expect(await stockOf(t.app, order.product.id)).toBe(8)
    expect((await paymentRow(t.app, order.id))?.status).toBe('paid')
    expect(refundsOf(order.intentId)).toHaveLength(0)
  })

  it('two admins cancel a paid order at once: one refund, stock back once', async () => {
    const order = await orderWithIntent(2, 10)
    await deliver(t.app, intentEvent('payment_intent.succeeded', fake.succeed(order.intentId)))
    const answers = await Promise.all([cancel(order.id), cancel(order.id), cancel(order.id)])
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 409, 409])
    expect(refundsOf(order.intentId)).toHaveLength(1)
    expect(await stockOf(t.app, order.product.id)).toBe(10)
  })
})

describe('races with the order', () => {
  it('the webhook racing repeated payment requests: the order ends paid, never back to unpaid', async () => {
    const order = await orderWithIntent()
    const event = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId))
    const answers = await Promise.all([pay(t.app, order), deliver(t.app, event), pay(t.app, order), pay(t.app, order)])
    expect(answers[1]?.statusCode).toBe(200)
    for (const answer of [answers[0], answers[2], answers[3]]) expect([200, 409]).toContain(answer?.statusCode)
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    expect((await paymentRow(t.app, order.id))?.status).toBe('paid')
    expect((await pay(t.app, order)).json()).toEqual({ error: 'La orden no está pendiente de pago' })
  })

  it('the webhook racing the first payment request of a fresh order: the intent is stored once and the order is paid', async () => {
    const order = await placeOrder(t.app)
    const first = pay(t.app, order)
    const second = pay(t.app, order)
    await Promise.all([first, second])
    const intentId = await intentOf(t.app, order.id)
    await Promise.all([deliver(t.app, intentEvent('payment_intent.succeeded', fake.succeed(intentId))), pay(t.app, order)])
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    const key = await intentKeyOf(t.app, order.id)
    expect(fake.calls.filter((c) => c.route === 'create-intent' && c.idempotencyKey === key).length).toBeGreaterThan(0)
    expect([...fake.intents.values()].filter((i) => i.metadata.orderId === String(order.id))).toHaveLength(1)
  })

  it('expiry racing a late payment, 8 times: each order is paid (stock kept) or cancelled and refunded (stock back), never paid with its stock returned', async () => {
    const orders = []
    for (let i = 0; i < 8; i++) orders.push(await orderWithIntent(2, 10))
    for (const order of orders) await age(order.id, 31)
    await Promise.all([
      t.app.paymentJobs.expire(),
      ...orders.map((order) => deliver(t.app, intentEvent('payment_intent.succeeded', fake.succeed(order.intentId)))),
    ])
    for (const order of orders) {
      const status = await orderStatus(t.app, order.id)
      const payment = (await paymentRow(t.app, order.id))?.status
      const stock = await stockOf(t.app, order.product.id)
      if (status === 'paid') {
        expect({ payment, stock, refunds: refundsOf(order.intentId).length }).toEqual({ payment: 'paid', stock: 8, refunds: 0 })
      } else {
        expect({ status, payment, stock, refunds: refundsOf(order.intentId).length }).toEqual({
          status: 'cancelled',
          payment: 'refunded',
          stock: 10,
          refunds: 1,
        })
      }
    }
  })
})

describe('expiry', () => {
  it('an unpaid order past ORDER_PAYMENT_TTL is cancelled, its stock comes back and its intent is cancelled; a younger one stays', async () => {
    const old = await orderWithIntent(3, 10)
    const noIntent = await placeOrder(t.app, 1, 5)
    const young = await orderWithIntent(1, 10)
    await age(old.id, 31)
    await age(noIntent.id, 31)
    await age(young.id, 29)
    const expired = await t.app.paymentJobs.expire()
    expect(expired).toEqual(expect.arrayContaining([old.id, noIntent.id]))
    expect(expired).not.toContain(young.id)
    expect(await orderStatus(t.app, old.id)).toBe('cancelled')
    expect(await stockOf(t.app, old.product.id)).toBe(10)
    expect(await stockOf(t.app, noIntent.product.id)).toBe(5)
    expect(fake.intents.get(old.intentId)?.status).toBe('canceled')
    expect(await orderStatus(t.app, young.id)).toBe('pending')
    // Run again: nothing more.
    expect(await t.app.paymentJobs.expire()).toEqual([])
  })

  it('a payment in processing holds the order', async () => {
    const order = await orderWithIntent()
    await deliver(t.app, intentEvent('payment_intent.processing', fake.setStatus(order.intentId, 'processing')))
    await age(order.id, 31)
    expect(await t.app.paymentJobs.expire()).not.toContain(order.id)
    expect(await orderStatus(t.app, order.id)).toBe('pending')
  })
})

describe('reconcile (lost webhooks)', () => {
  it('the job applies the intents of pending orders older than 10 minutes; the command, all of them', async () => {
    const old = await orderWithIntent()
    const young = await orderWithIntent()
    const failed = await orderWithIntent()
    fake.succeed(old.intentId)
    fake.succeed(young.intentId)
    fake.setStatus(failed.intentId, 'canceled')
    await age(old.id, 11)
    await age(failed.id, 11)
    const changes = await t.app.paymentJobs.reconcile()
    expect(changes).toEqual(
      expect.arrayContaining([
        { orderId: old.id, outcome: 'paid' },
        { orderId: failed.id, outcome: 'failed' },
      ]),
    )
    expect(await orderStatus(t.app, old.id)).toBe('paid')
    expect(await orderStatus(t.app, young.id)).toBe('pending')
    expect(await t.app.payments.reconcile({ pendingRefundAgeMs: 0 })).toEqual(expect.arrayContaining([{ orderId: young.id, outcome: 'paid' }]))
    expect(await orderStatus(t.app, young.id)).toBe('paid')
    expect((await paymentRow(t.app, failed.id))?.status).toBe('failed')
  })

  it('a Stripe that does not answer skips the order, and the next run completes it', async () => {
    const order = await orderWithIntent()
    fake.succeed(order.intentId)
    await age(order.id, 11)
    fake.fail('retrieve-intent', { status: 500, type: 'api_error', message: 'down' }, 50)
    const first = await t.app.paymentJobs.reconcile()
    expect(first.find((c) => c.orderId === order.id)).toBeUndefined()
    expect(await orderStatus(t.app, order.id)).toBe('pending')
    fake.heal()
    await t.app.paymentJobs.reconcile()
    expect(await orderStatus(t.app, order.id)).toBe('paid')
  })
})

describe('jobs run once across instances', () => {
  it('of 6 instances claiming the same run at once, exactly one wins; the next run is claimable after its time', async () => {
    const now = new Date()
    const next = new Date(now.getTime() + 60_000).toISOString()
    const name = `test-job-${process.pid}-${Date.now()}`
    const claims = await Promise.all(Array.from({ length: 6 }, () => claimJobRun(t.app.db, name, now.toISOString(), next)))
    expect(claims.filter(Boolean)).toHaveLength(1)
    expect(await claimJobRun(t.app.db, name, new Date(now.getTime() + 30_000).toISOString(), next)).toBe(false)
    expect(await claimJobRun(t.app.db, name, new Date(now.getTime() + 61_000).toISOString(), next)).toBe(true)
  })

  it('the expiry runs on its own timer (every TTL/2 under 2 minutes) and stops when the app closes', async () => {
    const own = await createTestApp(stripeEnv(fake, { ORDER_PAYMENT_TTL: '1s' }))
    try {
      const order = await placeOrder(own.app, 1, 3)
      await vi.waitUntil(async () => (await orderStatus(own.app, order.id)) === 'cancelled', { timeout: 8000, interval: 100 })
      expect(await stockOf(own.app, order.product.id)).toBe(3)
    } finally {
      await own.close()
    }
  })
})

describe('a failure between steps leaves nothing half-done', () => {
  it('the refund of a success after the cancel fails: the webhook answers 502 (Stripe retries) and records nothing; the retry completes it', async () => {
    const order = await orderWithIntent()
    expect((await cancel(order.id)).statusCode).toBe(200)
    fake.setStatus(order.intentId, 'processing')
    const event = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId))
    fake.fail('create-refund', { status: 500, type: 'api_error', message: 'down' }, 2)
    const failed = await deliver(t.app, event)
    expect(failed.statusCode).toBe(502)
    expect((await paymentRow(t.app, order.id))?.status).toBe('unpaid')
    expect(await t.app.db.selectFrom('payment_events').select('event_id').where('event_id', '=', event.id).execute()).toEqual([])
    const retried = await deliver(t.app, event)
    expect(retried.statusCode).toBe(200)
    expect((await paymentRow(t.app, order.id))?.status).toBe('refunded')
    expect(refundsOf(order.intentId)).toHaveLength(1)
  })

  it('the webhook of a success after the cancel was lost: the reconcile job refunds it', async () => {
    const order = await orderWithIntent()
    expect((await cancel(order.id)).statusCode).toBe(200)
    fake.setStatus(order.intentId, 'processing')
    fake.succeed(order.intentId)
    const changes = await t.app.paymentJobs.reconcile()
    expect(changes).toContainEqual({ orderId: order.id, outcome: 'refunded' })
    expect(refundsOf(order.intentId)).toHaveLength(1)
    expect(await orderStatus(t.app, order.id)).toBe('cancelled')
  })
})

describe('a payment request that stopped after Stripe created the intent', () => {
  it('the next request gets that same intent (same idempotency key), never a second one', async () => {
    const order = await placeOrder(t.app)
    // As if an earlier request had reached Stripe and then died before storing the intent.
    const orphan = t.app.payments.provider
    if (orphan.name !== 'stripe') throw new Error('stripe expected')
    const created = await orphan.createIntent({ orderId: order.id, amountCents: 3998, currency: 'EUR', idempotencyKey: await intentKeyOf(t.app, order.id) })
    const response = await pay(t.app, order)
    expect(response.statusCode).toBe(200)
    expect((response.json() as { clientSecret: string }).clientSecret).toBe(created.clientSecret)
    expect(await intentOf(t.app, order.id)).toBe(created.id)
    expect([...fake.intents.values()].filter((i) => i.metadata.orderId === String(order.id))).toHaveLength(1)
  })
})
