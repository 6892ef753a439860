import { afterEach, describe, expect, it } from 'vitest'
import type { PaymentStep } from '../../src/modules/payments/payments.service.js'
import { bearer } from '../helpers/factories.js'
import { stockOf } from '../helpers/shop.js'
import { deliver, intentEvent, intentOf, orderStatus, pay, paymentRow, type PlacedOrder, placeOrder, useStripeShop } from './helpers.js'

// A crash between the steps of the payment paths (the test-only seam `payments.afterStep` throws after the step
// named): nothing half-done is kept (order, payment, stock, event row), and the next webhook delivery of the
// same event, the reconcile job, or the admin's retry completes the order. On SQLite and PostgreSQL.

const { fake, shop: t } = await useStripeShop()

afterEach(() => {
  t.app.payments.afterStep = undefined
})

const STOCK = 10
const QUANTITY = 2

/** The next time `step` is reached, the process "dies" there: it throws, once. */
function crashAfter(target: PaymentStep): { reached: () => boolean } {
  let reached = false
  t.app.payments.afterStep = (step) => {
    if (step !== target || reached) return
    reached = true
    throw new Error(`injected crash after ${step}`)
  }
  return { reached: () => reached }
}

async function orderWithIntent(): Promise<PlacedOrder & { intentId: string }> {
  const order = await placeOrder(t.app, QUANTITY, STOCK)
  expect((await pay(t.app, order)).statusCode).toBe(200)
  return { ...order, intentId: await intentOf(t.app, order.id) }
}

async function eventRows(eventId: string): Promise<number> {
  return (await t.app.db.selectFrom('payment_events').select('event_id').where('event_id', '=', eventId).execute()).length
}

const refundsOf = (intentId: string) => fake.refunds.filter((r) => r.payment_intent === intentId)
const setStatus = (id: number, status: string) => t.app.inject({ method: 'PATCH', url: `/orders/${id}/status`, headers: bearer(t.admin), payload: { status } })

/** Where the order, its payment, its product's stock and the event's row stand. */
async function state(order: PlacedOrder, eventId?: string) {
  return {
    order: await orderStatus(t.app, order.id),
    payment: (await paymentRow(t.app, order.id))?.status,
    stock: await stockOf(t.app, order.product.id),
    events: eventId === undefined ? 0 : await eventRows(eventId),
  }
}

const completions = ['redelivery', 'reconcile'] as const

async function complete(how: (typeof completions)[number], event: unknown) {
  if (how === 'redelivery') {
    const answer = await deliver(t.app, event)
    expect(answer.statusCode).toBe(200)
    expect(answer.json()).toEqual({ received: true })
  } else {
    await t.app.payments.reconcile({ pendingRefundAgeMs: 0 })
  }
}

describe('a success on a pending order, crashed before the commit', () => {
  const steps: PaymentStep[] = ['event-recorded', 'order-paid', 'payment-moved']
  for (const step of steps) {
    for (const how of completions) {
      it(`after ${step}: nothing kept; the ${how} pays the order`, async () => {
        const order = await orderWithIntent()
        const event = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId))
        const crash = crashAfter(step)
        expect((await deliver(t.app, event)).statusCode).toBe(500)
        expect(crash.reached()).toBe(true)
        expect(await state(order, event.id)).toEqual({ order: 'pending', payment: 'unpaid', stock: STOCK - QUANTITY, events: 0 })

        await complete(how, event)
        expect(await state(order, event.id)).toEqual({
          order: 'paid',
          payment: 'paid',
          stock: STOCK - QUANTITY,
          events: how === 'redelivery' ? 1 : 0,
        })
        expect(refundsOf(order.intentId)).toHaveLength(0)
      })
    }
  }

  it('after the commit (the answer lost): the order is paid; the redelivery is a duplicate that changes nothing', async () => {
    const order = await orderWithIntent()
    const event = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId))
    crashAfter('committed')
    expect((await deliver(t.app, event)).statusCode).toBe(500)
    expect(await state(order, event.id)).toEqual({ order: 'paid', payment: 'paid', stock: STOCK - QUANTITY, events: 1 })
    expect((await deliver(t.app, event)).statusCode).toBe(200)
    expect(await state(order, event.id)).toEqual({ order: 'paid', payment: 'paid', stock: STOCK - QUANTITY, events: 1 })
  })
})

describe('a success after the order was cancelled (refund), crashed before the commit', () => {
  // The refund is recorded and committed (refund-pending), Stripe is called (refund-made), then the event and the
  // refunded payment are written in a second transaction (event-recorded, payment-moved).
  const steps: PaymentStep[] = ['refund-pending', 'refund-made', 'event-recorded', 'payment-moved']
  for (const step of steps) {
    for (const how of completions) {
      it(`after ${step}: nothing kept; the ${how} refunds it, exactly once`, async () => {
        const order = await orderWithIntent()
        expect((await setStatus(order.id, 'cancelled')).statusCode).toBe(200)
        const event = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId))
        const crash = crashAfter(step)
        expect((await deliver(t.app, event)).statusCode).toBe(500)
        expect(crash.reached()).toBe(true)
        expect(await state(order, event.id)).toEqual({ order: 'cancelled', payment: 'unpaid', stock: STOCK, events: 0 })
        // A crash after Stripe refunded: the money is back at Stripe, the shop's row is not (yet) refunded.
        expect(refundsOf(order.intentId)).toHaveLength(step === 'refund-pending' ? 0 : 1)

        await complete(how, event)
        expect(await state(order, event.id)).toEqual({
          order: 'cancelled',
          payment: 'refunded',
          stock: STOCK,
          events: how === 'redelivery' ? 1 : 0,
        })
        // The retry used the same idempotency key: Stripe replayed the refund, it did not make a second one.
        expect(refundsOf(order.intentId)).toHaveLength(1)
      })
    }
  }
})

describe('an admin cancelling a paid order (refund), crashed before the commit', () => {
  // The refund is recorded and committed first (refund-pending), Stripe refunds (refund-made), and the cancel's
  // transaction settles it (payment-moved). A crash anywhere leaves the order paid with its stock held and the
  // refund pending; the admin's retry, or the reconcile job once the refund is a minute old, finishes the cancel
  // with the same idempotency key: exactly one refund at Stripe.
  const steps: PaymentStep[] = ['refund-pending', 'refund-made', 'payment-moved']
  for (const step of steps) {
    for (const how of ['retry', 'reconcile'] as const) {
      it(`after ${step}: still paid with its stock held; the ${how} cancels and refunds it, exactly once`, async () => {
        const order = await orderWithIntent()
        const event = intentEvent('payment_intent.succeeded', fake.succeed(order.intentId))
        expect((await deliver(t.app, event)).statusCode).toBe(200)
        const crash = crashAfter(step)
        expect((await setStatus(order.id, 'cancelled')).statusCode).toBe(500)
        expect(crash.reached()).toBe(true)
        expect(await state(order)).toEqual({ order: 'paid', payment: 'paid', stock: STOCK - QUANTITY, events: 0 })
        expect(refundsOf(order.intentId)).toHaveLength(step === 'refund-pending' ? 0 : 1)
        expect((await paymentRow(t.app, order.id))?.refund_pending_at).not.toBeNull()

        // A redelivery changes nothing, and the job leaves a refund younger than a minute alone (a request may
        // still be waiting on Stripe).
        expect((await deliver(t.app, event)).statusCode).toBe(200)
        expect(await t.app.payments.reconcile()).toEqual([])
        expect(await state(order)).toEqual({ order: 'paid', payment: 'paid', stock: STOCK - QUANTITY, events: 0 })

        if (how === 'retry') {
          const retry = await setStatus(order.id, 'cancelled')
          expect(retry.statusCode).toBe(200)
          expect(retry.json()).toMatchObject({ id: order.id, status: 'cancelled', payment: { status: 'refunded', refundedAmount: 39.98 } })
        } else {
          expect(await t.app.payments.reconcile({ pendingRefundAgeMs: 0 })).toEqual([{ orderId: order.id, outcome: 'cancelled' }])
        }
        expect(await state(order)).toEqual({ order: 'cancelled', payment: 'refunded', stock: STOCK, events: 0 })
        expect((await paymentRow(t.app, order.id))?.refund_pending_at).toBeNull()
        expect(refundsOf(order.intentId)).toHaveLength(1)
      })
    }
  }
})
