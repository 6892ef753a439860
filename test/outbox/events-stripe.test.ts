import { describe, expect, it } from 'vitest'
import { queuedEmails, recordEvents } from '../helpers/outbox.js'
import { deliver, intentEvent, intentOf, orderStatus, pay, placeOrder, useStripeShop } from '../payments/helpers.js'

// The paths that move an order outside the orders' routes emit the same events: Stripe's payment (order.paid, and
// the customer's "paid" e-mail, whichever provider) and the expiry of an unpaid order (order.cancelled).

const { fake, shop: t } = await useStripeShop({ ORDER_PAYMENT_TTL: '30m' }, { outbox: { enabled: false } })
const events = recordEvents(t)

describe('events of the payment paths', () => {
  it('a Stripe payment emits order.status_changed and order.paid once, and queues the customer’s "paid" e-mail', async () => {
    const order = await placeOrder(t.app)
    await pay(t.app, order)
    events.length = 0
    const event = intentEvent('payment_intent.succeeded', fake.succeed(await intentOf(t.app, order.id)))
    expect((await deliver(t.app, event)).statusCode).toBe(200)
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    expect(events.map((e) => e.type)).toEqual(['order.status_changed', 'order.paid'])
    expect(events[1]?.data).toMatchObject({ id: order.id, status: 'paid' })
    // The same event again (Stripe retries): nothing more.
    expect((await deliver(t.app, event)).statusCode).toBe(200)
    expect(events).toHaveLength(2)
    expect((await queuedEmails(t.app.db, order.buyer.email)).map((m) => m.template)).toEqual(['order-received', 'order-paid'])
  })

  it('the expiry of an unpaid order emits order.cancelled and queues the customer’s e-mail', async () => {
    const order = await placeOrder(t.app, 1, 10)
    const old = new Date(Date.now() - 31 * 60_000).toISOString()
    await t.app.db.updateTable('orders').set({ created_at: old }).where('id', '=', order.id).execute()
    events.length = 0
    expect(await t.app.paymentJobs.expire()).toEqual([order.id])
    expect(events.map((e) => e.type)).toEqual(['order.status_changed', 'order.cancelled'])
    expect(events[1]?.data).toMatchObject({ id: order.id, status: 'cancelled' })
    expect((await queuedEmails(t.app.db, order.buyer.email)).map((m) => m.template)).toEqual(['order-received', 'order-cancelled'])
  })
})
