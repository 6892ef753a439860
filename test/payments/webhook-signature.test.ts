import { describe, expect, it } from 'vitest'
import { signedHeaders } from '../fakes/stripe-fake.js'
import { intentEvent, intentOf, orderStatus, pay, paymentRow, placeOrder, useStripeShop } from './helpers.js'

// The webhook's signature must be dated within 5 minutes of the service's clock, either way. The SDK refuses
// an old one only; one dated in the future is refused by the route, with the same 400, before anything is done.
const { fake, shop: t } = await useStripeShop()

const url = '/payments/stripe/webhook'
const now = () => Math.floor(Date.now() / 1000)

/** A paid order's `payment_intent.succeeded`, as Stripe would post it, not yet delivered. */
async function successOfNewOrder() {
  const order = await placeOrder(t.app)
  await pay(t.app, order)
  const event = intentEvent('payment_intent.succeeded', fake.succeed(await intentOf(t.app, order.id)))
  return { order, event, payload: JSON.stringify(event) }
}

async function eventRecorded(eventId: string): Promise<boolean> {
  const row = await t.app.db.selectFrom('payment_events').select('event_id').where('event_id', '=', eventId).executeTakeFirst()
  return row !== undefined
}

describe('the webhook signature’s timestamp', () => {
  it('400 s in the future: 400 Firma de webhook inválida, and nothing is applied or recorded', async () => {
    const { order, event, payload } = await successOfNewOrder()
    const response = await t.app.inject({ method: 'POST', url, headers: signedHeaders(payload, { timestamp: now() + 400 }), payload })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toEqual({ error: 'Firma de webhook inválida' })
    expect(await orderStatus(t.app, order.id)).toBe('pending')
    expect((await paymentRow(t.app, order.id))?.status).toBe('unpaid')
    expect(await eventRecorded(event.id)).toBe(false)
    // The same event, signed now, is then applied: the refused delivery left nothing behind.
    const retried = await t.app.inject({ method: 'POST', url, headers: signedHeaders(payload), payload })
    expect(retried.statusCode).toBe(200)
    expect(await orderStatus(t.app, order.id)).toBe('paid')
  })

  it('just past the 5 minutes ahead (330 s): 400, like one 330 s old', async () => {
    const { order, payload } = await successOfNewOrder()
    for (const timestamp of [now() + 330, now() - 330]) {
      const response = await t.app.inject({ method: 'POST', url, headers: signedHeaders(payload, { timestamp }), payload })
      expect(response.statusCode).toBe(400)
      expect(response.json()).toEqual({ error: 'Firma de webhook inválida' })
    }
    expect(await orderStatus(t.app, order.id)).toBe('pending')
  })

  it.each([60, 270, -60])('%i s from now (a clock a little off): accepted and applied', async (offset) => {
    const { order, event, payload } = await successOfNewOrder()
    const response = await t.app.inject({ method: 'POST', url, headers: signedHeaders(payload, { timestamp: now() + offset }), payload })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ received: true })
    expect(await orderStatus(t.app, order.id)).toBe('paid')
    expect(await eventRecorded(event.id)).toBe(true)
  })

  it('a future timestamp with a bad signature is the same 400', async () => {
    const { payload } = await successOfNewOrder()
    const response = await t.app.inject({
      method: 'POST',
      url,
      headers: signedHeaders(payload, { timestamp: now() + 400, secret: 'whsec_wrong' }),
      payload,
    })
    expect(response.statusCode).toBe(400)
    expect(response.json()).toEqual({ error: 'Firma de webhook inválida' })
  })
})
