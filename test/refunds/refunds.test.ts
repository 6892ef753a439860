import { describe, expect, it } from 'vitest'
import { renderEmail } from '../../src/modules/outbox/mail/templates.js'
import { emailView } from '../../src/modules/outbox/mail/views.js'
import { messages } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { queuedEmails, recordEvents } from '../helpers/outbox.js'
import { stockOf } from '../helpers/shop.js'
import { type ExampleOrder, exampleSetup, getOrder, newKey, placeExample, preview, refund } from './helpers.js'

// Refunds by line with the manual provider (recorded; the shop pays back its own way): every rule and message in
// the documented order of checks, the state after each answer (a refused request changes nothing), the key's
// replay, the amounts of the worked example, and the order JSON. On SQLite and PostgreSQL.

const t = useTestApp()
const events = recordEvents(t)

let setup: { methodId: number; code: string }
async function paidExample(options: { paid?: boolean } = {}): Promise<ExampleOrder> {
  setup ??= await exampleSetup(t.app, t.admin)
  return placeExample(t.app, t.admin, setup, options)
}

/** Everything a refund could change for the order: its refund rows, counters, stock, payment, outbox and timeline. */
async function state(ex: ExampleOrder) {
  const db = t.app.db
  return {
    refunds: await db.selectFrom('refunds').select(['amount_cents', 'pending_at']).where('order_id', '=', ex.order.id).orderBy('id').execute(),
    items: await db
      .selectFrom('refund_items as ri')
      .innerJoin('refunds as r', 'r.id', 'ri.refund_id')
      .select(['ri.order_item_id', 'ri.quantity'])
      .where('r.order_id', '=', ex.order.id)
      .execute(),
    lines: await db
      .selectFrom('order_items')
      .select(['id', 'refunded_quantity', 'cancelled_quantity'])
      .where('order_id', '=', ex.order.id)
      .orderBy('id')
      .execute(),
    stock: [await stockOf(t.app, ex.mug.id), await stockOf(t.app, ex.tea.id)],
    payment: await db.selectFrom('payments').select(['status', 'refunded_cents', 'refund_pending_at']).where('order_id', '=', ex.order.id).executeTakeFirst(),
    outbox: (await db.selectFrom('outbox').select('id').execute()).length,
    timeline: (await db.selectFrom('order_events').select('id').where('order_id', '=', ex.order.id).execute()).length,
    status: (await db.selectFrom('orders').select('status').where('id', '=', ex.order.id).executeTakeFirstOrThrow()).status,
  }
}

describe('the order of checks, every message; a refused request changes nothing', () => {
  it('401 without a token, 403 for a customer', async () => {
    const ex = await paidExample()
    const before = await state(ex)
    const anonymous = await t.app.inject({ method: 'POST', url: `/orders/${ex.order.id}/refunds`, payload: {} })
    expect(anonymous.statusCode).toBe(401)
    expect(anonymous.json()).toEqual({ error: messages.noUser })
    const customer = await t.app.inject({ method: 'POST', url: `/orders/${ex.order.id}/refunds`, headers: bearer(ex.buyer), payload: {} })
    expect(customer.statusCode).toBe(403)
    const previewed = await t.app.inject({ method: 'POST', url: `/orders/${ex.order.id}/refunds/preview`, headers: bearer(ex.buyer), payload: {} })
    expect(previewed.statusCode).toBe(403)
    expect(await state(ex)).toEqual(before)
  })

  it('422: the Idempotency-Key first (before the body and the order), then the body', async () => {
    const ex = await paidExample()
    const before = await state(ex)
    const cases: Array<[object, string | null, string, number?]> = [
      [{ nothing: true }, null, 'idempotency-key should not be empty', 999_999],
      [{}, '', 'idempotency-key should not be empty'],
      [{}, newKey(), 'Indica artículos, envío o un importe', 999_999],
      [{ items: [] }, newKey(), 'Indica artículos, envío o un importe'],
      [{ shippingAmount: 0 }, newKey(), 'Indica artículos, envío o un importe'],
      [{ items: [{ orderItemId: ex.mugLine, quantity: 0 }] }, newKey(), 'quantity must not be less than 1'],
      [{ items: [{ orderItemId: ex.mugLine }] }, newKey(), 'quantity should not be empty'],
      [{ amount: 1.234 }, newKey(), 'amount must be a number conforming to the specified constraints'],
      [{ amount: 0 }, newKey(), 'amount must not be less than 0.01'],
      [{ amount: 1, reason: 'x'.repeat(501) }, newKey(), 'reason must be shorter than or equal to 500 characters'],
    ]
    for (const [payload, key, message, orderId] of cases) {
      const res = await refund(t.app, t.admin, orderId ?? ex.order.id, payload, key)
      expect([res.statusCode, res.json()], JSON.stringify(payload)).toEqual([422, { error: message }])
    }
    expect((await preview(t.app, t.admin, ex.order.id, {})).json()).toEqual({ error: messages.refundNothingGiven })
    expect(await state(ex)).toEqual(before)
  })

  it('404 unknown order; 409 an order without a payment to refund (pending, or all refunded)', async () => {
    const unknown = await refund(t.app, t.admin, 999_999, { amount: 1 })
    expect([unknown.statusCode, unknown.json()]).toEqual([404, { error: 'Orden no encontrada' }])
    const pending = await paidExample({ paid: false })
    const before = await state(pending)
    for (const send of [() => refund(t.app, t.admin, pending.order.id, { amount: 1 }), () => preview(t.app, t.admin, pending.order.id, { amount: 1 })]) {
      const res = await send()
      expect([res.statusCode, res.json()]).toEqual([409, { error: 'La orden no tiene pagos que reembolsar' }])
    }
    expect(await state(pending)).toEqual(before)
  })

  it('422 another order’s item (before any 409 of units); 409 more units than refundable; 409 shipping; 409 amount', async () => {
    const ex = await paidExample()
    const other = await paidExample()
    const before = await state(ex)
    const send = async (payload: object) => {
      const res = await refund(t.app, t.admin, ex.order.id, payload)
      const previewed = await preview(t.app, t.admin, ex.order.id, payload)
      expect(previewed.json()).toEqual(res.json())
      return [res.statusCode, res.json()]
    }
    expect(
      await send({
        items: [
          { orderItemId: ex.mugLine, quantity: 5 },
          { orderItemId: other.mugLine, quantity: 1 },
        ],
      }),
    ).toEqual([422, { error: `El artículo ${other.mugLine} no pertenece a la orden` }])
    expect(await send({ items: [{ orderItemId: ex.mugLine, quantity: 3 }], amount: 100 })).toEqual([
      409,
      { error: `Cantidad superior a la reembolsable para el artículo ${ex.mugLine}` },
    ])
    // The same line twice adds up.
    expect(
      await send({
        items: [
          { orderItemId: ex.teaLine, quantity: 1 },
          { orderItemId: ex.teaLine, quantity: 1 },
        ],
      }),
    ).toEqual([409, { error: `Cantidad superior a la reembolsable para el artículo ${ex.teaLine}` }])
    expect(await send({ shippingAmount: 4.91, amount: 100 })).toEqual([409, { error: 'El envío a reembolsar supera lo pagado por el envío (4.90 EUR)' }])
    expect(await send({ amount: 45.39 })).toEqual([409, { error: 'El importe supera lo reembolsable (45.38 EUR)' }])
    expect(await state(ex)).toEqual(before)
  })
})

describe('a refund by line', () => {
  it('the worked example: preview, then one mug with restock; amounts, counters, stock, payment, timeline, event and e-mail', async () => {
    const ex = await paidExample()
    const before = await state(ex)
    const body = { items: [{ orderItemId: ex.mugLine, quantity: 1, restock: true }], reason: 'Llegó rota' }
    const p = await preview(t.app, t.admin, ex.order.id, body)
    expect(p.statusCode).toBe(200)
    expect(p.json()).toEqual({
      amount: 17.99,
      items: [{ orderItemId: ex.mugLine, quantity: 1, amount: 17.99, tax: 3.12 }],
      shippingAmount: 0,
      taxAmount: 3.12,
      refundable: 45.38,
    })
    // The preview wrote nothing.
    expect(await state(ex)).toEqual(before)
    events.length = 0

    const res = await refund(t.app, t.admin, ex.order.id, body)
    expect(res.statusCode).toBe(201)
    const made = res.json()
    expect(made).toEqual({
      id: expect.any(Number),
      orderId: ex.order.id,
      amount: 17.99,
      items: [{ orderItemId: ex.mugLine, quantity: 1, amount: 17.99, tax: 3.12, restock: true }],
      shippingAmount: 0,
      taxAmount: 3.12,
      reason: 'Llegó rota',
      provider: 'manual',
      createdAt: expect.any(String),
      actor: { type: 'user', id: t.admin.id, name: expect.any(String) },
    })
    const after = await state(ex)
    expect(after.stock).toEqual([9, 9])
    expect(after.lines).toEqual([
      { id: ex.mugLine, refunded_quantity: 1, cancelled_quantity: 1 },
      { id: ex.teaLine, refunded_quantity: 0, cancelled_quantity: 0 },
    ])
    expect(after.payment).toEqual({ status: 'paid', refunded_cents: 1799, refund_pending_at: null })
    expect(after.status).toBe('paid')
    expect(after.timeline).toBe(before.timeline + 1)
    const entry = await t.app.db.selectFrom('order_events').selectAll().where('order_id', '=', ex.order.id).orderBy('id', 'desc').executeTakeFirstOrThrow()
    expect(entry).toMatchObject({ type: 'order.refunded', actor_type: 'user', actor_id: t.admin.id })

    expect(events.map((e) => e.type)).toEqual(['order.refunded'])
    const data = events[0]?.data as { order: { id: number; payment: object; refunds: unknown[] }; refund: unknown }
    expect(data.refund).toEqual(made)
    expect(data.order).toMatchObject({ id: ex.order.id, payment: { status: 'partially_refunded', refundedAmount: 17.99 }, refunds: [made] })

    const mails = (await queuedEmails(t.app.db, ex.buyer.email)).filter((m) => m.template === 'order-refunded')
    expect(mails).toHaveLength(1)
    const rendered = renderEmail('order-refunded', emailView(mails[0]!, { currency: 'EUR', publicUrl: 'http://shop.test' }))
    expect(rendered.subject).toBe(`Reembolso de 17,99 € en tu pedido #${ex.order.id}`)
    expect(rendered.text).toContain('Motivo: Llegó rota')

    const order = await getOrder(t.app, t.admin, ex.order.id)
    expect(order.payment).toEqual({ provider: 'manual', status: 'partially_refunded', amount: 45.38, currency: 'EUR', refundedAmount: 17.99 })
    expect(order.refunds).toEqual([made])
    expect(order.items.map((item) => item.refundedQuantity)).toEqual([1, 0])
    // The customer sees the refunds too.
    const own = await t.app.inject({ method: 'GET', url: `/orders/${ex.order.id}`, headers: bearer(ex.buyer) })
    expect(own.json().refunds).toEqual([made])
  })

  it('refunding every unit and all shipping, in pieces, returns exactly what was paid; the payment becomes refunded, the order stays as it was', async () => {
    const ex = await paidExample()
    const steps = [
      { items: [{ orderItemId: ex.mugLine, quantity: 1 }], shippingAmount: 1 },
      { items: [{ orderItemId: ex.teaLine, quantity: 1 }] },
      { items: [{ orderItemId: ex.mugLine, quantity: 1 }], shippingAmount: 3.9 },
    ]
    const amounts: number[] = []
    for (const body of steps) {
      const res = await refund(t.app, t.admin, ex.order.id, body)
      expect(res.statusCode).toBe(201)
      amounts.push(Math.round(res.json().amount * 100))
    }
    expect(amounts).toEqual([1799 + 100, 450, 1799 + 390])
    expect(amounts.reduce((a, b) => a + b, 0)).toBe(4538)
    const order = await getOrder(t.app, t.admin, ex.order.id)
    expect(order).toMatchObject({ status: 'paid', payment: { status: 'refunded', refundedAmount: 45.38 } })
    expect(order.refunds.map((r) => r.taxAmount)).toEqual([3.12 + 0.17, 0.41, 3.12 + 0.68].map((n) => Math.round(n * 100) / 100))
    const again = await refund(t.app, t.admin, ex.order.id, { amount: 0.01 })
    expect([again.statusCode, again.json()]).toEqual([409, { error: 'La orden no tiene pagos que reembolsar' }])
    const listed = await t.app.inject({ method: 'GET', url: '/orders?paymentStatus=refunded&limit=1000', headers: bearer(t.admin) })
    expect(listed.json().map((o: { id: number }) => o.id)).toContain(ex.order.id)
  })

  it('without an amount the parts are capped at what is refundable; with one it is exactly that amount, items still recorded', async () => {
    const ex = await paidExample()
    const exact = await refund(t.app, t.admin, ex.order.id, { items: [{ orderItemId: ex.teaLine, quantity: 1 }], amount: 40 })
    expect(exact.statusCode).toBe(201)
    expect(exact.json()).toMatchObject({ amount: 40, items: [{ orderItemId: ex.teaLine, quantity: 1, amount: 4.5, tax: 0.41 }] })
    const capped = await refund(t.app, t.admin, ex.order.id, { items: [{ orderItemId: ex.mugLine, quantity: 2 }] })
    expect(capped.json()).toMatchObject({ amount: 5.38, items: [{ orderItemId: ex.mugLine, quantity: 2, amount: 35.98 }] })
    expect((await getOrder(t.app, t.admin, ex.order.id)).payment).toMatchObject({ status: 'refunded', refundedAmount: 45.38 })
  })

  it('refunded units come first from the unshipped ones (counted as cancelled); restock false keeps the stock', async () => {
    const ex = await paidExample()
    // One mug shipped (the fulfillments' counter).
    await t.app.db.updateTable('order_items').set({ fulfilled_quantity: 1 }).where('id', '=', ex.mugLine).execute()
    const res = await refund(t.app, t.admin, ex.order.id, { items: [{ orderItemId: ex.mugLine, quantity: 2 }] })
    expect(res.statusCode).toBe(201)
    const after = await state(ex)
    expect(after.lines[0]).toEqual({ id: ex.mugLine, refunded_quantity: 2, cancelled_quantity: 1 })
    expect(after.stock).toEqual([8, 9])
  })
})

describe('Idempotency-Key', () => {
  it('repeated on the order within 24 h: 200 with the first refund, nothing done again; on another order, or after 24 h, a new refund', async () => {
    const ex = await paidExample()
    const key = newKey()
    const body = { items: [{ orderItemId: ex.mugLine, quantity: 1, restock: true }] }
    const first = await refund(t.app, t.admin, ex.order.id, body, key)
    expect(first.statusCode).toBe(201)
    const after = await state(ex)
    // Even with another body: the key names the refund it made.
    const repeat = await refund(t.app, t.admin, ex.order.id, { amount: 1 }, key)
    expect(repeat.statusCode).toBe(200)
    expect(repeat.json()).toEqual(first.json())
    expect(await state(ex)).toEqual(after)

    const other = await paidExample()
    const elsewhere = await refund(t.app, t.admin, other.order.id, { amount: 1 }, key)
    expect(elsewhere.statusCode).toBe(201)

    await t.app.db
      .updateTable('refund_keys')
      .set({ created_at: new Date(Date.now() - 24 * 3600_000 - 1000).toISOString() })
      .where('order_id', '=', ex.order.id)
      .execute()
    const later = await refund(t.app, t.admin, ex.order.id, { amount: 1 }, key)
    expect(later.statusCode).toBe(201)
    expect(later.json().id).not.toBe(first.json().id)
  })

  it('a refused request keeps no key: the same key works once the request is right', async () => {
    const ex = await paidExample()
    const key = newKey()
    expect((await refund(t.app, t.admin, ex.order.id, { amount: 99 }, key)).statusCode).toBe(409)
    expect((await refund(t.app, t.admin, ex.order.id, { amount: 9 }, key)).statusCode).toBe(201)
  })
})

describe('concurrency', () => {
  it('two concurrent refunds of the last unit: one succeeds, the other is 409; the unit is refunded once', async () => {
    const ex = await paidExample()
    const body = { items: [{ orderItemId: ex.teaLine, quantity: 1, restock: true }] }
    const answers = await Promise.all([refund(t.app, t.admin, ex.order.id, body), refund(t.app, t.admin, ex.order.id, body)])
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 409])
    expect(answers.find((a) => a.statusCode === 409)?.json()).toEqual({ error: `Cantidad superior a la reembolsable para el artículo ${ex.teaLine}` })
    const after = await state(ex)
    expect(after.refunds).toHaveLength(1)
    expect(after.lines[1]).toEqual({ id: ex.teaLine, refunded_quantity: 1, cancelled_quantity: 1 })
    expect(after.stock[1]).toBe(10)
    expect(after.payment?.refunded_cents).toBe(450)
  })
})

describe('cancelling a paid order after partial refunds', () => {
  it('refunds the rest; units already refunded before shipping are not put back twice', async () => {
    const ex = await paidExample()
    expect((await refund(t.app, t.admin, ex.order.id, { items: [{ orderItemId: ex.mugLine, quantity: 1, restock: true }] })).statusCode).toBe(201)
    expect((await refund(t.app, t.admin, ex.order.id, { items: [{ orderItemId: ex.teaLine, quantity: 1 }] })).statusCode).toBe(201)
    const cancel = await t.app.inject({ method: 'PATCH', url: `/orders/${ex.order.id}/status`, headers: bearer(t.admin), payload: { status: 'cancelled' } })
    expect(cancel.statusCode).toBe(200)
    const order = await getOrder(t.app, t.admin, ex.order.id)
    expect(order).toMatchObject({ status: 'cancelled', payment: { status: 'refunded', refundedAmount: 45.38 } })
    expect(order.refunds.map((r) => r.amount)).toEqual([17.99, 4.5, 22.89])
    // The mug: 1 restocked by its refund + 1 by the cancel; the tea, refunded without restock, stays out.
    expect([await stockOf(t.app, ex.mug.id), await stockOf(t.app, ex.tea.id)]).toEqual([10, 9])
  })
})

describe('webhooks', () => {
  it('order.refunded is a webhook event: the list of the 422 names it', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: bearer(t.admin),
      payload: { url: 'https://hooks.example.com/x', events: ['nope'] },
    })
    expect(res.statusCode).toBe(422)
    expect(res.json().error).toContain('order.delivered, order.refunded, product.created')
  })
})

describe('order lists', () => {
  it('carry each order’s refunds (batch-loaded) and filter by paymentStatus', async () => {
    const ex = await paidExample()
    const plain = await paidExample()
    expect((await refund(t.app, t.admin, ex.order.id, { amount: 2 })).statusCode).toBe(201)
    const partial = await t.app.inject({ method: 'GET', url: '/orders?paymentStatus=partially_refunded&limit=1000', headers: bearer(t.admin) })
    expect(partial.statusCode).toBe(200)
    const ids = partial.json().map((o: { id: number }) => o.id)
    expect(ids).toContain(ex.order.id)
    expect(ids).not.toContain(plain.order.id)
    expect(partial.json().find((o: { id: number }) => o.id === ex.order.id).refunds).toHaveLength(1)
    const paid = await t.app.inject({ method: 'GET', url: '/orders?paymentStatus=paid&limit=1000', headers: bearer(t.admin) })
    expect(paid.json().map((o: { id: number }) => o.id)).toContain(plain.order.id)
    expect(paid.json().map((o: { id: number }) => o.id)).not.toContain(ex.order.id)
    const unpaid = await t.app.inject({ method: 'GET', url: '/orders?paymentStatus=unpaid&limit=1000', headers: bearer(t.admin) })
    expect(unpaid.json().every((o: { payment: { status: string } }) => o.payment.status === 'unpaid')).toBe(true)
    const bad = await t.app.inject({ method: 'GET', url: '/orders?paymentStatus=nope', headers: bearer(t.admin) })
    expect(bad.statusCode).toBe(422)
    const customer = await makeUser(t.app)
    expect((await t.app.inject({ method: 'GET', url: '/orders', headers: bearer(customer) })).json()).toEqual([])
  })
})
