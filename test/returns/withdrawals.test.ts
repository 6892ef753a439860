import { describe, expect, it } from 'vitest'
import { withdrawalDeadline } from '../../src/modules/returns/windows.js'
import { renderEmail } from '../../src/modules/outbox/mail/templates.js'
import { emailView } from '../../src/modules/outbox/mail/views.js'
import { useTestApp } from '../helpers/app.js'
import { type AfterSaleOrder, paidOrder, shipAll, shipUnits } from '../helpers/after-sale.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { queuedEmails, recordEvents } from '../helpers/outbox.js'
import { countRows } from '../helpers/shop.js'

// The withdrawal function: public, rate limited, no login and no reason; a preview, then a confirmation recorded as
// declared with its receipt; staff read them and make a return of their shipped units.

const ADMINS = 'ops@shop.test'
const ZONE = 'Europe/Madrid'
const t = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000', ADMIN_NOTIFY_EMAIL: ADMINS, SHOP_TIMEZONE: ZONE, WITHDRAWAL_DAYS: '14' })
const events = recordEvents(t)
/** The timeline's entries of the shipments the tests make first (through the API): not the returns' own. */
const SHIPPING_ENTRIES = ['order.status_changed', 'order.fulfilled', 'order.delivered', 'fulfillment.delivered', 'fulfillment.updated']

const RECEIVED = 'Hemos recibido tu desistimiento. Te hemos enviado un acuse de recibo por email.'
const NO_ORDER = { error: 'No encontramos un pedido con esos datos' }

const post = (path: 'preview' | 'confirm', payload: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: `/withdrawals/${path}`, payload: payload as object, headers })

async function guestOrder(lines = [{ name: 'Taza', quantity: 2 }]): Promise<AfterSaleOrder> {
  return paidOrder(t.app, { guestEmail: 'marta@shop.test' }, lines)
}

const variantStock = async (variantId: number) =>
  (await t.app.db.selectFrom('product_variants').select('stock').where('id', '=', variantId).executeTakeFirstOrThrow()).stock

/** Everything a withdrawal must not change, and what a refused one must not add. */
async function snapshot(order: AfterSaleOrder) {
  return {
    withdrawals: await countRows(t.app, 'withdrawals'),
    returns: await countRows(t.app, 'returns'),
    outbox: await countRows(t.app, 'outbox'),
    timeline: await countRows(t.app, 'order_events'),
    order: await t.app.db.selectFrom('orders').select(['status', 'updated_at', 'total_cents']).where('id', '=', order.id).executeTakeFirstOrThrow(),
    lines: await t.app.db
      .selectFrom('order_items')
      .select(['quantity', 'fulfilled_quantity', 'refunded_quantity', 'cancelled_quantity'])
      .where('order_id', '=', order.id)
      .execute(),
    stock: await Promise.all(order.lines.map((line) => variantStock(line.variantId))),
  }
}

describe('POST /withdrawals/preview', () => {
  it('answers what would be declared, in the exact words, and the deadline (null until all delivered); changes nothing', async () => {
    const order = await guestOrder([
      { name: 'Taza', quantity: 2 },
      { name: 'Plato hondo', quantity: 1 },
    ])
    await t.app.db.updateTable('order_items').set({ variant_title: 'Azul' }).where('id', '=', order.lines[1]!.id).execute()
    const before = await snapshot(order)
    const res = await post('preview', { orderId: order.id, email: ' Marta@Shop.test ', name: ' Marta López ' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['ratelimit-limit']).toBeDefined()
    expect(res.json()).toEqual({
      orderId: order.id,
      name: 'Marta López',
      email: 'Marta@Shop.test',
      items: [
        { orderItemId: order.lines[0]!.id, name: 'Taza', variantTitle: null, quantity: 2 },
        { orderItemId: order.lines[1]!.id, name: 'Plato hondo', variantTitle: 'Azul', quantity: 1 },
      ],
      statement: `Por la presente, Marta López (Marta@Shop.test) comunica que desiste del contrato de compraventa del pedido #${order.id} respecto de: 2 × Taza; 1 × Plato hondo (Azul).`,
      deadline: null,
    })
    expect(await snapshot(order)).toEqual(before)

    // Shipped and delivered: the deadline is WITHDRAWAL_DAYS after the last delivery, in the shop's zone.
    const deliveredAt = new Date(Date.now() - 3 * 86_400_000).toISOString()
    await shipUnits(
      t.app,
      order.id,
      order.lines.map((line) => ({ orderItemId: line.id, quantity: line.quantity })),
      { deliveredAt },
    )
    const some = await post('preview', {
      orderId: order.id,
      email: 'marta@shop.test',
      name: 'Marta',
      items: [{ orderItemId: order.lines[0]!.id, quantity: 1 }],
    })
    expect(some.json()).toMatchObject({
      items: [{ orderItemId: order.lines[0]!.id, quantity: 1 }],
      statement: `Por la presente, Marta (marta@shop.test) comunica que desiste del contrato de compraventa del pedido #${order.id} respecto de: 1 × Taza.`,
      deadline: withdrawalDeadline({ delivered: true, lastDeliveredAt: deliveredAt }, ZONE, 14),
    })
  })

  it('refuses in order: 422 body, 404 no such order and e-mail, 409 cancelled, 409 late, 422 another order’s line, 409 too many — changing nothing', async () => {
    const order = await guestOrder()
    const line = order.lines[0]!
    const base = { orderId: order.id, email: 'marta@shop.test', name: 'Marta' }
    const stranger = await guestOrder()
    const before = await snapshot(order)
    const cases: Array<[unknown, number, string]> = [
      [{ email: 'marta@shop.test', name: 'Marta' }, 422, 'orderId should not be empty'],
      [{ ...base, orderId: 'x' }, 422, 'orderId must be an integer number'],
      [{ orderId: order.id, name: 'Marta' }, 422, 'email should not be empty'],
      [{ ...base, email: 'marta' }, 422, 'email must be a valid email'],
      [{ ...base, name: '   ' }, 422, 'name should not be empty'],
      [{ ...base, name: 'x'.repeat(101) }, 422, 'name must be shorter than or equal to 100 characters'],
      [{ ...base, items: [] }, 422, 'items should not be empty'],
      [
        {
          ...base,
          items: [
            { orderItemId: line.id, quantity: 1 },
            { orderItemId: line.id, quantity: 1 },
          ],
        },
        422,
        'each orderItemId in items must be different',
      ],
      [{ ...base, email: 'otra@shop.test' }, 404, NO_ORDER.error],
      [{ ...base, orderId: 999_999 }, 404, NO_ORDER.error],
      [{ ...base, items: [{ orderItemId: stranger.lines[0]!.id, quantity: 1 }] }, 422, `El artículo ${stranger.lines[0]!.id} no pertenece a la orden`],
      [{ ...base, items: [{ orderItemId: line.id, quantity: 3 }] }, 409, `Cantidad superior a la que se puede desistir para el artículo ${line.id}`],
    ]
    for (const path of ['preview', 'confirm'] as const) {
      for (const [payload, status, error] of cases) {
        const res = await post(path, payload)
        expect([res.statusCode, res.json()], `${path} ${JSON.stringify(payload)}`).toEqual([status, { error }])
      }
    }
    expect(await snapshot(order)).toEqual(before)

    const cancelled = await paidOrder(t.app, { guestEmail: 'marta@shop.test' }, [{ name: 'Taza', quantity: 1 }], 'cancelled')
    for (const path of ['preview', 'confirm'] as const) {
      expect((await post(path, { ...base, orderId: cancelled.id })).json()).toEqual({ error: 'El pedido está cancelado' })
    }
    const late = await guestOrder()
    const deliveredAt = new Date(Date.now() - 20 * 86_400_000).toISOString()
    await shipUnits(t.app, late.id, [{ orderItemId: late.lines[0]!.id, quantity: 2 }], { deliveredAt })
    events.length = 0
    const deadline = withdrawalDeadline({ delivered: true, lastDeliveredAt: deliveredAt }, ZONE, 14)
    const lateBefore = await snapshot(late)
    for (const path of ['preview', 'confirm'] as const) {
      const res = await post(path, { ...base, orderId: late.id })
      expect([res.statusCode, res.json()]).toEqual([409, { error: `El plazo de desistimiento terminó el ${deadline}` }])
    }
    expect(await snapshot(late)).toEqual(lateBefore)
    expect(await countRows(t.app, 'withdrawals')).toBe(before.withdrawals)
  })

  it('the deadline stays null (and the window open) until every unit has shipped and every shipment is delivered', async () => {
    const order = await guestOrder([{ name: 'Taza', quantity: 2 }])
    const line = order.lines[0]!
    const body = { orderId: order.id, email: 'marta@shop.test', name: 'Marta' }
    const longAgo = new Date(Date.now() - 60 * 86_400_000).toISOString()
    // One unit delivered long ago, the other not shipped: open.
    await shipUnits(t.app, order.id, [{ orderItemId: line.id, quantity: 1 }], { deliveredAt: longAgo })
    events.length = 0
    expect((await post('preview', body)).json()).toMatchObject({ deadline: null })
    // Both shipped, the second not delivered: still open.
    await shipUnits(t.app, order.id, [{ orderItemId: line.id, quantity: 1 }])
    events.length = 0
    expect((await post('preview', body)).json()).toMatchObject({ deadline: null })
    // The last delivery counts: delivered yesterday, the deadline runs from it.
    const yesterday = new Date(Date.now() - 86_400_000).toISOString()
    await t.app.db.updateTable('fulfillments').set({ delivered_at: yesterday }).where('order_id', '=', order.id).where('delivered_at', 'is', null).execute()
    expect((await post('preview', body)).json()).toMatchObject({ deadline: withdrawalDeadline({ delivered: true, lastDeliveredAt: yesterday }, ZONE, 14) })
  })

  it('an account order is found by its account’s e-mail, ignoring case', async () => {
    const user = await makeUser(t.app, 'customer', 'Luis')
    const order = await paidOrder(t.app, { userId: user.id, email: user.email }, [{ name: 'Silla', quantity: 1 }])
    const res = await post('preview', { orderId: order.id, email: user.email.toUpperCase(), name: 'Luis' })
    expect(res.statusCode).toBe(200)
  })
})

describe('POST /withdrawals/confirm', () => {
  it('202 the withdrawal and its message; recorded as declared with the client’s address; receipt, event and admin e-mail queued; nothing else changes', async () => {
    const order = await guestOrder()
    await shipAll(t.app, order, 1)
    events.length = 0
    const before = await snapshot(order)
    const res = await post('confirm', { orderId: order.id, email: 'marta@shop.test', name: 'Marta' }, { 'user-agent': 'Navegador/1.0' })
    expect(res.statusCode).toBe(202)
    const body = res.json()
    expect(body).toEqual({
      id: expect.any(Number),
      orderId: order.id,
      name: 'Marta',
      email: 'marta@shop.test',
      items: [{ orderItemId: order.lines[0]!.id, name: 'Taza', variantTitle: null, quantity: 2 }],
      statement: `Por la presente, Marta (marta@shop.test) comunica que desiste del contrato de compraventa del pedido #${order.id} respecto de: 2 × Taza.`,
      receivedAt: expect.any(String),
      deadline: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      returnId: null,
      message: RECEIVED,
    })
    const row = await t.app.db.selectFrom('withdrawals').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow()
    expect(row).toMatchObject({ ip: '127.0.0.1', user_agent: 'Navegador/1.0', received_at: body.receivedAt })
    expect(events.map((event) => event.type)).toEqual(['withdrawal.received'])
    const { message: _message, ...withdrawal } = body
    expect(events[0]!.data).toEqual({ order: expect.objectContaining({ id: order.id }), withdrawal })
    const receipt = (await queuedEmails(t.app.db, 'marta@shop.test')).filter((mail) => mail.template === 'withdrawal-receipt')
    expect(receipt).toHaveLength(1)
    expect(receipt[0]!.data).toMatchObject({ name: 'Marta', order: { id: order.id }, withdrawal: { statement: body.statement, receivedAt: body.receivedAt } })
    expect((receipt[0]!.data.withdrawal as { receivedAtLocal: string }).receivedAtLocal).toContain(ZONE)
    const admin = (await queuedEmails(t.app.db, ADMINS)).filter((mail) => mail.template === 'admin-withdrawal-received')
    expect(admin.at(-1)!.data).toMatchObject({ withdrawal: { id: body.id } })
    const context = { currency: 'EUR', publicUrl: 'http://shop.test' }
    const renderedReceipt = renderEmail('withdrawal-receipt', emailView(receipt[0]!, context))
    expect(renderedReceipt.subject).toBe(`Acuse de recibo de tu desistimiento: pedido #${order.id}`)
    expect(renderedReceipt.text).toContain(body.statement)
    expect(renderedReceipt.text).toContain(body.receivedAt)
    const renderedAdmin = renderEmail('admin-withdrawal-received', emailView(admin.at(-1)!, context))
    expect(renderedAdmin.subject).toBe(`Desistimiento recibido: pedido #${order.id}`)
    expect(renderedAdmin.text).toContain(`/admin/#/withdrawals/${body.id}/show`)
    const after = await snapshot(order)
    expect(after).toEqual({ ...before, withdrawals: before.withdrawals + 1, outbox: before.outbox + 2, timeline: before.timeline + 1 })
    const timeline = await t.app.db
      .selectFrom('order_events')
      .selectAll()
      .where('order_id', '=', order.id)
      .where('type', 'not in', SHIPPING_ENTRIES)
      .executeTakeFirstOrThrow()
    expect(timeline).toMatchObject({ type: 'withdrawal.received', actor_type: 'guest', actor_name: 'marta@shop.test' })
  })

  it('the same request within 24 h answers the first and sends nothing; after 24 h it is a new one', async () => {
    const order = await guestOrder()
    const payload = { orderId: order.id, email: 'marta@shop.test', name: 'Marta', items: [{ orderItemId: order.lines[0]!.id, quantity: 1 }] }
    const first = (await post('confirm', payload)).json()
    const before = await snapshot(order)
    events.length = 0
    const again = await post('confirm', { ...payload, email: 'MARTA@shop.test' })
    expect([again.statusCode, again.json()]).toEqual([202, first])
    expect(events).toEqual([])
    expect(await snapshot(order)).toEqual(before)
    // Another name is another declaration (and takes the other unit).
    const other = await post('confirm', { ...payload, name: 'Marta L.' })
    expect(other.json().id).not.toBe(first.id)

    const later = await guestOrder()
    const laterPayload = { ...payload, orderId: later.id, items: [{ orderItemId: later.lines[0]!.id, quantity: 1 }] }
    const firstLater = (await post('confirm', laterPayload)).json()
    await t.app.db
      .updateTable('withdrawals')
      .set({ received_at: new Date(Date.now() - 25 * 3_600_000).toISOString() })
      .where('id', '=', firstLater.id)
      .execute()
    const next = await post('confirm', laterPayload)
    expect(next.statusCode).toBe(202)
    expect(next.json().id).not.toBe(firstLater.id)
    // Both units are now withdrawn: none left.
    const none = await post('confirm', { ...laterPayload, items: undefined, name: 'Otra' })
    expect([none.statusCode, none.json()]).toEqual([409, { error: `Cantidad superior a la que se puede desistir para el artículo ${later.lines[0]!.id}` }])
  })

  it('two confirmations racing for the same units: one is recorded, the other refused', async () => {
    const order = await guestOrder()
    const answers = await Promise.all(['Ana', 'Bea', 'Carla'].map((name) => post('confirm', { orderId: order.id, email: 'marta@shop.test', name })))
    expect(answers.map((res) => res.statusCode).sort()).toEqual([202, 409, 409])
    expect(await t.app.db.selectFrom('withdrawals').select('id').where('order_id', '=', order.id).execute()).toHaveLength(1)
  })
})

describe('staff: GET /withdrawals, /withdrawals/:id, POST /withdrawals/:id/return', () => {
  it('lists newest first with ip and userAgent, by order and by converted; one by id; 404; 403 for customers', async () => {
    const order = await guestOrder([{ name: 'Taza', quantity: 3 }])
    await shipAll(t.app, order)
    events.length = 0
    const ids: number[] = []
    for (const name of ['Uno', 'Dos']) {
      ids.push(
        (await post('confirm', { orderId: order.id, email: 'marta@shop.test', name, items: [{ orderItemId: order.lines[0]!.id, quantity: 1 }] })).json().id,
      )
    }
    const list = await t.app.inject({ url: `/withdrawals?orderId=${order.id}`, headers: bearer(t.admin) })
    expect(list.statusCode).toBe(200)
    expect(list.headers['x-total-count']).toBe('2')
    expect(list.json().map((w: { id: number }) => w.id)).toEqual([ids[1], ids[0]])
    expect(list.json()[0]).toMatchObject({ ip: '127.0.0.1', userAgent: 'lightMyRequest', returnId: null })
    await t.app.inject({ method: 'POST', url: `/withdrawals/${ids[0]}/return`, headers: bearer(t.admin) })
    const converted = await t.app.inject({ url: `/withdrawals?orderId=${order.id}&converted=true`, headers: bearer(t.admin) })
    expect(converted.json().map((w: { id: number }) => w.id)).toEqual([ids[0]])
    const open = await t.app.inject({ url: `/withdrawals?orderId=${order.id}&converted=false`, headers: bearer(t.admin) })
    expect(open.json().map((w: { id: number }) => w.id)).toEqual([ids[1]])
    const one = await t.app.inject({ url: `/withdrawals/${ids[0]}`, headers: bearer(t.admin) })
    expect(one.json()).toMatchObject({ id: ids[0], returnId: expect.any(Number), ip: '127.0.0.1' })
    expect((await t.app.inject({ url: '/withdrawals/999999', headers: bearer(t.admin) })).json()).toEqual({ error: 'Desistimiento no encontrado' })
    expect((await t.app.inject({ url: '/withdrawals', headers: bearer(t.customer) })).statusCode).toBe(403)
    expect((await t.app.inject({ url: '/withdrawals' })).statusCode).toBe(401)
  })

  it('/return makes an approved return of the shipped units; twice 409, none shipped 409, unknown 404', async () => {
    const order = await guestOrder([
      { name: 'Taza', quantity: 2 },
      { name: 'Plato', quantity: 1 },
    ])
    const [taza, plato] = order.lines as [AfterSaleOrder['lines'][number], AfterSaleOrder['lines'][number]]
    const withdrawal = (await post('confirm', { orderId: order.id, email: 'marta@shop.test', name: 'Marta' })).json()
    const make = (id: number) => t.app.inject({ method: 'POST', url: `/withdrawals/${id}/return`, headers: bearer(t.admin) })
    const before = await snapshot(order)
    const none = await make(withdrawal.id)
    expect([none.statusCode, none.json()]).toEqual([409, { error: 'Ningún artículo del desistimiento se ha enviado: reembolsa el pedido' }])
    expect(await snapshot(order)).toEqual(before)
    expect((await make(999_999)).json()).toEqual({ error: 'Desistimiento no encontrado' })

    // The cups shipped, the plate did not: the return holds the cups.
    await shipUnits(t.app, order.id, [{ orderItemId: taza.id, quantity: 2 }])
    events.length = 0
    events.length = 0
    const res = await make(withdrawal.id)
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({
      orderId: order.id,
      status: 'approved',
      source: 'withdrawal',
      withdrawalId: withdrawal.id,
      items: [{ orderItemId: taza.id, quantity: 2, reason: null, receivedQuantity: null }],
    })
    expect(events.map((event) => event.type)).toEqual(['return.approved'])
    expect((await queuedEmails(t.app.db, 'marta@shop.test')).at(-1)!.template).toBe('return-approved')
    const twice = await make(withdrawal.id)
    expect([twice.statusCode, twice.json()]).toEqual([409, { error: 'El desistimiento ya tiene una devolución' }])
    expect((await t.app.inject({ url: `/withdrawals/${withdrawal.id}`, headers: bearer(t.admin) })).json().returnId).toBe(res.json().id)
    expect(plato.id).toBeGreaterThan(0)
    expect((await t.app.inject({ method: 'POST', url: `/withdrawals/${withdrawal.id}/return`, headers: bearer(t.customer) })).statusCode).toBe(403)
  })

  it('two staff racing to make the return: one 201, the other 409', async () => {
    const order = await guestOrder()
    await shipAll(t.app, order)
    events.length = 0
    const withdrawal = (await post('confirm', { orderId: order.id, email: 'marta@shop.test', name: 'Marta' })).json()
    const answers = await Promise.all([1, 2].map(() => t.app.inject({ method: 'POST', url: `/withdrawals/${withdrawal.id}/return`, headers: bearer(t.admin) })))
    expect(answers.map((res) => res.statusCode).sort()).toEqual([201, 409])
  })
})

describe('the rate limit', () => {
  const limited = useTestApp({ AUTH_RATE_LIMIT_MAX: '3' })

  it('preview, confirm and the order lookup share one per-client counter with login’s maximum and 429 message', async () => {
    const body = { orderId: 1, email: 'nadie@shop.test', name: 'Nadie' }
    const lookup = await limited.app.inject({ method: 'POST', url: '/orders/lookup', payload: { orderId: 1, email: 'nadie@shop.test' } })
    expect(lookup.statusCode).toBe(202)
    expect((await limited.app.inject({ method: 'POST', url: '/withdrawals/preview', payload: body })).statusCode).toBe(404)
    expect((await limited.app.inject({ method: 'POST', url: '/withdrawals/confirm', payload: body })).statusCode).toBe(404)
    const over = await limited.app.inject({ method: 'POST', url: '/withdrawals/preview', payload: body })
    expect([over.statusCode, over.json()]).toEqual([429, { error: 'Demasiados intentos. Intenta de nuevo en 15 minutos.' }])
    expect(over.headers['retry-after']).toBeDefined()
    expect((await limited.app.inject({ method: 'POST', url: '/withdrawals/confirm', payload: body })).statusCode).toBe(429)
  })
})
