import type { AddressInfo } from 'node:net'
import { buildTestApp } from '../helpers/app.js'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { type StripeFake, startStripeFake } from '../fakes/stripe-fake.js'
import type { TestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'

// Every line logged while a request is served carries its reqId, the X-Request-Id of its answer: the lines of
// the service's own code (a payment provider that does not answer, an intent it could not cancel) included.

interface Line {
  reqId?: string
  msg?: string
  level: number
  [key: string]: unknown
}

const lines: Line[] = []
let t: TestApp
let app: FastifyInstance
let fake: StripeFake

beforeAll(async () => {
  fake = await startStripeFake()
  // The service's own logger options, writing into memory: pino calls write() once per line.
  const stream = { write: (line: string) => void lines.push(JSON.parse(line) as Line) }
  // The outbox's dispatcher is off: its deliveries (an order's e-mail written as a file) run after the answer, apart
  // from any request, and would log into the window this test reads as one request's lines.
  t = await buildTestApp(
    { LOG_LEVEL: 'info', STRIPE_SECRET_KEY: 'sk_test_fake', STRIPE_API_URL: fake.url, ORDER_PAYMENT_TTL: '0' },
    { logger: { level: 'info', stream }, catalogCache: true, outbox: { enabled: false } },
  )
  app = t.app
  await app.ready()
})
afterAll(async () => {
  await t?.close()
  await fake?.close()
})

/** Waits for the "request completed" line of `reqId` (pino writes it when the answer is finished). */
async function completed(reqId: string): Promise<void> {
  await expect
    .poll(() => lines.some((l) => l.reqId === reqId && l.msg === 'request completed'), {
      timeout: 5000,
      interval: 10,
      message: `a "request completed" line for ${reqId}`,
    })
    .toBe(true)
}

/** Runs one request alone and returns its answer's id and every line logged from its start to its last line. */
async function logged(send: () => Promise<{ status: number; id: string }>): Promise<{ status: number; id: string; lines: Line[] }> {
  const from = lines.length
  const { status, id } = await send()
  expect(id).toMatch(/^[\w.:-]{1,64}$/)
  await completed(id)
  const own = lines.slice(from)
  expect(own.map((l) => l.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']))
  for (const line of own) expect(line.reqId, `${line.msg}`).toBe(id)
  return { status, id, lines: own }
}

const inject = (options: InjectOptions) => async () => {
  const res = await app.inject(options)
  return { status: res.statusCode, id: String(res.headers['x-request-id']), body: res.body }
}

describe('request ids in the log', () => {
  it("a payment the provider does not answer: its warning carries the request's id", async () => {
    const customer = await makeUser(app)
    const product = await makeProduct(app, { stock: 5 })
    await fillCart(app, customer.id, [{ productId: product.id, quantity: 1 }])
    const placed = await logged(inject({ method: 'POST', url: '/orders', headers: bearer(customer) }))
    expect(placed.status).toBe(201)
    const orderId = (await app.db.selectFrom('orders').select('id').where('user_id', '=', customer.id).executeTakeFirstOrThrow()).id

    fake.fail('*', { status: 500, type: 'api_error', message: 'down' }, 2)
    const failed = await logged(inject({ method: 'POST', url: `/orders/${orderId}/payment`, headers: bearer(customer) }))
    expect(failed.status).toBe(502)
    expect(failed.lines.map((l) => l.msg)).toContain('the payment provider did not answer')
    fake.heal()

    // With an intent, cancelling while Stripe is down: the intent could not be cancelled, logged under the request.
    expect((await app.inject({ method: 'POST', url: `/orders/${orderId}/payment`, headers: bearer(customer) })).statusCode).toBe(200)
    fake.fail('cancel-intent', { status: 500, type: 'api_error', message: 'down' }, 2)
    const cancelled = await logged(inject({ method: 'POST', url: `/orders/${orderId}/cancel`, headers: bearer(customer) }))
    expect(cancelled.status).toBe(200)
    expect(cancelled.lines.map((l) => l.msg)).toContain('could not cancel the payment intent')
    fake.heal()
    const order = await app.db.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirstOrThrow()
    expect(order.status).toBe('cancelled')
  })

  it('an unknown path and a refused body: one id per request, a fresh one each time', async () => {
    const a = await logged(inject({ url: '/no/such/path' }))
    const b = await logged(inject({ method: 'POST', url: '/auth/login', payload: { email: 'x' } }))
    expect([a.status, b.status]).toEqual([404, 422])
    expect(a.id).not.toBe(b.id)
  })

  it("a sane incoming X-Request-Id (a proxy's) is kept, in the answer and in every line; an unsafe one is replaced", async () => {
    const kept = await logged(inject({ url: '/health', headers: { 'x-request-id': 'edge-7f3a.1' } }))
    expect(kept.id).toBe('edge-7f3a.1')
    const replaced = await logged(inject({ url: '/health', headers: { 'x-request-id': 'bad id\u00e9' } }))
    expect(replaced.id).toMatch(/^[0-9a-f-]{36}$/)
    const res = await app.inject({ url: '/ready', headers: { 'x-request-id': 'x'.repeat(65) } })
    expect(res.headers['x-request-id']).not.toBe('x'.repeat(65))
  })

  it('a product read answered from the cache before Fastify logs one line, with the id it answered', async () => {
    const product = await makeProduct(app, { name: 'Cached lamp' })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/products/${product.id}`
    const fetchId = async () => {
      const res = await fetch(url, { signal: AbortSignal.timeout(5000) })
      expect(res.status).toBe(200)
      return { status: res.status, id: String(res.headers.get('x-request-id')) }
    }
    await logged(fetchId) // a miss: through Fastify
    // The next read is a hit before Fastify, unless the cache was emptied meanwhile (on PostgreSQL the change
    // feed's listener reconnecting under load empties it): then it is read again.
    let own: Line[] = []
    let hit = { status: 0, id: '' }
    await vi.waitFor(
      async () => {
        const before = app.catalogCache.hits().beforeFastify
        const from = lines.length
        hit = await fetchId()
        await completed(hit.id)
        own = lines.slice(from)
        expect(app.catalogCache.hits().beforeFastify, 'a hit before Fastify').toBeGreaterThan(before)
      },
      { timeout: 4000, interval: 20 },
    )
    expect(own).toEqual([expect.objectContaining({ reqId: hit.id, msg: 'request completed', cache: 'hit' })])
  })

  it('lines outside any request (start-up) have no reqId, and no line carries a token', () => {
    expect(lines.length).toBeGreaterThan(10)
    for (const line of lines) expect(JSON.stringify(line)).not.toMatch(/Bearer |eyJ[\w-]+\.eyJ/)
    expect(messages.paymentProviderUnavailable).toBe('El proveedor de pagos no responde')
  })
})
