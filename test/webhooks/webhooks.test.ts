import { randomUUID } from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import { SHOP_EVENT_TYPES } from '../../src/modules/outbox/dispatcher.js'
import { WEBHOOK_EVENTS } from '../../src/modules/webhooks/webhooks.schemas.js'
import { enqueueWebhookDeliveries } from '../../src/modules/webhooks/webhooks.service.js'
import { messages } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { bearer, type TestUser } from '../helpers/factories.js'

// The dispatcher is off: the deliveries stay as queued, for the assertions to read.
const t = useTestApp({ WEBHOOKS_ALLOW_PRIVATE: 'true' }, { outbox: { enabled: false } })

beforeEach(async () => {
  await t.app.db.deleteFrom('outbox').execute()
  await t.app.db.deleteFrom('webhooks').execute()
})

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

function call(user: TestUser | undefined, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  return t.app.inject({ method, url, headers: user ? bearer(user) : {}, ...(payload === undefined ? {} : { payload }) })
}

async function create(payload: object = { url: 'https://hooks.example.com/shop', events: ['order.created'] }) {
  const res = await call(t.admin, 'POST', '/webhooks', payload)
  expect(res.statusCode).toBe(201)
  return res.json()
}

async function webhookRows() {
  return t.app.db.selectFrom('webhooks').selectAll().orderBy('id').execute()
}

/** Deliveries as the fan-out writes them, for the events given. */
async function emit(type: string, data: unknown = { id: 1 }) {
  return t.app.db.transaction().execute((trx) => enqueueWebhookDeliveries(trx, { type, data }))
}

describe('POST /webhooks', () => {
  it('creates an active webhook and shows its Standard Webhooks secret once', async () => {
    const res = await call(t.admin, 'POST', '/webhooks', { url: 'https://hooks.example.com/shop', events: ['order.created', 'order.paid'], description: 'ERP' })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.any(Number),
      url: 'https://hooks.example.com/shop',
      events: ['order.created', 'order.paid'],
      description: 'ERP',
      active: true,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      createdAt: expect.stringMatching(ISO),
      updatedAt: body.createdAt,
    })
    expect(Buffer.from(body.secret.slice('whsec_'.length), 'base64')).toHaveLength(32)
    const [row] = await webhookRows()
    expect(row).toMatchObject({ url: 'https://hooks.example.com/shop', events: '["order.created","order.paid"]', active: 1, secret: body.secret })
  })

  it('gives each webhook its own secret, an empty description by default, and each event once', async () => {
    const a = await create({ url: 'http://a.example.com', events: ['stock.low', 'stock.low', 'order.paid'] })
    const b = await create({ url: 'http://b.example.com', events: ['stock.low'] })
    expect(a.secret).not.toBe(b.secret)
    expect(a).toMatchObject({ description: '', events: ['stock.low', 'order.paid'] })
  })

  it('takes every event the shop emits', async () => {
    expect(WEBHOOK_EVENTS).toEqual(SHOP_EVENT_TYPES)
    const body = await create({ url: 'http://a.example.com', events: [...WEBHOOK_EVENTS] })
    expect(body.events).toEqual(WEBHOOK_EVENTS)
  })

  const eachEvent = `each value in events must be one of the following values: ${WEBHOOK_EVENTS.join(', ')}`
  it.each([
    [{ events: ['order.created'] }, 'url should not be empty'],
    [{ url: '', events: ['order.created'] }, 'url should not be empty'],
    [{ url: 42, events: ['order.created'] }, 'url must be a string'],
    [{ url: 'not a url', events: ['order.created'] }, messages.webhookUrlInvalid],
    [{ url: '/relative/path', events: ['order.created'] }, messages.webhookUrlInvalid],
    [{ url: 'ftp://files.example.com/x', events: ['order.created'] }, messages.webhookUrlInvalid],
    [{ url: 'javascript:alert(1)', events: ['order.created'] }, messages.webhookUrlInvalid],
    [{ url: ' https://hooks.example.com', events: ['order.created'] }, messages.webhookUrlInvalid],
    [{ url: 'https://user:pass@hooks.example.com/x', events: ['order.created'] }, messages.webhookUrlCredentials],
    [{ url: 'https://user@hooks.example.com/x', events: ['order.created'] }, messages.webhookUrlCredentials],
    [{ url: 'https://hooks.example.com' }, 'events should not be empty'],
    [{ url: 'https://hooks.example.com', events: [] }, 'events should not be empty'],
    [{ url: 'https://hooks.example.com', events: 'order.created' }, 'events must be an array'],
    [{ url: 'https://hooks.example.com', events: ['order.shipped'] }, eachEvent],
    [{ url: 'https://hooks.example.com', events: [7] }, eachEvent],
    [{ url: 'https://hooks.example.com', events: ['order.created'], description: 'bad\u0000' }, messages.controlCharacters('description')],
  ])('refuses %j with 422 and writes nothing', async (payload, message) => {
    const res = await call(t.admin, 'POST', '/webhooks', payload)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await webhookRows()).toEqual([])
  })

  it.each([
    [
      'a URL longer than 2048 characters',
      { url: `https://hooks.example.com/${'a'.repeat(2048)}`, events: ['order.created'] },
      'url must be shorter than or equal to 2048 characters',
    ],
    [
      'a description longer than 500 characters',
      { url: 'https://h.example.com', events: ['order.created'], description: 'x'.repeat(501) },
      'description must be shorter than or equal to 500 characters',
    ],
  ])('refuses %s with 422', async (_label, payload, message) => {
    const res = await call(t.admin, 'POST', '/webhooks', payload)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await webhookRows()).toEqual([])
  })

  it('makes its own secret: one sent by the client is ignored', async () => {
    const body = await create({ url: 'https://hooks.example.com', events: ['order.created'], secret: 'whsec_bWluZQ==' })
    expect(body.secret).not.toBe('whsec_bWluZQ==')
    expect((await webhookRows())[0]!.secret).toBe(body.secret)
  })

  it('is for admins only', async () => {
    const payload = { url: 'https://hooks.example.com', events: ['order.created'] }
    const anonymous = await call(undefined, 'POST', '/webhooks', payload)
    expect(anonymous.statusCode).toBe(401)
    expect(anonymous.json()).toEqual({ error: messages.noUser })
    const res = await call(t.customer, 'POST', '/webhooks', payload)
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: messages.requiresRoles(['admin']) })
    expect(await webhookRows()).toEqual([])
  })
})

describe('GET /webhooks and /webhooks/:id', () => {
  it('lists and shows webhooks without their secret', async () => {
    const a = await create({ url: 'http://a.example.com', events: ['order.created'] })
    const b = await create({ url: 'http://b.example.com', events: ['product.deleted'], description: 'B' })
    const list = await call(t.admin, 'GET', '/webhooks')
    expect(list.statusCode).toBe(200)
    const { secret: _a, ...publicA } = a
    const { secret: _b, ...publicB } = b
    expect(list.json()).toEqual([publicA, publicB])
    expect(list.body).not.toContain('whsec_')
    const one = await call(t.admin, 'GET', `/webhooks/${b.id}`)
    expect(one.statusCode).toBe(200)
    expect(one.json()).toEqual(publicB)
  })

  it('answers 404 for an unknown webhook, 422 for a malformed id, 403 for a customer', async () => {
    const res = await call(t.admin, 'GET', '/webhooks/999')
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: messages.webhookNotFound })
    const bad = await call(t.admin, 'GET', '/webhooks/abc')
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'id must be an integer number' })
    const customerList = await call(t.customer, 'GET', '/webhooks')
    expect(customerList.statusCode).toBe(403)
  })
})

describe('PATCH /webhooks/:id', () => {
  it('changes url, events, description and active, and never the secret', async () => {
    const created = await create()
    const res = await call(t.admin, 'PATCH', `/webhooks/${created.id}`, {
      url: 'http://other.example.com/in',
      events: ['product.created'],
      description: 'Nuevo',
      active: false,
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      id: created.id,
      url: 'http://other.example.com/in',
      events: ['product.created'],
      description: 'Nuevo',
      active: false,
      createdAt: created.createdAt,
      updatedAt: expect.stringMatching(ISO),
    })
    const [row] = await webhookRows()
    expect(row).toMatchObject({ active: 0, secret: created.secret, url: 'http://other.example.com/in' })
  })

  it.each([
    [{}, 'body must contain at least one field'],
    [{ url: 'ftp://x.example.com' }, messages.webhookUrlInvalid],
    [{ url: 'http://a:b@x.example.com' }, messages.webhookUrlCredentials],
    [{ events: [] }, 'events should not be empty'],
    [{ events: ['nope'] }, `each value in events must be one of the following values: ${WEBHOOK_EVENTS.join(', ')}`],
    [{ active: 'no' }, 'active must be a boolean value'],
    [{ secret: 'whsec_x' }, 'body must contain at least one field'],
  ])('refuses %j with 422 and changes nothing', async (payload, message) => {
    const created = await create()
    const before = await webhookRows()
    const res = await call(t.admin, 'PATCH', `/webhooks/${created.id}`, payload)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await webhookRows()).toEqual(before)
  })

  it('answers 404 for an unknown webhook once the fields are valid', async () => {
    const res = await call(t.admin, 'PATCH', '/webhooks/999', { active: false })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: messages.webhookNotFound })
    const invalid = await call(t.admin, 'PATCH', '/webhooks/999', { url: 'ftp://x' })
    expect(invalid.statusCode).toBe(422)
  })
})

describe('DELETE /webhooks/:id', () => {
  it('deletes the webhook and its deliveries, pending ones included; other webhooks keep theirs', async () => {
    const a = await create({ url: 'http://a.example.com', events: ['order.created'] })
    const b = await create({ url: 'http://b.example.com', events: ['order.created'] })
    expect(await emit('order.created')).toBe(2)
    const res = await call(t.admin, 'DELETE', `/webhooks/${a.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: messages.webhookDeleted })
    expect((await webhookRows()).map((row) => row.id)).toEqual([b.id])
    const rows = await t.app.db.selectFrom('outbox').select(['webhook_id', 'status']).execute()
    expect(rows).toEqual([{ webhook_id: b.id, status: 'pending' }])
    const again = await call(t.admin, 'DELETE', `/webhooks/${a.id}`)
    expect(again.statusCode).toBe(404)
    expect(again.json()).toEqual({ error: messages.webhookNotFound })
  })

  it('takes no body', async () => {
    const a = await create()
    const res = await call(t.admin, 'DELETE', `/webhooks/${a.id}`, { force: true })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'property force should not exist' })
    expect(await webhookRows()).toHaveLength(1)
  })
})

describe('the fan-out of an event', () => {
  it('queues one delivery per active webhook subscribed to the event, with the Standard Webhooks body', async () => {
    const orders = await create({ url: 'http://a.example.com', events: ['order.created', 'order.paid'] })
    await create({ url: 'http://b.example.com', events: ['product.created'] })
    const inactive = await create({ url: 'http://c.example.com', events: ['order.created'] })
    await call(t.admin, 'PATCH', `/webhooks/${inactive.id}`, { active: false })
    const data = { id: 7, total: 19.99, items: [{ productId: 1, quantity: 2 }] }
    expect(await emit('order.created', data)).toBe(1)
    const rows = await t.app.db.selectFrom('outbox').selectAll().execute()
    expect(rows).toHaveLength(1)
    const row = rows[0]!
    expect(row).toMatchObject({ channel: 'webhook', webhook_id: orders.id, event: 'order.created', status: 'pending', attempts: 0 })
    expect(row.id).toMatch(UUID)
    const payload = JSON.parse(row.payload)
    expect(payload).toEqual({ id: row.id, type: 'order.created', timestamp: row.created_at, data })
    expect(row.payload).toBe(JSON.stringify(payload))
    expect(row.next_attempt_at).toBe(row.created_at)
  })

  it('queues nothing when the transaction rolls back', async () => {
    await create()
    await expect(
      t.app.db.transaction().execute(async (trx) => {
        await enqueueWebhookDeliveries(trx, { type: 'order.created', data: { id: 1 } })
        throw new Error('the order failed')
      }),
    ).rejects.toThrow('the order failed')
    expect(await t.app.db.selectFrom('outbox').selectAll().execute()).toEqual([])
  })
})

describe('GET /webhooks/:id/deliveries', () => {
  it('lists the webhook’s deliveries newest first, with paging headers and a status filter', async () => {
    const hook = await create({ url: 'http://a.example.com', events: ['order.created'] })
    const other = await create({ url: 'http://b.example.com', events: ['order.created'] })
    for (let i = 0; i < 3; i += 1) {
      await emit('order.created', { id: i })
      await new Promise((resolve) => setTimeout(resolve, 3))
    }
    const all = await t.app.db.selectFrom('outbox').selectAll().where('webhook_id', '=', hook.id).orderBy('created_at', 'desc').execute()
    const delivered = all[2]!
    await t.app.db
      .updateTable('outbox')
      .set({ status: 'delivered', attempts: 1, last_status_code: 200, delivered_at: new Date().toISOString() })
      .where('id', '=', delivered.id)
      .execute()

    const res = await call(t.admin, 'GET', `/webhooks/${hook.id}/deliveries?limit=2`)
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-total-count']).toBe('3')
    expect(res.headers.link).toBe(`<http://shop.test/webhooks/${hook.id}/deliveries?limit=2&offset=2>; rel="next"`)
    expect(res.json()).toEqual(
      all.slice(0, 2).map((row) => ({
        id: row.id,
        event: 'order.created',
        status: 'pending',
        attempts: 0,
        lastStatusCode: null,
        lastError: null,
        nextAttemptAt: row.next_attempt_at,
        createdAt: row.created_at,
        deliveredAt: null,
      })),
    )

    const done = await call(t.admin, 'GET', `/webhooks/${hook.id}/deliveries?status=delivered`)
    expect(done.headers['x-total-count']).toBe('1')
    expect(done.json()).toEqual([
      expect.objectContaining({
        id: delivered.id,
        status: 'delivered',
        attempts: 1,
        lastStatusCode: 200,
        nextAttemptAt: null,
        deliveredAt: expect.stringMatching(ISO),
      }),
    ])
    const page2 = await call(t.admin, 'GET', `/webhooks/${other.id}/deliveries?offset=1&limit=1`)
    expect(page2.headers.link).toBe(
      `<http://shop.test/webhooks/${other.id}/deliveries?limit=1&offset=2>; rel="next", <http://shop.test/webhooks/${other.id}/deliveries?limit=1&offset=0>; rel="prev"`,
    )
  })

  it.each([
    ['?limit=0', 'limit must not be less than 1'],
    ['?limit=1001', 'limit must not be greater than 1000'],
    ['?offset=-1', 'offset must not be less than 0'],
    ['?status=sent', 'status must be one of the following values: pending, delivered, failed'],
  ])('refuses %s with 422', async (query, message) => {
    const hook = await create()
    const res = await call(t.admin, 'GET', `/webhooks/${hook.id}/deliveries${query}`)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
  })

  it('answers 404 for an unknown webhook', async () => {
    const res = await call(t.admin, 'GET', '/webhooks/999/deliveries')
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: messages.webhookNotFound })
  })
})

describe('POST /webhooks/:id/deliveries/:deliveryId/retry', () => {
  it('queues a failed delivery again, due now, with the same id and body', async () => {
    const hook = await create()
    await emit('order.created', { id: 3 })
    const before = (await t.app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow())!
    await t.app.db
      .updateTable('outbox')
      .set({ status: 'failed', attempts: 9, last_status_code: 500, last_error: 'HTTP 500', next_attempt_at: '2026-01-01T00:00:00.000Z' })
      .execute()
    const started = new Date().toISOString()
    const res = await call(t.admin, 'POST', `/webhooks/${hook.id}/deliveries/${before.id}/retry`)
    expect(res.statusCode).toBe(202)
    const body = res.json()
    expect(body).toMatchObject({ id: before.id, status: 'pending', attempts: 9, lastStatusCode: 500, lastError: 'HTTP 500', deliveredAt: null })
    expect(body.nextAttemptAt >= started).toBe(true)
    const after = await t.app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow()
    expect(after).toMatchObject({ id: before.id, payload: before.payload, status: 'pending', next_attempt_at: body.nextAttemptAt })
  })

  it('sends a delivered one again too', async () => {
    const hook = await create()
    await emit('order.created')
    const row = await t.app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow()
    await t.app.db.updateTable('outbox').set({ status: 'delivered', delivered_at: new Date().toISOString() }).execute()
    const res = await call(t.admin, 'POST', `/webhooks/${hook.id}/deliveries/${row.id}/retry`)
    expect(res.statusCode).toBe(202)
    expect(await t.app.db.selectFrom('outbox').select(['status', 'delivered_at']).executeTakeFirstOrThrow()).toEqual({ status: 'pending', delivered_at: null })
  })

  it('answers 404 for an unknown webhook or delivery, or another webhook’s delivery', async () => {
    const a = await create({ url: 'http://a.example.com', events: ['order.created'] })
    const b = await create({ url: 'http://b.example.com', events: ['order.paid'] })
    await emit('order.created')
    const row = await t.app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow()
    await t.app.db.updateTable('outbox').set({ status: 'failed' }).execute()
    const cases = [
      [`/webhooks/999/deliveries/${row.id}/retry`, 404, messages.webhookNotFound],
      [`/webhooks/${a.id}/deliveries/${randomUUID()}/retry`, 404, messages.webhookDeliveryNotFound],
      [`/webhooks/${b.id}/deliveries/${row.id}/retry`, 404, messages.webhookDeliveryNotFound],
    ] as const
    for (const [url, status, message] of cases) {
      const res = await call(t.admin, 'POST', url)
      expect(res.statusCode, url).toBe(status)
      expect(res.json()).toEqual({ error: message })
    }
    expect((await t.app.db.selectFrom('outbox').select('status').executeTakeFirstOrThrow()).status).toBe('failed')
  })

  it('answers 404 Entrega no encontrada for a delivery id that names no delivery, whatever its form', async () => {
    const hook = await create()
    await emit('order.created')
    const row = await t.app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow()
    const ids = [
      randomUUID(),
      'not-a-uuid',
      '12345',
      '0',
      '-1',
      '1e3',
      encodeURIComponent("' or 1=1 --"),
      encodeURIComponent(`${row.id} `),
      row.id.replaceAll('-', ''),
      // The longest path segment the router takes (256 characters).
      'x'.repeat(256),
    ]
    for (const id of ids) {
      const res = await call(t.admin, 'POST', `/webhooks/${hook.id}/deliveries/${id}/retry`)
      expect(res.statusCode, id).toBe(404)
      expect(res.json(), id).toEqual({ error: messages.webhookDeliveryNotFound })
      // The webhook is checked first, whatever the delivery id.
      const unknownHook = await call(t.admin, 'POST', `/webhooks/999999/deliveries/${id}/retry`)
      expect(unknownHook.statusCode, id).toBe(404)
      expect(unknownHook.json(), id).toEqual({ error: messages.webhookNotFound })
    }
    // Longer than any path segment may be (docs/api.md): the router answers before any route, as on every route.
    const tooLong = await call(t.admin, 'POST', `/webhooks/${hook.id}/deliveries/${'x'.repeat(300)}/retry`)
    expect(tooLong.statusCode).toBe(414)
    expect(tooLong.json()).toEqual({ error: messages.urlTooLong })
    // Nothing was touched, and the delivery's own id still works.
    expect(await t.app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow()).toEqual(row)
    expect((await call(t.admin, 'POST', `/webhooks/${hook.id}/deliveries/${row.id}/retry`)).statusCode).toBe(202)
  })

  it('refuses with 409 while the webhook is inactive, and changes nothing', async () => {
    const hook = await create()
    await emit('order.created')
    await call(t.admin, 'PATCH', `/webhooks/${hook.id}`, { active: false })
    await t.app.db.updateTable('outbox').set({ status: 'failed' }).execute()
    const row = await t.app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow()
    const res = await call(t.admin, 'POST', `/webhooks/${hook.id}/deliveries/${row.id}/retry`)
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: messages.webhookInactive })
    expect(await t.app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow()).toEqual(row)
  })

  it('is for admins only', async () => {
    const hook = await create()
    await emit('order.created')
    const row = await t.app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow()
    const res = await call(t.customer, 'POST', `/webhooks/${hook.id}/deliveries/${row.id}/retry`)
    expect(res.statusCode).toBe(403)
  })
})
