import type { FastifyInstance } from 'fastify'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { ShopEvent } from '../../src/modules/outbox/dispatcher.js'
import { renderEmail } from '../../src/modules/outbox/mail/templates.js'
import { emailView } from '../../src/modules/outbox/mail/views.js'
import { nowIso } from '../../src/shared/time.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { queuedEmails } from '../helpers/outbox.js'
import { countRows, fillCart } from '../helpers/shop.js'

// Shipments: POST /orders/:id/fulfillments, PATCH /fulfillments/:id, POST /fulfillments/:id/delivered, what they do
// to the order (counters, status, fulfillmentStatus, fulfillments), their events, e-mails and timeline entries, and
// the status moves of PATCH /orders/:id/status that record or deliver shipments.

const t = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000' }, { outbox: { enabled: false } })
const events: ShopEvent[] = []

beforeAll(() => {
  t.app.outbox.onEvent(async (_trx, event) => {
    events.push(event)
    return []
  })
})
beforeEach(() => {
  events.length = 0
})

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const types = () => events.map((event) => event.type)

interface PlacedOrder {
  id: number
  user: TestUser
  /** The lines' ids: a lamp × 3, a clip × 2. */
  lamp: number
  clip: number
}

/** A customer's order of 3 lamps and 2 clips, moved to `paid` by default. */
async function placed(status: 'pending' | 'paid' = 'paid', customer?: TestUser): Promise<PlacedOrder> {
  const user = customer ?? (await makeUser(t.app, 'customer', 'Ana'))
  const lamp = await makeProduct(t.app, { name: 'Lámpara', stock: 20, priceCents: 1000 })
  const clip = await makeProduct(t.app, { name: 'Pinza', stock: 20, priceCents: 200 })
  await fillCart(t.app, user.id, [
    { productId: lamp.id, quantity: 3 },
    { productId: clip.id, quantity: 2 },
  ])
  const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
  expect(res.statusCode).toBe(201)
  const order = res.json() as { id: number; items: Array<{ id: number; productId: number }> }
  if (status === 'paid') expect((await setStatus(order.id, 'paid')).statusCode).toBe(200)
  events.length = 0
  return {
    id: order.id,
    user,
    lamp: order.items.find((item) => item.productId === lamp.id)!.id,
    clip: order.items.find((item) => item.productId === clip.id)!.id,
  }
}

const setStatus = (id: number, status: string) => t.app.inject({ method: 'PATCH', url: `/orders/${id}/status`, headers: bearer(t.admin), payload: { status } })

const ship = (orderId: number | string, payload?: unknown, user: TestUser | null = t.admin) =>
  t.app.inject({
    method: 'POST',
    url: `/orders/${orderId}/fulfillments`,
    headers: user ? bearer(user) : {},
    ...(payload === undefined ? {} : { payload: payload as object }),
  })

const patch = (id: number | string, payload: unknown, user: TestUser = t.admin) =>
  t.app.inject({ method: 'PATCH', url: `/fulfillments/${id}`, headers: bearer(user), payload: payload as object })

const delivered = (id: number | string, payload?: unknown, user: TestUser = t.admin) =>
  t.app.inject({
    method: 'POST',
    url: `/fulfillments/${id}/delivered`,
    headers: bearer(user),
    ...(payload === undefined ? {} : { payload: payload as object }),
  })

const getOrder = async (id: number, user: TestUser = t.admin) => (await t.app.inject({ url: `/orders/${id}`, headers: bearer(user) })).json()

async function counters(orderId: number) {
  const rows = await t.app.db
    .selectFrom('order_items')
    .select(['id', 'fulfilled_quantity', 'cancelled_quantity'])
    .where('order_id', '=', orderId)
    .orderBy('id')
    .execute()
  return rows.map((row) => [row.fulfilled_quantity, row.cancelled_quantity])
}

async function timeline(orderId: number) {
  const res = await t.app.inject({ url: `/orders/${orderId}/events`, headers: bearer(t.admin) })
  expect(res.statusCode).toBe(200)
  return res.json() as Array<{
    id: number
    type: string
    at: string
    actor: { type: string; id: number | null; name: string | null }
    data: Record<string, unknown>
  }>
}

/** Everything a refused request must leave as it was. */
async function snapshot(app: FastifyInstance, orderId: number) {
  return {
    counters: await counters(orderId),
    fulfillments: await countRows(app, 'fulfillments'),
    items: await countRows(app, 'fulfillment_items'),
    timeline: await countRows(app, 'order_events'),
    outbox: await countRows(app, 'outbox'),
    status: (await app.db.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirstOrThrow()).status,
  }
}

describe('POST /orders/:id/fulfillments', () => {
  it('ships the units given: 201 with the shipment; the lines count them; the first moves paid to shipped', async () => {
    const order = await placed()
    const res = await ship(order.id, {
      items: [{ orderItemId: order.lamp, quantity: 2 }],
      carrier: 'Correos',
      trackingNumber: 'PK123',
      trackingUrl: 'https://correos.es/t/PK123',
    })
    expect(res.statusCode).toBe(201)
    const fulfillment = res.json()
    expect(fulfillment).toEqual({
      id: expect.any(Number),
      orderId: order.id,
      items: [{ orderItemId: order.lamp, quantity: 2 }],
      carrier: 'Correos',
      trackingNumber: 'PK123',
      trackingUrl: 'https://correos.es/t/PK123',
      shippedAt: expect.stringMatching(ISO),
      deliveredAt: null,
      createdAt: fulfillment.shippedAt,
    })
    expect(await counters(order.id)).toEqual([
      [2, 0],
      [0, 0],
    ])
    const admin = await getOrder(order.id)
    expect(admin).toMatchObject({ status: 'shipped', fulfillmentStatus: 'partial', fulfillments: [fulfillment] })
    expect(admin.items.map((item: { fulfilledQuantity: number }) => item.fulfilledQuantity)).toEqual([2, 0])
    // The customer reads the same shipments.
    expect(await getOrder(order.id, order.user)).toMatchObject({ fulfillmentStatus: 'partial', fulfillments: [fulfillment] })

    // Events: the move (status_changed), then the shipment with the order as it now is.
    expect(types()).toEqual(['order.status_changed', 'order.fulfilled'])
    expect(events[1]).toEqual({
      type: 'order.fulfilled',
      data: { order: expect.objectContaining({ id: order.id, status: 'shipped', fulfillments: [fulfillment] }), fulfillment },
      notifyCustomer: true,
    })
    const mails = (await queuedEmails(t.app.db, order.user.email)).filter((m) => m.template === 'order-shipped')
    expect(mails).toEqual([
      {
        template: 'order-shipped',
        to: order.user.email,
        data: { name: 'Ana', order: expect.objectContaining({ id: order.id, status: 'shipped' }), fulfillment },
      },
    ])

    // A second shipment of the rest: the order stays shipped, now fulfilled.
    const rest = await ship(order.id, { carrier: 'SEUR' })
    expect(rest.statusCode).toBe(201)
    expect(rest.json().items).toEqual([
      { orderItemId: order.lamp, quantity: 1 },
      { orderItemId: order.clip, quantity: 2 },
    ])
    expect(await counters(order.id)).toEqual([
      [3, 0],
      [2, 0],
    ])
    const after = await getOrder(order.id)
    expect(after).toMatchObject({ status: 'shipped', fulfillmentStatus: 'fulfilled' })
    expect(after.fulfillments.map((f: { id: number }) => f.id)).toEqual([fulfillment.id, rest.json().id])
  })

  it('without items ships every unit left (quantity − fulfilled − cancelled); the same line twice ships the sum', async () => {
    const order = await placed()
    // One clip was refunded before it shipped: it will never ship.
    await t.app.db.updateTable('order_items').set({ cancelled_quantity: 1, refunded_quantity: 1 }).where('id', '=', order.clip).execute()
    const first = await ship(order.id, {
      items: [
        { orderItemId: order.lamp, quantity: 1 },
        { orderItemId: order.lamp, quantity: 1 },
      ],
    })
    expect(first.statusCode).toBe(201)
    expect(first.json().items).toEqual([{ orderItemId: order.lamp, quantity: 2 }])
    const rest = await ship(order.id)
    expect(rest.statusCode).toBe(201)
    expect(rest.json()).toMatchObject({
      items: [
        { orderItemId: order.lamp, quantity: 1 },
        { orderItemId: order.clip, quantity: 1 },
      ],
      carrier: null,
      trackingNumber: null,
      trackingUrl: null,
    })
    expect(await getOrder(order.id)).toMatchObject({ fulfillmentStatus: 'fulfilled' })

    const before = await snapshot(t.app, order.id)
    const none = await ship(order.id)
    expect(none.statusCode).toBe(409)
    expect(none.json()).toEqual({ error: 'No quedan artículos por enviar' })
    expect(await snapshot(t.app, order.id)).toEqual(before)
  })

  it('refuses an order that is not paid or shipped with 409, changing nothing', async () => {
    const pending = await placed('pending')
    let before = await snapshot(t.app, pending.id)
    const res = await ship(pending.id)
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'No se puede enviar una orden en estado pending' })
    expect(await snapshot(t.app, pending.id)).toEqual(before)

    const cancelled = await placed()
    expect((await setStatus(cancelled.id, 'cancelled')).statusCode).toBe(200)
    before = await snapshot(t.app, cancelled.id)
    const refused = await ship(cancelled.id, { items: [{ orderItemId: cancelled.lamp, quantity: 1 }] })
    expect(refused.statusCode).toBe(409)
    expect(refused.json()).toEqual({ error: 'No se puede enviar una orden en estado cancelled' })
    expect(await snapshot(t.app, cancelled.id)).toEqual(before)
    expect(events.filter((e) => e.type === 'order.fulfilled')).toEqual([])
  })

  it('refuses another order’s line with 422 and too many units with 409, changing nothing', async () => {
    const order = await placed()
    const other = await placed()
    const before = await snapshot(t.app, order.id)
    const foreign = await ship(order.id, {
      items: [
        { orderItemId: order.lamp, quantity: 1 },
        { orderItemId: other.clip, quantity: 1 },
      ],
    })
    expect(foreign.statusCode).toBe(422)
    expect(foreign.json()).toEqual({ error: `El artículo ${other.clip} no pertenece a la orden` })
    const tooMany = await ship(order.id, {
      items: [
        { orderItemId: order.lamp, quantity: 1 },
        { orderItemId: order.clip, quantity: 3 },
      ],
    })
    expect(tooMany.statusCode).toBe(409)
    expect(tooMany.json()).toEqual({ error: `Cantidad superior a la pendiente de envío para el artículo ${order.clip}` })
    expect(await snapshot(t.app, order.id)).toEqual(before)
    expect(events).toEqual([])
  })

  it.each([
    [{ items: [] }, 'items should not be empty'],
    [{ items: [{ orderItemId: 1, quantity: 0 }] }, 'quantity must not be less than 1'],
    [{ items: [{ orderItemId: 1 }] }, 'quantity should not be empty'],
    [{ carrier: 'x'.repeat(101) }, 'carrier must be shorter than or equal to 100 characters'],
    [{ trackingNumber: 'x'.repeat(101) }, 'trackingNumber must be shorter than or equal to 100 characters'],
    [{ trackingUrl: `https://t.example/${'x'.repeat(100)}` }, 'trackingUrl must be shorter than or equal to 100 characters'],
    [{ trackingUrl: 'correos.es/t/1' }, 'trackingUrl must be an absolute http or https URL'],
    [{ trackingUrl: 'ftp://correos.es/t/1' }, 'trackingUrl must be an absolute http or https URL'],
    [{ notifyCustomer: 'yes' }, 'notifyCustomer must be a boolean value'],
  ])('validates %j → 422 %s, before the order is looked up', async (payload, error) => {
    const res = await ship(999999, payload)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error })
  })

  it('answers 401 without a bearer, 403 for a customer, 404 for an unknown order, 422 for a bad id', async () => {
    const order = await placed()
    const before = await snapshot(t.app, order.id)
    expect((await ship(order.id, {}, null)).statusCode).toBe(401)
    const customer = await ship(order.id, {}, order.user)
    expect(customer.statusCode).toBe(403)
    expect(customer.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    const unknown = await ship(999999, {})
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toEqual({ error: 'Orden no encontrada' })
    const bad = await ship('abc', {})
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'id must be an integer number' })
    expect(await snapshot(t.app, order.id)).toEqual(before)
  })

  it('notifyCustomer: false sends no e-mail; the event is emitted all the same', async () => {
    const order = await placed()
    const res = await ship(order.id, { notifyCustomer: false })
    expect(res.statusCode).toBe(201)
    expect(types()).toEqual(['order.status_changed', 'order.fulfilled'])
    expect(events[1]?.notifyCustomer).toBe(false)
    expect((await queuedEmails(t.app.db, order.user.email)).map((m) => m.template)).not.toContain('order-shipped')
  })

  it('a guest is e-mailed at the order’s e-mail with a fresh link to the order', async () => {
    const product = await makeProduct(t.app, { name: 'Taza', stock: 8, priceCents: 1250 })
    const variant = await t.app.db.selectFrom('product_variants').select('id').where('product_id', '=', product.id).executeTakeFirstOrThrow()
    const now = nowIso()
    const order = await t.app.db
      .insertInto('orders')
      .values({ user_id: null, guest: 1, email: 'invitada@shop.test', total_cents: 2500, status: 'paid', created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    await t.app.db
      .insertInto('order_items')
      .values({ order_id: order.id, product_id: product.id, variant_id: variant.id, quantity: 2, price_cents: 1250, name: 'Taza' })
      .execute()
    const res = await ship(order.id, { carrier: 'GLS', trackingNumber: 'G1', trackingUrl: 'https://gls.example/t?n=G1&x=<b>' })
    expect(res.statusCode).toBe(201)
    const [mail] = await queuedEmails(t.app.db, 'invitada@shop.test')
    // The e-mail as sent: the subject, the shipment's lines, carrier and tracking (escaped in HTML), the link.
    const rendered = renderEmail('order-shipped', emailView(mail!, { currency: 'EUR', publicUrl: 'http://shop.test' }))
    expect(rendered.subject).toBe(`Tu pedido #${order.id} está en camino`)
    expect(rendered.text).toContain('En este envío:\n- 2 × Taza\n')
    expect(rendered.text).toContain('Transportista: GLS\nNúmero de seguimiento: G1\nSigue tu envío: https://gls.example/t?n=G1&x=<b>\n')
    expect(rendered.text).toContain(`Consulta tu pedido en cualquier momento en este enlace:\n${String(mail?.data.link)}\n`)
    expect(rendered.html).toContain('<li>2 × Taza</li>')
    expect(rendered.html).toContain('href="https://gls.example/t?n=G1&amp;x=&lt;b&gt;"')
    expect(mail).toMatchObject({ template: 'order-shipped', data: { fulfillment: res.json(), order: { id: order.id, guest: true } } })
    const link = mail?.data.link as string
    expect(link).toMatch(new RegExp(`/orders/${order.id}\\?token=${order.id}\\.`))
    const token = new URL(link).searchParams.get('token')!
    expect((await t.app.inject({ url: `/orders/${order.id}`, headers: { 'x-order-token': token } })).json()).toMatchObject({
      fulfillmentStatus: 'fulfilled',
    })
  })

  it('two shipments of the last units at once: one 201, one 409; the units ship once', async () => {
    const order = await placed()
    const results = await Promise.all([ship(order.id), ship(order.id)])
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409])
    expect(results.find((r) => r.statusCode === 409)?.json()).toEqual({ error: 'No quedan artículos por enviar' })
    expect(await counters(order.id)).toEqual([
      [3, 0],
      [2, 0],
    ])
    expect((await getOrder(order.id)).fulfillments).toHaveLength(1)
    expect(types().filter((type) => type === 'order.fulfilled')).toHaveLength(1)
  })

  it('two shipments of the same line’s last unit at once, with items: one 201, one 409', async () => {
    const order = await placed()
    expect((await ship(order.id, { items: [{ orderItemId: order.lamp, quantity: 2 }] })).statusCode).toBe(201)
    const one = { items: [{ orderItemId: order.lamp, quantity: 1 }] }
    const results = await Promise.all([ship(order.id, one), ship(order.id, one)])
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409])
    expect(results.find((r) => r.statusCode === 409)?.json()).toEqual({ error: `Cantidad superior a la pendiente de envío para el artículo ${order.lamp}` })
    expect(await counters(order.id)).toEqual([
      [3, 0],
      [0, 0],
    ])
  })
})

describe('GET /orders fulfillmentStatus', () => {
  it('every order carries fulfillmentStatus and fulfillments; admins filter by fulfillmentStatus', async () => {
    const customer = await makeUser(t.app)
    const none = await placed('paid', customer)
    const part = await placed('paid', customer)
    const all = await placed('paid', customer)
    expect((await ship(part.id, { items: [{ orderItemId: part.clip, quantity: 1 }] })).statusCode).toBe(201)
    expect((await ship(all.id)).statusCode).toBe(201)
    const list = async (query: string, user: TestUser = t.admin) => {
      const res = await t.app.inject({ url: `/orders?userId=${customer.id}&${query}`, headers: bearer(user) })
      expect(res.statusCode).toBe(200)
      return res.json() as Array<{ id: number; fulfillmentStatus: string; fulfillments: Array<{ orderId: number }> }>
    }
    const every = await list('')
    expect(every.map((o) => [o.id, o.fulfillmentStatus, o.fulfillments.length])).toEqual([
      [all.id, 'fulfilled', 1],
      [part.id, 'partial', 1],
      [none.id, 'unfulfilled', 0],
    ])
    expect(every.flatMap((o) => o.fulfillments.map((f) => f.orderId === o.id))).toEqual([true, true])
    expect((await list('fulfillmentStatus=unfulfilled')).map((o) => o.id)).toEqual([none.id])
    expect((await list('fulfillmentStatus=partial')).map((o) => o.id)).toEqual([part.id])
    expect((await list('fulfillmentStatus=fulfilled')).map((o) => o.id)).toEqual([all.id])
    // The customer's own list carries them too.
    expect((await list('', customer)).map((o) => o.fulfillmentStatus)).toEqual(['fulfilled', 'partial', 'unfulfilled'])
    const bad = await t.app.inject({ url: '/orders?fulfillmentStatus=done', headers: bearer(t.admin) })
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'fulfillmentStatus must be one of the following values: unfulfilled, partial, fulfilled' })
  })
})

describe('PATCH /fulfillments/:id and POST /fulfillments/:id/delivered', () => {
  it('PATCH changes the tracking (200 with the shipment), writes it on the timeline, e-mails only when asked', async () => {
    const order = await placed()
    const created = (await ship(order.id, { carrier: 'Correos' })).json()
    const mailsBefore = (await queuedEmails(t.app.db, order.user.email)).length
    const res = await patch(created.id, { trackingNumber: 'PK9', trackingUrl: 'http://t.example/PK9' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ...created, trackingNumber: 'PK9', trackingUrl: 'http://t.example/PK9' })
    expect((await queuedEmails(t.app.db, order.user.email)).length).toBe(mailsBefore)
    const again = await patch(created.id, { carrier: null, notifyCustomer: true })
    expect(again.statusCode).toBe(200)
    expect(again.json().carrier).toBeNull()
    const mails = await queuedEmails(t.app.db, order.user.email)
    expect(mails.at(-1)).toMatchObject({ template: 'order-shipped', data: { fulfillment: again.json() } })
    const entries = (await timeline(order.id)).filter((e) => e.type === 'fulfillment.updated')
    expect(entries.map((e) => e.data)).toEqual([
      { fulfillmentId: created.id, trackingNumber: 'PK9', trackingUrl: 'http://t.example/PK9' },
      { fulfillmentId: created.id, carrier: null },
    ])
  })

  it('refuses bad bodies with 422, an unknown shipment with 404, changing nothing', async () => {
    const order = await placed()
    const created = (await ship(order.id)).json()
    const before = await snapshot(t.app, order.id)
    const future = new Date(Date.now() + 3_600_000).toISOString()
    for (const [payload, error] of [
      [{ trackingUrl: 'nope' }, 'trackingUrl must be an absolute http or https URL'],
      [{ deliveredAt: 'yesterday' }, 'deliveredAt must be a valid ISO 8601 date string'],
      [{ deliveredAt: future }, 'deliveredAt must not be in the future'],
    ] as const) {
      const res = await patch(created.id, payload)
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error })
    }
    const late = await delivered(created.id, { deliveredAt: future })
    expect(late.statusCode).toBe(422)
    expect(late.json()).toEqual({ error: 'deliveredAt must not be in the future' })
    for (const res of [await patch(999999, { carrier: 'X' }), await delivered(999999)]) {
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({ error: 'Envío no encontrado' })
    }
    expect((await patch(created.id, { carrier: 'X' }, order.user)).statusCode).toBe(403)
    expect((await delivered(created.id, undefined, order.user)).statusCode).toBe(403)
    expect(await snapshot(t.app, order.id)).toEqual(before)
  })

  it('delivering every shipment of a fully shipped order delivers the order by itself (order.delivered); not before', async () => {
    const order = await placed()
    const first = (await ship(order.id, { items: [{ orderItemId: order.lamp, quantity: 3 }] })).json()
    // Delivered while part of the order is still to ship: the order stays shipped.
    const early = await delivered(first.id, { deliveredAt: '2026-01-02T10:00:00+01:00' })
    expect(early.statusCode).toBe(200)
    expect(early.json()).toEqual({ ...first, deliveredAt: '2026-01-02T09:00:00.000Z' })
    expect(await getOrder(order.id)).toMatchObject({ status: 'shipped', fulfillmentStatus: 'partial' })
    const second = (await ship(order.id)).json()
    expect(await getOrder(order.id)).toMatchObject({ status: 'shipped', fulfillmentStatus: 'fulfilled' })
    events.length = 0
    // No body at all: delivered now.
    const last = await delivered(second.id)
    expect(last.statusCode).toBe(200)
    expect(last.json().deliveredAt).toMatch(ISO)
    const after = await getOrder(order.id)
    expect(after).toMatchObject({ status: 'delivered', fulfillmentStatus: 'fulfilled' })
    expect(types()).toEqual(['order.status_changed', 'order.delivered'])
    expect(events[1]?.data).toEqual({ order: expect.objectContaining({ id: order.id, status: 'delivered' }) })
    const entries = await timeline(order.id)
    expect(entries.map((e) => e.type)).toEqual([
      'order.created',
      'order.status_changed',
      'order.fulfilled',
      'order.status_changed',
      'fulfillment.delivered',
      'order.fulfilled',
      'fulfillment.delivered',
      'order.status_changed',
    ])
    expect(entries.at(-1)).toMatchObject({ data: { from: 'shipped', to: 'delivered', cause: 'fulfillment' }, actor: { type: 'user', id: t.admin.id } })
    // Marking one delivered again sets its time; the order is already delivered.
    events.length = 0
    expect((await delivered(first.id, { deliveredAt: '2026-01-03T00:00:00Z' })).json().deliveredAt).toBe('2026-01-03T00:00:00.000Z')
    expect(types()).toEqual([])
  })

  it('PATCH deliveredAt delivers as /delivered does', async () => {
    const order = await placed()
    const created = (await ship(order.id)).json()
    const res = await patch(created.id, { deliveredAt: '2026-02-01T12:00:00Z' })
    expect(res.statusCode).toBe(200)
    expect(res.json().deliveredAt).toBe('2026-02-01T12:00:00.000Z')
    expect(await getOrder(order.id)).toMatchObject({ status: 'delivered' })
  })
})

describe('PATCH /orders/:id/status to shipped and delivered', () => {
  it('shipped records one untracked shipment of every unit left, e-mailed; delivered fills its deliveredAt', async () => {
    const order = await placed()
    const res = await setStatus(order.id, 'shipped')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ status: 'shipped', fulfillmentStatus: 'fulfilled' })
    const [fulfillment] = res.json().fulfillments
    expect(fulfillment).toMatchObject({
      items: [
        { orderItemId: order.lamp, quantity: 3 },
        { orderItemId: order.clip, quantity: 2 },
      ],
      carrier: null,
      trackingNumber: null,
      trackingUrl: null,
      deliveredAt: null,
    })
    expect(types()).toEqual(['order.fulfilled', 'order.status_changed'])
    expect((await queuedEmails(t.app.db, order.user.email)).filter((m) => m.template === 'order-shipped')).toHaveLength(1)

    const done = await setStatus(order.id, 'delivered')
    expect(done.statusCode).toBe(200)
    expect(done.json()).toMatchObject({ status: 'delivered', fulfillments: [{ id: fulfillment.id, deliveredAt: expect.stringMatching(ISO) }] })
    expect(types()).toEqual(['order.fulfilled', 'order.status_changed', 'order.status_changed', 'order.delivered'])
  })

  it('delivered while part of the order is still to ship is 409 and changes nothing', async () => {
    const order = await placed()
    const created = (await ship(order.id, { items: [{ orderItemId: order.clip, quantity: 2 }] })).json()
    const before = await snapshot(t.app, order.id)
    const res = await setStatus(order.id, 'delivered')
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'Quedan artículos por enviar' })
    expect(await snapshot(t.app, order.id)).toEqual(before)
    expect((await getOrder(order.id)).fulfillments).toEqual([created])
  })

  it('shipped with nothing left to ship (every unit refunded before shipping) is 409 and changes nothing', async () => {
    const order = await placed()
    await t.app.db
      .updateTable('order_items')
      .set((eb) => ({ cancelled_quantity: eb.ref('quantity') }))
      .where('order_id', '=', order.id)
      .execute()
    const before = await snapshot(t.app, order.id)
    const res = await setStatus(order.id, 'shipped')
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'No quedan artículos por enviar' })
    expect(await snapshot(t.app, order.id)).toEqual(before)
  })

  it('an order shipped before shipments were recorded is still delivered as before', async () => {
    const order = await placed()
    await t.app.db.updateTable('orders').set({ status: 'shipped' }).where('id', '=', order.id).execute()
    const res = await setStatus(order.id, 'delivered')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ status: 'delivered', fulfillmentStatus: 'unfulfilled', fulfillments: [] })
  })
})

describe('the order timeline', () => {
  it('GET /orders/:id/events: oldest first, {id, type, at, actor, data}; notes are 201 with their entry', async () => {
    const order = await placed()
    expect((await ship(order.id, { carrier: 'Correos' })).statusCode).toBe(201)
    const note = await t.app.inject({ method: 'POST', url: `/orders/${order.id}/notes`, headers: bearer(t.admin), payload: { text: 'Llamar antes' } })
    expect(note.statusCode).toBe(201)
    expect(note.json()).toEqual({
      id: expect.any(Number),
      type: 'note',
      at: expect.stringMatching(ISO),
      actor: { type: 'user', id: t.admin.id, name: 'Test User' },
      data: { text: 'Llamar antes' },
    })
    const entries = await timeline(order.id)
    expect(entries.map((e) => e.type)).toEqual(['order.created', 'order.status_changed', 'order.fulfilled', 'order.status_changed', 'note'])
    // Written by checkout, in the order's transaction: the customer placed it.
    expect(entries[0]).toMatchObject({ type: 'order.created', actor: { type: 'user' }, data: { total: expect.any(Number), currency: 'EUR', items: 2 } })
    expect(entries[1]).toEqual({
      id: expect.any(Number),
      type: 'order.status_changed',
      at: expect.stringMatching(ISO),
      actor: { type: 'user', id: t.admin.id, name: 'Test User' },
      data: { from: 'pending', to: 'paid', cause: 'admin' },
    })
    expect(entries[2]?.data).toEqual({ fulfillment: expect.objectContaining({ orderId: order.id, carrier: 'Correos' }) })
    expect(entries[3]?.data).toEqual({ from: 'paid', to: 'shipped', cause: 'fulfillment' })
    expect(entries.at(-1)).toEqual(note.json())
    expect(entries.map((e) => e.id)).toEqual([...entries.map((e) => e.id)].sort((a, b) => a - b))
  })

  it('refuses a note of 0 or more than 2000 characters (422), an unknown order (404), a customer (403), changing nothing', async () => {
    const order = await placed()
    const before = await countRows(t.app, 'order_events')
    const post = (payload: unknown, user: TestUser = t.admin, id: number = order.id) =>
      t.app.inject({ method: 'POST', url: `/orders/${id}/notes`, headers: bearer(user), payload: payload as object })
    for (const [payload, error] of [
      [{}, 'text should not be empty'],
      [{ text: '' }, 'text should not be empty'],
      [{ text: 'x'.repeat(2001) }, 'text must be shorter than or equal to 2000 characters'],
      [{ text: 5 }, 'text must be a string'],
    ] as const) {
      const res = await post(payload)
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error })
    }
    expect((await post({ text: 'x'.repeat(2000) })).statusCode).toBe(201)
    const unknown = await post({ text: 'hola' }, t.admin, 999999)
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toEqual({ error: 'Orden no encontrada' })
    expect((await post({ text: 'hola' }, order.user)).statusCode).toBe(403)
    expect(await countRows(t.app, 'order_events')).toBe(before + 1)
    const read = await t.app.inject({ url: '/orders/999999/events', headers: bearer(t.admin) })
    expect(read.statusCode).toBe(404)
    expect(read.json()).toEqual({ error: 'Orden no encontrada' })
    expect((await t.app.inject({ url: `/orders/${order.id}/events`, headers: bearer(order.user) })).statusCode).toBe(403)
    expect((await t.app.inject({ url: `/orders/${order.id}/events` })).statusCode).toBe(401)
  })
})
