import { Webhook } from 'standardwebhooks'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'

// The whole path with the outbox's dispatcher on: event → outbox row in the change's transaction → signed POST.
// Its retry schedule is shortened (a first retry after 200 ms) so that a receiver that comes back is seen quickly.
const t = useTestApp({ WEBHOOKS_ALLOW_PRIVATE: 'true' }, { outbox: { pollMs: 50, retry: { firstDelayMs: 200, factor: 1, jitter: 0 } } })
let receiver: WebhookReceiver

beforeEach(async () => {
  await t.app.db.deleteFrom('webhooks').execute()
  await t.app.db.deleteFrom('outbox').execute()
  receiver = await startWebhookReceiver()
})
afterEach(async () => {
  await receiver.close()
})

async function createHook(url: string, events: string[]): Promise<{ id: number; secret: string }> {
  const res = await t.app.inject({ method: 'POST', url: '/webhooks', headers: bearer(t.admin), payload: { url, events } })
  expect(res.statusCode).toBe(201)
  return res.json()
}

/** A shop event, emitted as the services emit theirs: inside a transaction. */
async function emit(type: 'product.created' | 'stock.low', data: unknown) {
  await t.app.db.transaction().execute((trx) => t.app.outbox.emit(trx, { type, data }))
}

type Delivery = { id: string; status: string; attempts: number; lastStatusCode: number | null; lastError: string | null }

async function deliveries(webhookId: number): Promise<Delivery[]> {
  const res = await t.app.inject({ url: `/webhooks/${webhookId}/deliveries`, headers: bearer(t.admin) })
  expect(res.statusCode).toBe(200)
  return res.json()
}

/** The webhook's deliveries, once the newest one matches `expected` (or the test fails after 5 s). */
async function deliveriesOnce(webhookId: number, expected: Partial<Delivery>): Promise<Delivery[]> {
  return vi.waitFor(
    async () => {
      const list = await deliveries(webhookId)
      expect(list[0]).toMatchObject(expected)
      return list
    },
    { timeout: 5000, interval: 25 },
  )
}

describe('webhooks through the outbox', () => {
  it('delivers order.created for an order placed, and the status events for its moves, each to its subscriber', async () => {
    const hook = await createHook(receiver.url, ['order.created', 'order.paid', 'order.status_changed'])
    const customer = await makeUser(t.app)
    const product = await makeProduct(t.app, { name: 'Lámpara', priceCents: 1999, stock: 10 })
    await fillCart(t.app, customer.id, [{ productId: product.id, quantity: 2 }])
    const placed = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(customer) })
    expect(placed.statusCode).toBe(201)
    const order = placed.json()
    const [created] = await receiver.waitFor(1, 5000)
    const body = new Webhook(hook.secret).verify(created!.body, created!.headers as Record<string, string>)
    expect(body).toEqual({ id: created!.headers['webhook-id'], type: 'order.created', timestamp: expect.any(String), data: order })

    const paid = await t.app.inject({ method: 'PATCH', url: `/orders/${order.id}/status`, headers: bearer(t.admin), payload: { status: 'paid' } })
    expect(paid.statusCode).toBe(200)
    await receiver.waitFor(3, 5000)
    const types = receiver.received.map((request) => (JSON.parse(request.body) as { type: string }).type)
    expect(types.sort()).toEqual(['order.created', 'order.paid', 'order.status_changed'])
    const statusChanged = receiver.received.find((request) => request.body.includes('"order.status_changed"'))!
    expect((JSON.parse(statusChanged.body) as { data: unknown }).data).toEqual(paid.json())
    expect(new Set(receiver.received.map((request) => request.headers['webhook-id'])).size).toBe(3)
  })

  it('delivers an event to each subscribed webhook once, signed, and records it', async () => {
    const other = await startWebhookReceiver()
    try {
      const products = await createHook(receiver.url, ['product.created'])
      const stock = await createHook(other.url, ['stock.low'])
      await emit('product.created', { id: 5, name: 'Taza' })
      const [request] = await receiver.waitFor(1)
      expect(JSON.parse(request!.body)).toMatchObject({ type: 'product.created', data: { id: 5, name: 'Taza' } })
      expect(new Webhook(products.secret).verify(request!.body, request!.headers as Record<string, string>)).toMatchObject({ type: 'product.created' })
      const [delivery] = await deliveriesOnce(products.id, { status: 'delivered' })
      expect(delivery).toMatchObject({ id: request!.headers['webhook-id'], status: 'delivered', attempts: 1, lastStatusCode: 204, lastError: null })
      expect(other.received).toEqual([])
      expect(await deliveries(stock.id)).toEqual([])
    } finally {
      await other.close()
    }
  })

  it('keeps trying a receiver that is down, and delivers once it is back', async () => {
    const hook = await createHook(receiver.url, ['stock.low'])
    const port = receiver.port
    await receiver.close()
    await emit('stock.low', { id: 9, stock: 2 })
    const failed = await deliveriesOnce(hook.id, { status: 'pending', lastError: `connect ECONNREFUSED 127.0.0.1:${port}` })
    receiver = await startWebhookReceiver(port)
    const [request] = await receiver.waitFor(1)
    expect(request!.headers['webhook-id']).toBe(failed[0]!.id)
    const done = await deliveriesOnce(hook.id, { status: 'delivered' })
    expect(done[0]).toMatchObject({ status: 'delivered', lastError: null, lastStatusCode: 204 })
    expect(done[0]!.attempts).toBeGreaterThanOrEqual(2)
    expect(receiver.received).toHaveLength(1)
  })

  it('sends a delivery again on request, with the same id and body', async () => {
    const hook = await createHook(receiver.url, ['stock.low'])
    await emit('stock.low', { id: 3, stock: 1 })
    const [first] = await receiver.waitFor(1)
    const [delivery] = await deliveriesOnce(hook.id, { status: 'delivered' })
    const res = await t.app.inject({ method: 'POST', url: `/webhooks/${hook.id}/deliveries/${delivery!.id}/retry`, headers: bearer(t.admin) })
    expect(res.statusCode).toBe(202)
    expect(res.json()).toMatchObject({ id: delivery!.id, status: 'pending' })
    const [, second] = await receiver.waitFor(2)
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id'])
    expect(second!.body).toBe(first!.body)
    expect(() => new Webhook(hook.secret).verify(second!.body, second!.headers as Record<string, string>)).not.toThrow()
    await deliveriesOnce(hook.id, { status: 'delivered', attempts: 2 })
  })

  it('stops a deleted webhook’s pending deliveries', async () => {
    const hook = await createHook(receiver.url, ['stock.low'])
    const port = receiver.port
    await receiver.close()
    await emit('stock.low', { id: 4, stock: 0 })
    await deliveriesOnce(hook.id, { lastError: `connect ECONNREFUSED 127.0.0.1:${port}` })
    const res = await t.app.inject({ method: 'DELETE', url: `/webhooks/${hook.id}`, headers: bearer(t.admin) })
    expect(res.statusCode).toBe(200)
    receiver = await startWebhookReceiver(port)
    // Nothing of the webhook's is left to send: no row in the outbox, and (the drain waits for them) no attempt
    // under way. A surviving delivery would be one of these.
    await t.app.outbox.drain()
    expect(await t.app.db.selectFrom('outbox').selectAll().execute()).toEqual([])
    expect(receiver.received).toEqual([])
  })
})
