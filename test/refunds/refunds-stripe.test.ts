import { createHash } from 'node:crypto'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { PaymentStep } from '../../src/modules/payments/payments.service.js'
import { bearer } from '../helpers/factories.js'
import { queuedEmails } from '../helpers/outbox.js'
import { stockOf } from '../helpers/shop.js'
import { deliver, intentEvent, intentOf, orderStatus, pay, type PlacedOrder, placeOrder, useStripeShop } from '../payments/helpers.js'
import { newKey } from './helpers.js'

// Refunds by line through Stripe (the fake, through the real SDK): the idempotency key Stripe gets, what each fault
// leaves behind, a crash between Stripe's answer and the commit, the webhooks of the shop's own refunds, and a
// cancel after partial refunds. On SQLite and PostgreSQL.
//
// What each fault leaves:
// - Stripe refusing (a 4xx answer: card_error, invalid_request_error): 502, nothing recorded; the same key again
//   asks Stripe under the next attempt's key.
// - Stripe slow (a dropped connection the SDK's retry gets through): the refund was pending meanwhile, and is made
//   once.
// - Stripe down or slow past the SDK's retry (5xx, a timeout; the SDK retries once under the same key): 502, the
//   refund stays pending (its units held, not shown in `refunds`, the payment's marker set); the same request
//   repeated, or the reconcile job once it is a minute old, asks Stripe again under the same key and settles it.

const { fake, shop: t } = await useStripeShop({ ORDER_PAYMENT_TTL: '30m', AUTH_RATE_LIMIT_MAX: '1000' })
afterAll(() => {
  fake.heal()
})
afterEach(() => {
  t.app.payments.afterStep = undefined
  fake.heal()
})

type PaidOrder = PlacedOrder & { intentId: string; lineId: number }

/** 2 units at 19.99 (39.98), paid by card. */
async function paidOrder(): Promise<PaidOrder> {
  const order = await placeOrder(t.app, 2, 10)
  expect((await pay(t.app, order)).statusCode).toBe(200)
  const intentId = await intentOf(t.app, order.id)
  expect((await deliver(t.app, intentEvent('payment_intent.succeeded', fake.succeed(intentId)))).statusCode).toBe(200)
  expect(await orderStatus(t.app, order.id)).toBe('paid')
  const line = await t.app.db.selectFrom('order_items').select('id').where('order_id', '=', order.id).executeTakeFirstOrThrow()
  return { ...order, intentId, lineId: line.id }
}

const refundsOf = (intentId: string) => fake.refunds.filter((r) => r.payment_intent === intentId)
const stripeKey = (orderId: number, key: string, n: number) => `refund-order-${orderId}-${createHash('sha256').update(key).digest('hex').slice(0, 16)}-${n}`

function refund(order: PaidOrder, payload: object, key = newKey()) {
  return t.app.inject({ method: 'POST', url: `/orders/${order.id}/refunds`, headers: { ...bearer(t.admin), 'idempotency-key': key }, payload })
}

async function readOrder(order: PaidOrder) {
  return (await t.app.inject({ url: `/orders/${order.id}`, headers: bearer(t.admin) })).json()
}

/** What the shop recorded of the order's refunds. */
async function state(order: PaidOrder) {
  const db = t.app.db
  return {
    refunds: await db.selectFrom('refunds').select(['amount_cents', 'pending_at', 'actor_type']).where('order_id', '=', order.id).orderBy('id').execute(),
    line: await db.selectFrom('order_items').select(['refunded_quantity', 'cancelled_quantity']).where('id', '=', order.lineId).executeTakeFirstOrThrow(),
    payment: await db
      .selectFrom('payments')
      .select(['status', 'refunded_cents', 'refund_pending_cents'])
      .where('order_id', '=', order.id)
      .executeTakeFirstOrThrow(),
    stock: await stockOf(t.app, order.product.id),
    mails: (await queuedEmails(t.app.db, order.buyer.email)).filter((m) => m.template === 'order-refunded').length,
    outbox: (await db.selectFrom('outbox').select('id').execute()).length,
  }
}

const oneUnit = (order: PaidOrder) => ({ items: [{ orderItemId: order.lineId, quantity: 1, restock: true }] })

describe('a refund through Stripe', () => {
  it('is a partial refund under refund-order-<id>-<16 hex of the key’s SHA-256>-1, settled at once', async () => {
    const order = await paidOrder()
    const key = newKey()
    const res = await refund(order, oneUnit(order), key)
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ amount: 19.99, provider: 'stripe', items: [{ orderItemId: order.lineId, quantity: 1, restock: true }] })
    expect(refundsOf(order.intentId)).toEqual([expect.objectContaining({ amount: 1999, idempotencyKey: stripeKey(order.id, key, 1) })])
    expect(await state(order)).toMatchObject({
      refunds: [{ amount_cents: 1999, pending_at: null, actor_type: 'user' }],
      line: { refunded_quantity: 1, cancelled_quantity: 1 },
      payment: { status: 'paid', refunded_cents: 1999, refund_pending_cents: null },
      stock: 9,
      mails: 1,
    })
    expect((await readOrder(order)).payment).toMatchObject({ provider: 'stripe', status: 'partially_refunded', refundedAmount: 19.99 })
    // Stripe's charge.refunded of this very refund adds nothing.
    const charge = intentEvent('charge.refunded', {
      id: `ch_${order.intentId}`,
      object: 'charge',
      payment_intent: order.intentId,
      currency: 'eur',
      amount: 3998,
      amount_refunded: 1999,
    })
    expect((await deliver(t.app, charge)).statusCode).toBe(200)
    expect((await state(order)).refunds).toHaveLength(1)
  })

  it('Stripe refusing: 502, nothing recorded; the same key again takes the next attempt’s Stripe key', async () => {
    const order = await paidOrder()
    const before = await state(order)
    const key = newKey()
    fake.fail('create-refund', { status: 402, type: 'card_error', message: 'refused' }, 1)
    const res = await refund(order, oneUnit(order), key)
    expect([res.statusCode, res.json()]).toEqual([502, { error: 'No se pudo reembolsar el pago' }])
    expect(await state(order)).toEqual(before)
    expect((await readOrder(order)).refunds).toEqual([])

    const retry = await refund(order, oneUnit(order), key)
    expect(retry.statusCode).toBe(201)
    expect(refundsOf(order.intentId).map((r) => r.idempotencyKey)).toEqual([stripeKey(order.id, key, 2)])
  })

  for (const how of ['the same request again', 'the reconcile job'] as const) {
    it(`Stripe down: 502, the refund stays pending (held, not shown); ${how} finishes it, exactly once`, async () => {
      const order = await paidOrder()
      const key = newKey()
      fake.fail('create-refund', { status: 500, type: 'api_error', message: 'down' }, 2)
      const res = await refund(order, oneUnit(order), key)
      expect([res.statusCode, res.json()]).toEqual([502, { error: 'No se pudo reembolsar el pago' }])
      expect(await state(order)).toMatchObject({
        refunds: [{ amount_cents: 1999, pending_at: expect.any(String) }],
        line: { refunded_quantity: 1, cancelled_quantity: 1 },
        payment: { status: 'paid', refunded_cents: 0, refund_pending_cents: 1999 },
        stock: 8,
        mails: 0,
      })
      expect((await readOrder(order)).refunds).toEqual([])
      // Meanwhile: another refund waits (its units are held), a cancel too.
      const other = await refund(order, { amount: 1 })
      expect([other.statusCode, other.json()]).toEqual([409, { error: 'La orden tiene un reembolso en curso' }])
      const cancel = await t.app.inject({ method: 'PATCH', url: `/orders/${order.id}/status`, headers: bearer(t.admin), payload: { status: 'cancelled' } })
      expect([cancel.statusCode, cancel.json()]).toEqual([409, { error: 'La orden tiene un reembolso en curso' }])
      // A young pending refund is left alone by the job (a request may still be waiting on Stripe).
      expect(await t.app.payments.reconcile()).toEqual([])

      if (how === 'the same request again') {
        const again = await refund(order, oneUnit(order), key)
        expect(again.statusCode).toBe(201)
        expect(again.json()).toMatchObject({ amount: 19.99 })
      } else {
        expect(await t.app.payments.reconcile({ pendingRefundAgeMs: 0 })).toEqual([{ orderId: order.id, outcome: 'refunded' }])
      }
      expect(await state(order)).toMatchObject({
        refunds: [{ amount_cents: 1999, pending_at: null }],
        payment: { status: 'paid', refunded_cents: 1999, refund_pending_cents: null },
        stock: 9,
        mails: 1,
      })
      expect(refundsOf(order.intentId)).toEqual([expect.objectContaining({ amount: 1999, idempotencyKey: stripeKey(order.id, key, 1) })])
      const replay = await refund(order, oneUnit(order), key)
      expect(replay.statusCode).toBe(200)
    })
  }

  it('Stripe refusing a refund of a shipped unit puts back exactly what it counted: the unshipped unit an earlier refund cancelled stays cancelled', async () => {
    const order = await paidOrder()
    expect((await refund(order, oneUnit(order))).statusCode).toBe(201)
    // The other unit ships.
    await t.app.db.updateTable('order_items').set({ fulfilled_quantity: 1 }).where('id', '=', order.lineId).execute()
    const before = await state(order)
    expect(before.line).toEqual({ refunded_quantity: 1, cancelled_quantity: 1 })
    fake.fail('create-refund', { status: 402, type: 'card_error', message: 'refused' }, 1)
    expect((await refund(order, { items: [{ orderItemId: order.lineId, quantity: 1 }] })).statusCode).toBe(502)
    expect(await state(order)).toEqual(before)
  })

  it('Stripe slow: the refund is pending while Stripe holds it, no transaction waits on it; the SDK’s retry under the same key refunds once', async () => {
    const order = await paidOrder()
    const calls = () => fake.calls.filter((c) => c.route === 'create-refund').length
    const before = calls()
    fake.fail('create-refund', 'hang', 1)
    const refunding = refund(order, oneUnit(order))
    await expect.poll(calls, { timeout: 5000, interval: 5 }).toBe(before + 1)
    // Committed and pending; the order reads at once (nothing holds its rows while Stripe is asked).
    const started = performance.now()
    const read = await readOrder(order)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(read.refunds).toEqual([])
    expect(await state(order)).toMatchObject({ refunds: [{ pending_at: expect.any(String) }], payment: { refund_pending_cents: 1999 } })
    // Stripe drops the hanging connection: the SDK retries under the same key, Stripe refunds, the refund settles.
    fake.heal()
    const res = await refunding
    expect(res.statusCode).toBe(201)
    expect(refundsOf(order.intentId)).toHaveLength(1)
    expect(await state(order)).toMatchObject({ refunds: [{ pending_at: null }], payment: { refunded_cents: 1999, refund_pending_cents: null }, mails: 1 })
  })

  it('the reconcile job drops a pending refund Stripe then refuses: nothing stays recorded', async () => {
    const order = await paidOrder()
    const before = await state(order)
    fake.fail('create-refund', { status: 500, type: 'api_error', message: 'down' }, 2)
    expect((await refund(order, oneUnit(order))).statusCode).toBe(502)
    fake.fail('create-refund', { status: 400, type: 'invalid_request_error', message: 'no' }, 1)
    expect(await t.app.payments.reconcile({ pendingRefundAgeMs: 0 })).toEqual([])
    expect(await state(order)).toEqual(before)
  })

  it('two concurrent refunds of the last unit: one succeeds, one Stripe refund', async () => {
    const order = await paidOrder()
    expect((await refund(order, oneUnit(order))).statusCode).toBe(201)
    const answers = await Promise.all([refund(order, oneUnit(order)), refund(order, oneUnit(order))])
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 409])
    expect(refundsOf(order.intentId)).toHaveLength(2)
    expect(await state(order)).toMatchObject({ line: { refunded_quantity: 2 }, payment: { status: 'refunded', refunded_cents: 3998 }, stock: 10 })
  })

  it('cancelling after a partial refund refunds the rest through Stripe; the order’s refunds show both', async () => {
    const order = await paidOrder()
    expect((await refund(order, { amount: 5 })).statusCode).toBe(201)
    const cancel = await t.app.inject({ method: 'PATCH', url: `/orders/${order.id}/status`, headers: bearer(t.admin), payload: { status: 'cancelled' } })
    expect(cancel.statusCode).toBe(200)
    expect(refundsOf(order.intentId).map((r) => [r.amount, r.idempotencyKey])).toEqual([
      [500, expect.stringMatching(new RegExp(`^refund-order-${order.id}-[0-9a-f]{16}-1$`))],
      [3498, `refund-order-${order.id}-1`],
    ])
    const read = await readOrder(order)
    expect(read).toMatchObject({ status: 'cancelled', payment: { status: 'refunded', refundedAmount: 39.98 } })
    expect(read.refunds.map((r: { amount: number }) => r.amount)).toEqual([5, 34.98])
  })

  it('a refund made in Stripe’s dashboard (charge.refunded) shows in refunds with actor system and no items', async () => {
    const order = await paidOrder()
    const charge = intentEvent('charge.refunded', {
      id: `ch_${order.intentId}`,
      object: 'charge',
      payment_intent: order.intentId,
      currency: 'eur',
      amount: 3998,
      amount_refunded: 1000,
    })
    expect((await deliver(t.app, charge)).statusCode).toBe(200)
    const read = await readOrder(order)
    expect(read.refunds).toEqual([
      {
        id: expect.any(Number),
        orderId: order.id,
        amount: 10,
        items: [],
        shippingAmount: 0,
        taxAmount: 0,
        reason: 'charge.refunded',
        provider: 'stripe',
        createdAt: expect.any(String),
        actor: { type: 'system', id: null, name: null },
      },
    ])
    // Announced like the shop's own: order.refunded (its webhook) and the customer's e-mail, once per event.
    expect((await deliver(t.app, charge)).statusCode).toBe(200)
    const webhookRows = await t.app.db.selectFrom('outbox').select('payload').where('channel', '=', 'email').execute()
    const refundMails = webhookRows
      .map((r) => JSON.parse(r.payload) as { template: string; to: string })
      .filter((m) => m.template === 'order-refunded' && m.to === order.buyer.email)
    expect(refundMails).toHaveLength(1)
    // What is left to refund counts it.
    const over = await refund(order, { amount: 29.99 })
    expect([over.statusCode, over.json()]).toEqual([409, { error: 'El importe supera lo reembolsable (29.98 EUR)' }])
  })
})

describe('a crash between the steps of a refund (kill -9: the process dies there)', () => {
  function crashAfter(target: PaymentStep): { reached: () => boolean } {
    let reached = false
    t.app.payments.afterStep = (step) => {
      if (step !== target || reached) return
      reached = true
      throw new Error(`injected crash after ${step}`)
    }
    return { reached: () => reached }
  }

  // refund-pending: written and committed, Stripe not called; refund-made: Stripe refunded, not yet settled;
  // payment-moved: the settling transaction's last write, rolled back.
  for (const step of ['refund-pending', 'refund-made', 'payment-moved'] as const) {
    for (const how of ['retry', 'reconcile'] as const) {
      it(`after ${step}: pending; the ${how} settles it, exactly one refund at Stripe and in the shop`, async () => {
        const order = await paidOrder()
        const key = newKey()
        const crash = crashAfter(step)
        expect((await refund(order, oneUnit(order), key)).statusCode).toBe(500)
        expect(crash.reached()).toBe(true)
        expect(refundsOf(order.intentId)).toHaveLength(step === 'refund-pending' ? 0 : 1)
        expect(await state(order)).toMatchObject({
          refunds: [{ pending_at: expect.any(String) }],
          payment: { refunded_cents: 0, refund_pending_cents: 1999 },
          mails: 0,
          stock: 8,
        })
        t.app.payments.afterStep = undefined
        if (how === 'retry') expect((await refund(order, oneUnit(order), key)).statusCode).toBe(201)
        else expect(await t.app.payments.reconcile({ pendingRefundAgeMs: 0 })).toEqual([{ orderId: order.id, outcome: 'refunded' }])
        expect(refundsOf(order.intentId)).toHaveLength(1)
        expect(await state(order)).toMatchObject({
          refunds: [{ amount_cents: 1999, pending_at: null }],
          payment: { status: 'paid', refunded_cents: 1999, refund_pending_cents: null },
          mails: 1,
          stock: 9,
        })
      })
    }
  }
})

describe('a return received through Stripe (the receipt refunds its units)', () => {
  /** A card-paid order shipped in full, its two units asked back by the buyer and approved. */
  async function approvedReturn() {
    const order = await paidOrder()
    const ship = await t.app.inject({
      method: 'POST',
      url: `/orders/${order.id}/fulfillments`,
      headers: bearer(t.admin),
      payload: { notifyCustomer: false },
    })
    expect(ship.statusCode).toBe(201)
    const asked = await t.app.inject({
      method: 'POST',
      url: `/orders/${order.id}/returns`,
      headers: bearer(order.buyer),
      payload: { items: [{ orderItemId: order.lineId, quantity: 2 }] },
    })
    expect(asked.statusCode).toBe(201)
    expect((await t.app.inject({ method: 'POST', url: `/returns/${asked.json().id}/approve`, headers: bearer(t.admin) })).statusCode).toBe(200)
    return { order, returnId: asked.json().id as number }
  }
  const receive = (returnId: number, key: string) =>
    t.app.inject({ method: 'POST', url: `/returns/${returnId}/receive`, headers: { ...bearer(t.admin), 'idempotency-key': key }, payload: {} })

  it('asks Stripe once the receipt has committed, under the refund key, and the return points to the settled refund', async () => {
    const { order, returnId } = await approvedReturn()
    const key = newKey()
    const stock = await stockOf(t.app, order.product.id)
    const res = await receive(returnId, key)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ status: 'received', refundId: expect.any(Number) })
    expect(refundsOf(order.intentId)).toEqual([expect.objectContaining({ amount: 3998, idempotencyKey: stripeKey(order.id, key, 1) })])
    const after = await state(order)
    expect(after.refunds).toEqual([{ amount_cents: 3998, pending_at: null, actor_type: 'user' }])
    expect(after.payment).toMatchObject({ status: 'refunded', refunded_cents: 3998, refund_pending_cents: null })
    // The receipt put the two units back; the refund, none again.
    expect(after.stock).toBe(stock + 2)
  })

  it('Stripe refusing: the refund’s 502, the receipt stays made (units back), the refund undone and the return without it', async () => {
    const { order, returnId } = await approvedReturn()
    const stock = await stockOf(t.app, order.product.id)
    fake.fail('create-refund', { status: 402, type: 'card_error', message: 'refused' }, 1)
    const res = await receive(returnId, newKey())
    expect([res.statusCode, res.json()]).toEqual([502, { error: 'No se pudo reembolsar el pago' }])
    const ret = (await t.app.inject({ url: `/returns/${returnId}`, headers: bearer(t.admin) })).json()
    expect(ret).toMatchObject({ status: 'received', refundId: null })
    const after = await state(order)
    expect(after.refunds).toEqual([])
    expect(after.payment).toMatchObject({ status: 'paid', refunded_cents: 0, refund_pending_cents: null })
    expect(after.stock).toBe(stock + 2)
  })
})
