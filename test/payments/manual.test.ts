import { describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { signedHeaders } from '../fakes/stripe-fake.js'
import { intentEvent, orderStatus, pay, paymentRow, placeOrder } from './helpers.js'

// The default shop: no STRIPE_SECRET_KEY. Orders are answered exactly as before payments existed.

const t = useTestApp()

const setStatus = (id: number, status: string) => t.app.inject({ method: 'PATCH', url: `/orders/${id}/status`, headers: bearer(t.admin), payload: { status } })

describe('manual payments (the default)', () => {
  it('orders carry payment {provider: manual}, and no expiry or Stripe job runs', async () => {
    const order = await placeOrder(t.app)
    const read = (await t.app.inject({ url: `/orders/${order.id}`, headers: bearer(order.buyer) })).json() as Record<string, unknown>
    expect(read.payment).toEqual({ provider: 'manual', status: 'unpaid', amount: 39.98, currency: 'EUR', refundedAmount: 0 })
    expect(t.config.payments).toEqual({ provider: 'manual', currency: 'EUR', orderPaymentTtlMs: 0, stripe: null })
    expect(await t.app.paymentJobs.expire()).toEqual([])
    expect(await t.app.paymentJobs.reconcile()).toEqual([])
  })

  it('POST /orders/:id/payment answers the payment without clientSecret or publishableKey', async () => {
    const order = await placeOrder(t.app)
    const response = await pay(t.app, order)
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ provider: 'manual', status: 'unpaid', amount: 39.98, currency: 'EUR', refundedAmount: 0 })
    expect(await paymentRow(t.app, order.id)).toBeUndefined()
  })

  it('an admin’s move to paid sets paid; cancelling the paid order sets refunded (the shop refunds by its own means)', async () => {
    const order = await placeOrder(t.app)
    expect((await setStatus(order.id, 'paid')).statusCode).toBe(200)
    expect(await paymentRow(t.app, order.id)).toMatchObject({ provider: 'manual', status: 'paid', amount_cents: 3998, currency: 'EUR' })
    expect((await pay(t.app, order)).json()).toEqual({ error: 'La orden no está pendiente de pago' })
    const cancelled = await setStatus(order.id, 'cancelled')
    expect(cancelled.statusCode).toBe(200)
    expect(cancelled.json().payment).toEqual({ provider: 'manual', status: 'refunded', amount: 39.98, currency: 'EUR', refundedAmount: 39.98 })
    expect(await paymentRow(t.app, order.id)).toMatchObject({ status: 'refunded', refunded_cents: 3998 })
    const refunds = await t.app.db.selectFrom('refunds').selectAll().where('order_id', '=', order.id).execute()
    expect(refunds).toEqual([expect.objectContaining({ amount_cents: 3998, provider: 'manual', actor_type: 'user' })])
  })

  it('the Stripe webhook does not exist without Stripe', async () => {
    const payload = JSON.stringify(intentEvent('payment_intent.succeeded', { id: 'pi_1' }))
    const response = await t.app.inject({ method: 'POST', url: '/payments/stripe/webhook', headers: signedHeaders(payload), payload })
    expect(response.statusCode).toBe(404)
    expect(response.json()).toEqual({ error: 'Ruta no encontrada' })
  })

  it('someone else’s order is 404 Orden no encontrada', async () => {
    const order = await placeOrder(t.app)
    const other = await makeUser(t.app)
    const response = await t.app.inject({ method: 'POST', url: `/orders/${order.id}/payment`, headers: bearer(other) })
    expect(response.statusCode).toBe(404)
    expect(response.json()).toEqual({ error: 'Orden no encontrada' })
    expect(await orderStatus(t.app, order.id)).toBe('pending')
  })
})
