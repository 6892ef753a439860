import { describe, expect, it } from 'vitest'
import { renderEmail } from '../../src/modules/outbox/mail/templates.js'
import { emailView } from '../../src/modules/outbox/mail/views.js'
import type { EmailMessage } from '../../src/modules/outbox/outbox.js'
import { receiveReturn, type ReturnRefunds } from '../../src/modules/returns/returns.service.js'
import { useTestApp } from '../helpers/app.js'
import { type AfterSaleOrder, paidOrder, shipAll, shipUnits } from '../helpers/after-sale.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { queuedEmails, recordEvents } from '../helpers/outbox.js'
import { countRows, stockOf } from '../helpers/shop.js'
import { exampleSetup, getOrder, placeExample } from '../refunds/helpers.js'

// Returns: asked by the order's customer (or a guest with its link), or made by staff; approved or rejected;
// received back into stock. Shipments are written by test/helpers/after-sale.ts.

const ADMINS = 'ops@shop.test'
const t = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000', ADMIN_NOTIFY_EMAIL: ADMINS, RETURN_DAYS: '30' })
const events = recordEvents(t)
/** The timeline's entries of the shipments the tests make first (through the API): not the returns' own. */
const SHIPPING_ENTRIES = ['order.status_changed', 'order.fulfilled', 'order.delivered', 'fulfillment.delivered', 'fulfillment.updated']

const NOT_FOUND = { error: 'Orden no encontrada' }
const RETURN_NOT_FOUND = { error: 'Devolución no encontrada' }

async function customerOrder(user: TestUser, lines = [{ name: 'Taza', quantity: 2 }]): Promise<AfterSaleOrder> {
  return paidOrder(t.app, { userId: user.id, email: user.email }, lines)
}

const ask = (order: AfterSaleOrder, who: { token: string } | null, body: unknown, token?: string) =>
  t.app.inject({
    method: 'POST',
    url: `/orders/${order.id}/returns${token ? `?token=${token}` : ''}`,
    headers: who ? bearer(who) : {},
    payload: body as object,
  })

const move = (id: number, action: string, body?: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url: `/returns/${id}/${action}`,
    headers: { ...bearer(t.admin), ...headers },
    ...(body === undefined ? {} : { payload: body as object }),
  })

const variantStock = async (variantId: number) =>
  (await t.app.db.selectFrom('product_variants').select('stock').where('id', '=', variantId).executeTakeFirstOrThrow()).stock

/** Everything a refused request must leave as it was. */
async function snapshot(order: AfterSaleOrder) {
  return {
    returns: await countRows(t.app, 'returns'),
    items: await countRows(t.app, 'return_items'),
    outbox: await countRows(t.app, 'outbox'),
    timeline: await countRows(t.app, 'order_events'),
    statuses: await t.app.db.selectFrom('returns').select(['id', 'status', 'updated_at']).orderBy('id').execute(),
    received: await t.app.db.selectFrom('return_items').select(['return_id', 'received_quantity']).orderBy('return_id').execute(),
    stock: await Promise.all(order.lines.map((line) => variantStock(line.variantId))),
  }
}

describe('POST /orders/:id/returns', () => {
  it('a customer asks to return shipped units: 201 `requested`, its event, e-mails and timeline entry in the same change', async () => {
    const customer = await makeUser(t.app, 'customer', 'Ana Cliente')
    const order = await customerOrder(customer)
    await shipAll(t.app, order, 2)
    events.length = 0
    const line = order.lines[0]!
    const res = await ask(order, customer, { items: [{ orderItemId: line.id, quantity: 1, reason: 'Talla pequeña' }], reason: 'No me vale' })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.any(Number),
      orderId: order.id,
      status: 'requested',
      source: 'customer',
      reason: 'No me vale',
      rejectionReason: null,
      items: [{ orderItemId: line.id, quantity: 1, reason: 'Talla pequeña', receivedQuantity: null }],
      refundId: null,
      withdrawalId: null,
      createdAt: expect.any(String),
      updatedAt: body.createdAt,
    })
    expect(events.map((event) => event.type)).toEqual(['return.requested'])
    expect(events[0]!.data).toEqual({ order: expect.objectContaining({ id: order.id, status: 'delivered' }), return: body })
    const mine = await queuedEmails(t.app.db, customer.email)
    expect(mine.map((mail) => mail.template)).toEqual(['return-requested'])
    expect(mine[0]!.data).toMatchObject({ name: 'Ana Cliente', order: { id: order.id }, return: { id: body.id, lines: [{ text: '1 × Taza' }] } })
    const admin = (await queuedEmails(t.app.db, ADMINS)).filter((mail) => mail.template === 'admin-return-requested')
    expect(admin.at(-1)!.data).toMatchObject({ name: 'Ana Cliente', email: customer.email, order: { id: order.id }, return: { id: body.id } })
    const timeline = await t.app.db.selectFrom('order_events').selectAll().where('order_id', '=', order.id).where('type', 'not in', SHIPPING_ENTRIES).execute()
    expect(timeline.map((row) => ({ ...row, data: JSON.parse(row.data) }))).toEqual([
      expect.objectContaining({ type: 'return.requested', actor_type: 'user', actor_id: customer.id, actor_name: null, data: { return: body } }),
    ])
    // The customer reads their order's returns.
    const list = await t.app.inject({ url: `/orders/${order.id}/returns`, headers: bearer(customer) })
    expect(list.statusCode).toBe(200)
    expect(list.json()).toEqual([body])
  })

  it('a guest asks with the order’s link; staff ask for any order and the return starts `approved`', async () => {
    const order = await paidOrder(t.app, { guestEmail: 'Invitada@Shop.test' }, [{ name: 'Lámpara', quantity: 1 }])
    await shipAll(t.app, order, 1)
    events.length = 0
    const res = await ask(order, null, { items: [{ orderItemId: order.lines[0]!.id, quantity: 1 }] }, order.token)
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ status: 'requested', source: 'customer' })
    const guestMail = await queuedEmails(t.app.db, 'Invitada@Shop.test')
    expect(guestMail.map((mail) => mail.template)).toEqual(['return-requested'])
    expect(guestMail[0]!.data.link).toMatch(new RegExp(`/orders/${order.id}\\?token=`))
    const timeline = await t.app.db
      .selectFrom('order_events')
      .select(['actor_type', 'actor_id', 'actor_name'])
      .where('order_id', '=', order.id)
      .where('type', 'not in', SHIPPING_ENTRIES)
      .execute()
    expect(timeline).toEqual([{ actor_type: 'guest', actor_id: null, actor_name: 'Invitada@Shop.test' }])
    expect((await t.app.inject({ url: `/orders/${order.id}/returns?token=${order.token}` })).json()).toHaveLength(1)

    const other = await customerOrder(t.customer)
    await shipAll(t.app, other)
    events.length = 0
    events.length = 0
    const staff = await ask(other, t.admin, { items: [{ orderItemId: other.lines[0]!.id, quantity: 2 }] })
    expect(staff.statusCode).toBe(201)
    expect(staff.json()).toMatchObject({ status: 'approved', source: 'admin' })
    expect(events.map((event) => event.type)).toEqual(['return.approved'])
    expect((await queuedEmails(t.app.db, t.customer.email)).map((mail) => mail.template)).toContain('return-approved')
  })

  it('refuses in order: 401, 422 body, 404 order (someone else’s too), 422 another order’s line, 409 nothing shipped, 409 too many — changing nothing', async () => {
    const customer = await makeUser(t.app)
    const order = await customerOrder(customer, [
      { name: 'Taza', quantity: 2 },
      { name: 'Plato', quantity: 1 },
    ])
    const [taza, plato] = order.lines as [AfterSaleOrder['lines'][number], AfterSaleOrder['lines'][number]]
    const stranger = await customerOrder(t.customer)
    const before = await snapshot(order)
    const cases: Array<[unknown, { token: string } | null, number, string]> = [
      [{ items: [{ orderItemId: taza.id, quantity: 1 }] }, null, 401, 'Unauthorized - No user found'],
      [{}, customer, 422, 'items should not be empty'],
      [{ items: [] }, customer, 422, 'items should not be empty'],
      [{ items: [{ orderItemId: taza.id }] }, customer, 422, 'quantity should not be empty'],
      [{ items: [{ orderItemId: taza.id, quantity: 0 }] }, customer, 422, 'quantity must not be less than 1'],
      [{ items: [{ orderItemId: taza.id, quantity: 1 }], reason: 'x'.repeat(501) }, customer, 422, 'reason must be shorter than or equal to 500 characters'],
      [
        {
          items: [
            { orderItemId: taza.id, quantity: 1 },
            { orderItemId: taza.id, quantity: 1 },
          ],
        },
        customer,
        422,
        'each orderItemId in items must be different',
      ],
      [{ items: [{ orderItemId: stranger.lines[0]!.id, quantity: 1 }] }, customer, 422, `El artículo ${stranger.lines[0]!.id} no pertenece a la orden`],
      [{ items: [{ orderItemId: taza.id, quantity: 1 }] }, customer, 409, 'No hay artículos enviados que devolver'],
    ]
    for (const [payload, who, status, error] of cases) {
      const res = await ask(order, who, payload)
      expect([res.statusCode, res.json()], JSON.stringify(payload)).toEqual([status, { error }])
    }
    // Someone else's order is not found, as GET /orders/:id answers.
    expect((await ask(stranger, customer, { items: [{ orderItemId: stranger.lines[0]!.id, quantity: 1 }] })).json()).toEqual(NOT_FOUND)
    expect((await t.app.inject({ url: `/orders/${stranger.id}/returns`, headers: bearer(customer) })).json()).toEqual(NOT_FOUND)
    expect((await ask({ ...order, id: 999_999 }, t.admin, { items: [{ orderItemId: taza.id, quantity: 1 }] })).statusCode).toBe(404)
    // Another order's token.
    const badLink = await ask(order, null, { items: [{ orderItemId: taza.id, quantity: 1 }] }, t.app.orderTokens.sign(stranger.id))
    expect([badLink.statusCode, badLink.json()]).toEqual([401, { error: 'Enlace inválido o caducado' }])

    // One unit of the cup shipped: two are too many; the plate has none to return.
    await shipUnits(t.app, order.id, [{ orderItemId: taza.id, quantity: 1 }])
    events.length = 0
    const shippedBefore = await snapshot(order)
    const tooMany = await ask(order, customer, { items: [{ orderItemId: taza.id, quantity: 2 }] })
    expect([tooMany.statusCode, tooMany.json()]).toEqual([409, { error: `Cantidad superior a la que se puede devolver para el artículo ${taza.id}` }])
    const unshipped = await ask(order, customer, { items: [{ orderItemId: plato.id, quantity: 1 }] })
    expect(unshipped.json()).toEqual({ error: `Cantidad superior a la que se puede devolver para el artículo ${plato.id}` })
    expect(await snapshot(order)).toEqual(shippedBefore)
    expect(before.returns).toBe(shippedBefore.returns)
    expect(before.outbox).toBe(shippedBefore.outbox)
  })

  it('returnable = shipped units less those in returns not rejected; a rejected return frees its units', async () => {
    const customer = await makeUser(t.app)
    const order = await customerOrder(customer, [{ name: 'Silla', quantity: 3 }])
    const line = order.lines[0]!
    await shipAll(t.app, order)
    events.length = 0
    const first = (await ask(order, customer, { items: [{ orderItemId: line.id, quantity: 2 }] })).json()
    expect((await ask(order, customer, { items: [{ orderItemId: line.id, quantity: 2 }] })).statusCode).toBe(409)
    expect((await move(first.id, 'reject', { reason: 'Usada' })).statusCode).toBe(200)
    expect((await ask(order, customer, { items: [{ orderItemId: line.id, quantity: 3 }] })).statusCode).toBe(201)
    expect((await ask(order, t.admin, { items: [{ orderItemId: line.id, quantity: 1 }] })).statusCode).toBe(409)
  })

  it('a received return holds the units that arrived: the others can be returned again', async () => {
    const customer = await makeUser(t.app)
    const order = await customerOrder(customer, [{ name: 'Banco', quantity: 3 }])
    const line = order.lines[0]!
    await shipAll(t.app, order)
    events.length = 0
    const ret = (await ask(order, customer, { items: [{ orderItemId: line.id, quantity: 3 }] })).json()
    await move(ret.id, 'approve')
    await move(ret.id, 'receive', { refund: false, items: [{ orderItemId: line.id, quantity: 1 }] })
    expect((await ask(order, customer, { items: [{ orderItemId: line.id, quantity: 3 }] })).statusCode).toBe(409)
    expect((await ask(order, customer, { items: [{ orderItemId: line.id, quantity: 2 }] })).statusCode).toBe(201)
  })

  it('a customer may ask until the end of RETURN_DAYS after the last delivery; before delivery it stays open; staff are not bound', async () => {
    const customer = await makeUser(t.app)
    const late = await customerOrder(customer)
    await shipAll(t.app, late, 32)
    events.length = 0
    const body = { items: [{ orderItemId: late.lines[0]!.id, quantity: 1 }] }
    const before = await snapshot(late)
    const res = await ask(late, customer, body)
    expect([res.statusCode, res.json()]).toEqual([409, { error: 'El plazo de devolución ha terminado' }])
    expect(await snapshot(late)).toEqual(before)
    expect((await ask(late, t.admin, body)).statusCode).toBe(201)

    const inTime = await customerOrder(customer)
    await shipAll(t.app, inTime, 29)
    events.length = 0
    expect((await ask(inTime, customer, { items: [{ orderItemId: inTime.lines[0]!.id, quantity: 1 }] })).statusCode).toBe(201)

    // Delivered 40 days ago in part, the rest still on its way: the order has not all arrived, the window is open.
    const partly = await customerOrder(customer)
    const cup = partly.lines[0]!
    await shipUnits(t.app, partly.id, [{ orderItemId: cup.id, quantity: 1 }], { deliveredAt: new Date(Date.now() - 40 * 86_400_000).toISOString() })
    events.length = 0
    await shipUnits(t.app, partly.id, [{ orderItemId: cup.id, quantity: 1 }])
    events.length = 0
    expect((await ask(partly, customer, { items: [{ orderItemId: cup.id, quantity: 1 }] })).statusCode).toBe(201)
  })

  it('two returns racing for the last returnable unit: one wins, the other is refused', async () => {
    const customer = await makeUser(t.app)
    const order = await customerOrder(customer, [{ name: 'Vaso', quantity: 1 }])
    await shipAll(t.app, order)
    events.length = 0
    const body = { items: [{ orderItemId: order.lines[0]!.id, quantity: 1 }] }
    const answers = await Promise.all([ask(order, customer, body), ask(order, t.admin, body), ask(order, customer, body)])
    expect(answers.map((res) => res.statusCode).sort()).toEqual([201, 409, 409])
    expect(await t.app.db.selectFrom('returns').select('id').where('order_id', '=', order.id).execute()).toHaveLength(1)
  })
})

describe('moving a return', () => {
  async function requested(lines = [{ name: 'Jarra', quantity: 3 }]) {
    const customer = await makeUser(t.app)
    const order = await customerOrder(customer, lines)
    await shipAll(t.app, order)
    events.length = 0
    const ret = (await ask(order, customer, { items: order.lines.map((line) => ({ orderItemId: line.id, quantity: line.quantity })) })).json()
    return { customer, order, ret }
  }

  it('approve and reject answer 200 with the return, each with its event, e-mail and timeline entry', async () => {
    const { customer, order, ret } = await requested()
    events.length = 0
    const approved = await move(ret.id, 'approve')
    expect(approved.statusCode).toBe(200)
    expect(approved.json()).toMatchObject({ id: ret.id, status: 'approved' })
    expect(events.map((event) => event.type)).toEqual(['return.approved'])
    expect((await queuedEmails(t.app.db, customer.email)).map((mail) => mail.template)).toEqual(['return-requested', 'return-approved'])

    const other = await requested()
    const rejected = await move(other.ret.id, 'reject', { reason: 'Fuera de plazo' })
    expect(rejected.json()).toMatchObject({ status: 'rejected', rejectionReason: 'Fuera de plazo' })
    const mail = (await queuedEmails(t.app.db, other.customer.email)).at(-1)!
    expect(mail).toMatchObject({ template: 'return-rejected', data: { return: { rejectionReason: 'Fuera de plazo' } } })
    const types = await t.app.db
      .selectFrom('order_events')
      .select('type')
      .where('order_id', '=', order.id)
      .where('type', 'not in', SHIPPING_ENTRIES)
      .orderBy('id')
      .execute()
    expect(types.map((row) => row.type)).toEqual(['return.requested', 'return.approved'])
  })

  it('refuses in order: 401, 403, 422, 404, 409 transition — changing nothing', async () => {
    const { order, ret } = await requested()
    const before = await snapshot(order)
    const anon = await t.app.inject({ method: 'POST', url: `/returns/${ret.id}/approve` })
    expect(anon.statusCode).toBe(401)
    const customer = await t.app.inject({ method: 'POST', url: `/returns/${ret.id}/approve`, headers: bearer(t.customer) })
    expect([customer.statusCode, customer.json()]).toEqual([403, { error: 'Forbidden - Requires one of the following roles: admin' }])
    for (const payload of [{}, { reason: '' }]) expect((await move(ret.id, 'reject', payload)).json()).toEqual({ error: 'reason should not be empty' })
    expect((await move(999_999, 'approve')).json()).toEqual(RETURN_NOT_FOUND)
    expect((await move(999_999, 'reject', { reason: 'x' })).json()).toEqual(RETURN_NOT_FOUND)
    expect((await move(999_999, 'receive', { refund: false })).json()).toEqual(RETURN_NOT_FOUND)
    const early = await move(ret.id, 'receive', { refund: false })
    expect([early.statusCode, early.json()]).toEqual([409, { error: 'Transición de devolución no permitida: requested -> received' }])
    expect(await snapshot(order)).toEqual(before)

    await move(ret.id, 'approve')
    expect((await move(ret.id, 'approve')).json()).toEqual({ error: 'Transición de devolución no permitida: approved -> approved' })
    expect((await move(ret.id, 'reject', { reason: 'x' })).json()).toEqual({ error: 'Transición de devolución no permitida: approved -> rejected' })
    await move(ret.id, 'receive', { refund: false })
    expect((await move(ret.id, 'receive', { refund: false })).json()).toEqual({ error: 'Transición de devolución no permitida: received -> received' })
    expect((await move(ret.id, 'approve')).json()).toEqual({ error: 'Transición de devolución no permitida: received -> approved' })
  })

  it('receive with `refund: false`: every unit by default, back in stock, receivedQuantity set; `return.received` and its e-mail', async () => {
    const { customer, order, ret } = await requested([
      { name: 'Jarra', quantity: 3 },
      { name: 'Cuenco', quantity: 2 },
    ])
    await move(ret.id, 'approve')
    const stock = await Promise.all(order.lines.map((line) => variantStock(line.variantId)))
    events.length = 0
    const res = await move(ret.id, 'receive', { refund: false })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({
      status: 'received',
      refundId: null,
      items: order.lines.map((line) => ({ orderItemId: line.id, quantity: line.quantity, reason: null, receivedQuantity: line.quantity })),
    })
    expect(await Promise.all(order.lines.map((line) => variantStock(line.variantId)))).toEqual([stock[0]! + 3, stock[1]! + 2])
    expect(events.map((event) => event.type)).toEqual(['return.received'])
    const mail = (await queuedEmails(t.app.db, customer.email)).at(-1)!
    expect(mail).toMatchObject({ template: 'return-received', data: { return: { lines: [{ text: '3 × Jarra' }, { text: '2 × Cuenco' }] } } })
  })

  it('receive some units, one line not restocked; another order’s line 422, more than the return holds 409', async () => {
    const { order, ret } = await requested([
      { name: 'Jarra', quantity: 3 },
      { name: 'Cuenco', quantity: 2 },
    ])
    const [jarra, cuenco] = order.lines as [AfterSaleOrder['lines'][number], AfterSaleOrder['lines'][number]]
    await move(ret.id, 'approve')
    const stranger = await customerOrder(t.customer)
    const before = await snapshot(order)
    const foreign = await move(ret.id, 'receive', { refund: false, items: [{ orderItemId: stranger.lines[0]!.id, quantity: 1 }] })
    expect([foreign.statusCode, foreign.json()]).toEqual([422, { error: `El artículo ${stranger.lines[0]!.id} no pertenece a la orden` }])
    const tooMany = await move(ret.id, 'receive', { refund: false, items: [{ orderItemId: jarra.id, quantity: 4 }] })
    expect([tooMany.statusCode, tooMany.json()]).toEqual([409, { error: `Cantidad superior a la que se puede devolver para el artículo ${jarra.id}` }])
    expect((await move(ret.id, 'receive', { refund: false, items: [] })).json()).toEqual({ error: 'items should not be empty' })
    expect(await snapshot(order)).toEqual(before)

    const res = await move(ret.id, 'receive', {
      refund: false,
      items: [
        { orderItemId: jarra.id, quantity: 2 },
        { orderItemId: cuenco.id, quantity: 2, restock: false },
      ],
    })
    expect(res.json().items).toEqual([
      { orderItemId: jarra.id, quantity: 3, reason: null, receivedQuantity: 2 },
      { orderItemId: cuenco.id, quantity: 2, reason: null, receivedQuantity: 2 },
    ])
    expect([await variantStock(jarra.variantId), await variantStock(cuenco.variantId)]).toEqual([before.stock[0]! + 2, before.stock[1]!])
  })

  it('a receipt that refunds (the default) needs an Idempotency-Key first', async () => {
    const { order, ret } = await requested()
    await move(ret.id, 'approve')
    const before = await snapshot(order)
    for (const payload of [undefined, {}, { refund: true }]) {
      const res = await move(ret.id, 'receive', payload)
      expect([res.statusCode, res.json()]).toEqual([422, { error: 'idempotency-key should not be empty' }])
    }
    expect(await snapshot(order)).toEqual(before)
  })
})

describe('GET /returns and /returns/:id (staff)', () => {
  it('newest first, by status, paged with X-Total-Count and Link; one by id; 403 for customers', async () => {
    const customer = await makeUser(t.app)
    const order = await customerOrder(customer, [{ name: 'Mesa', quantity: 3 }])
    await shipAll(t.app, order)
    events.length = 0
    const ids: number[] = []
    for (let i = 0; i < 3; i++) ids.push((await ask(order, customer, { items: [{ orderItemId: order.lines[0]!.id, quantity: 1 }] })).json().id)
    await move(ids[0]!, 'approve')
    const all = await t.app.inject({ url: `/returns?orderId=${order.id}&limit=2`, headers: bearer(t.admin) })
    expect(all.statusCode).toBe(200)
    expect(all.headers['x-total-count']).toBe('3')
    expect(all.headers.link).toContain(`/returns?limit=2&offset=2&orderId=${order.id}>; rel="next"`)
    expect(all.json().map((ret: { id: number }) => ret.id)).toEqual([ids[2], ids[1]])
    const approved = await t.app.inject({ url: `/returns?status=approved&orderId=${order.id}`, headers: bearer(t.admin) })
    expect(approved.json().map((ret: { id: number }) => ret.id)).toEqual([ids[0]])
    expect((await t.app.inject({ url: '/returns?status=lost', headers: bearer(t.admin) })).json()).toEqual({
      error: 'status must be one of the following values: requested, approved, rejected, received',
    })
    const one = await t.app.inject({ url: `/returns/${ids[1]}`, headers: bearer(t.admin) })
    expect(one.json()).toMatchObject({ id: ids[1], status: 'requested' })
    expect((await t.app.inject({ url: '/returns/999999', headers: bearer(t.admin) })).json()).toEqual(RETURN_NOT_FOUND)
    expect((await t.app.inject({ url: '/returns/abc', headers: bearer(t.admin) })).json()).toEqual({ error: 'id must be an integer number' })
    expect((await t.app.inject({ url: '/returns', headers: bearer(customer) })).statusCode).toBe(403)
  })
})

describe('the e-mails', () => {
  it('read `Devolución solicitada (aprobada, rechazada, recibida): pedido #<id>`, with the lines', async () => {
    const customer = await makeUser(t.app, 'customer', 'Eva')
    const order = await customerOrder(customer, [{ name: 'Florero', quantity: 2 }])
    await shipAll(t.app, order)
    events.length = 0
    const first = (await ask(order, customer, { items: [{ orderItemId: order.lines[0]!.id, quantity: 1 }], reason: 'Roto' })).json()
    await move(first.id, 'reject', { reason: 'Sin fotos' })
    const second = (await ask(order, customer, { items: [{ orderItemId: order.lines[0]!.id, quantity: 2 }] })).json()
    await move(second.id, 'approve')
    await move(second.id, 'receive', { refund: false })
    const render = (mail: EmailMessage) => renderEmail(mail.template, emailView(mail, { currency: 'EUR', publicUrl: 'http://shop.test' }))
    const mails = (await queuedEmails(t.app.db, customer.email)).map(render)
    // Queued in the same millisecond, the e-mails have no order among themselves: each is found by its subject.
    expect(mails.map((mail) => mail.subject).sort()).toEqual(
      [
        `Devolución solicitada: pedido #${order.id}`,
        `Devolución rechazada: pedido #${order.id}`,
        `Devolución solicitada: pedido #${order.id}`,
        `Devolución aprobada: pedido #${order.id}`,
        `Devolución recibida: pedido #${order.id}`,
      ].sort(),
    )
    const bySubject = (word: string) => mails.filter((mail) => mail.subject === `Devolución ${word}: pedido #${order.id}`)
    expect(bySubject('solicitada').some((mail) => mail.text.includes('- 1 × Florero'))).toBe(true)
    expect(bySubject('rechazada')[0]!.text).toContain('(motivo: Sin fotos)')
    expect(bySubject('recibida')[0]!.html).toContain('<li>2 × Florero</li>')
    const admin = (await queuedEmails(t.app.db, ADMINS))
      .filter((mail) => mail.template === 'admin-return-requested')
      .map(render)
      .at(-1)!
    expect(admin.subject).toBe(`Devolución solicitada: pedido #${order.id}`)
    expect(admin.text).toContain(`Eva (${customer.email})`)
  })
})

describe('the refund of a receipt (the seam the refunds module fills)', () => {
  // The receipt hands the received units to `ReturnsDeps.refunds` (the refunds module) inside its own transaction;
  // a stand-in that refuses shows that the refusal rolls the whole receipt back.
  async function approvedReturn() {
    const customer = await makeUser(t.app)
    const order = await customerOrder(customer, [
      { name: 'Jarra', quantity: 3 },
      { name: 'Cuenco', quantity: 1 },
    ])
    await shipAll(t.app, order)
    events.length = 0
    const ret = (await ask(order, customer, { items: order.lines.map((line) => ({ orderItemId: line.id, quantity: line.quantity })) })).json()
    await move(ret.id, 'approve')
    return { order, ret }
  }
  const staff = { type: 'user' as const, id: 1, name: 'Staff', staff: true, audit: null }

  it('refunds exactly the received units by the refunds module, in the receipt’s transaction; the return points to the refund', async () => {
    // A paid order of the documented example (2 mugs at 19.99 with 21 % tax included, 1 tea; a 10 % code): the two
    // mugs come back and are refunded by the refund rules (their line's total, 35.98, tax 6.24), stock back once.
    const setup = await exampleSetup(t.app, t.admin)
    const example = await placeExample(t.app, t.admin, setup)
    await shipUnits(t.app, example.order.id, [
      { orderItemId: example.mugLine, quantity: 2 },
      { orderItemId: example.teaLine, quantity: 1 },
    ])
    const asked = await ask({ id: example.order.id } as AfterSaleOrder, example.buyer, { items: [{ orderItemId: example.mugLine, quantity: 2 }] })
    expect(asked.statusCode).toBe(201)
    expect((await move(asked.json().id, 'approve')).statusCode).toBe(200)
    const stockBefore = await stockOf(t.app, example.mug.id)
    const refusedWithoutKey = await move(asked.json().id, 'receive', {})
    expect(refusedWithoutKey.statusCode).toBe(422)
    expect(refusedWithoutKey.json()).toEqual({ error: 'idempotency-key should not be empty' })
    const received = await move(asked.json().id, 'receive', {}, { 'idempotency-key': 'receipt-1' })
    expect(received.statusCode).toBe(200)
    expect(received.json()).toMatchObject({ status: 'received', refundId: expect.any(Number) })
    const order = await getOrder(t.app, t.admin, example.order.id)
    expect(order.refunds).toEqual([
      expect.objectContaining({
        id: received.json().refundId,
        amount: 35.98,
        taxAmount: 6.24,
        shippingAmount: 0,
        items: [{ orderItemId: example.mugLine, quantity: 2, amount: 35.98, tax: 6.24, restock: false }],
      }),
    ])
    expect(order.payment).toMatchObject({ status: 'partially_refunded', refundedAmount: 35.98 })
    // The receipt put the two mugs back; the refund did not put them back again.
    expect(await stockOf(t.app, example.mug.id)).toBe(stockBefore + 2)
    expect(await countRows(t.app, 'refunds')).toBe(1)
  })

  it('a refused refund leaves the return approved, the stock and the outbox as they were', async () => {
    const { order, ret } = await approvedReturn()
    const before = await snapshot(order)
    const refunds: ReturnRefunds = {
      refundReceived: async () => {
        throw new Error('refused')
      },
    }
    await expect(receiveReturn({ ...t.app.services.returns, refunds }, staff, ret.id, {}, 'key-2')).rejects.toThrow('refused')
    expect(await snapshot(order)).toEqual(before)
  })
})
