import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { signWebhook } from '../../src/modules/webhooks/webhook-delivery.js'
import { type DeliveryOptions, deliverWebhook, enqueueWebhookDeliveries } from '../../src/modules/webhooks/webhooks.service.js'
import { messages } from '../../src/shared/errors.js'
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js'
import { useTestApp } from '../helpers/app.js'
import { bearer } from '../helpers/factories.js'

// Each attempt is made here by hand (the dispatcher is off), as the dispatcher makes it: the row's id and parsed payload.
const t = useTestApp({ WEBHOOKS_ALLOW_PRIVATE: 'true' }, { outbox: { enabled: false } })
let receiver: WebhookReceiver
const allowed: DeliveryOptions = { allowPrivate: true }
beforeEach(async () => {
  await t.app.db.deleteFrom('outbox').execute()
  await t.app.db.deleteFrom('webhooks').execute()
  receiver = await startWebhookReceiver()
})
afterEach(async () => {
  await receiver.close()
})

async function createHook(url: string, events = ['order.paid']): Promise<{ id: number; secret: string }> {
  const res = await t.app.inject({ method: 'POST', url: '/webhooks', headers: bearer(t.admin), payload: { url, events } })
  expect(res.statusCode).toBe(201)
  return res.json()
}

/** Queues `order.paid` for every subscribed webhook and answers the delivery of `webhookId`. */
async function queue(webhookId: number, data: unknown = { id: 12, status: 'paid', total: 19.99 }) {
  await t.app.db.transaction().execute((trx) => enqueueWebhookDeliveries(trx, { type: 'order.paid', data }))
  return t.app.db.selectFrom('outbox').selectAll().where('webhook_id', '=', webhookId).executeTakeFirstOrThrow()
}

function attempt(row: { id: string; webhook_id: number | null; payload: string }, options: DeliveryOptions = allowed, signal = new AbortController().signal) {
  return deliverWebhook(t.app.db, { id: row.id, webhookId: row.webhook_id, payload: JSON.parse(row.payload) }, signal, options)
}

describe('a delivery', () => {
  it('POSTs the stored body, signed per Standard Webhooks: the receiver verifies it with the standardwebhooks package', async () => {
    const hook = await createHook(`${receiver.url}/in?src=shop`)
    const row = await queue(hook.id)
    const outcome = await attempt(row)
    expect(outcome).toEqual({ ok: true, statusCode: 204 })
    expect(receiver.received).toHaveLength(1)
    const [request] = receiver.received
    expect(request!.url).toBe('/in?src=shop')
    expect(request!.body).toBe(row.payload)
    expect(request!.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': row.id,
      'webhook-timestamp': expect.stringMatching(/^\d{10}$/),
      'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
    })
    expect(Math.abs(Number(request!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60)
    const verified = new Webhook(hook.secret).verify(request!.body, request!.headers as Record<string, string>)
    expect(verified).toEqual({ id: row.id, type: 'order.paid', timestamp: row.created_at, data: { id: 12, status: 'paid', total: 19.99 } })
    // Another secret does not verify it.
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`
    expect(() => new Webhook(other).verify(request!.body, request!.headers as Record<string, string>)).toThrow()
  })

  it('signs as the standardwebhooks package does', () => {
    const secret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`
    const body = '{"id":"msg_1","type":"order.paid","timestamp":"2026-11-25T10:00:00.000Z","data":{"id":1}}'
    expect(signWebhook(secret, 'msg_1', 1_764_064_800, body)).toBe(new Webhook(secret).sign('msg_1', new Date(1_764_064_800_000), body))
  })

  it('sends the same id and body on every attempt; only the timestamp and signature are the attempt’s', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    receiver.behave((response) => response.writeHead(503).end('busy'))
    expect(await attempt(row)).toEqual({ ok: false, statusCode: 503, error: 'HTTP 503: busy' })
    receiver.behave((response) => response.writeHead(200).end('ok'))
    expect(await attempt(row)).toEqual({ ok: true, statusCode: 200 })
    const [first, second] = receiver.received
    expect(second!.body).toBe(first!.body)
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id'])
    for (const request of receiver.received)
      expect(() => new Webhook(hook.secret).verify(request.body, request.headers as Record<string, string>)).not.toThrow()
  })

  it('counts any 2xx as delivered', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    for (const status of [200, 201, 202, 299]) {
      receiver.behave((response) => response.writeHead(status).end())
      expect(await attempt(row)).toEqual({ ok: true, statusCode: status })
    }
  })

  it('fails on a 500, with the status and the start of the answer', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    receiver.behave((response) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`Internal error\n${'x'.repeat(5000)}`))
    const outcome = await attempt(row)
    expect(outcome).toMatchObject({ ok: false, statusCode: 500 })
    expect(outcome.ok ? '' : outcome.error).toBe(`HTTP 500: Internal error ${'x'.repeat(185)}`)
    expect(outcome).not.toHaveProperty('permanent')
  })

  it('does not follow a redirect: a 3xx is a failure and its target gets nothing', async () => {
    const target = await startWebhookReceiver()
    try {
      const hook = await createHook(receiver.url)
      const row = await queue(hook.id)
      receiver.behave((response) => response.writeHead(307, { location: `${target.url}/elsewhere` }).end())
      expect(await attempt(row)).toEqual({ ok: false, statusCode: 307, error: 'HTTP 307' })
      expect(target.received).toEqual([])
    } finally {
      await target.close()
    }
  })

  it('gives up on a receiver that does not answer, within its bound', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    receiver.behave(() => {
      // Reads the request and never answers.
    })
    const outcome = await attempt(row, { ...allowed, timeoutMs: 300 })
    expect(outcome).toEqual({ ok: false, error: 'no answer within 300 ms' })
    expect(receiver.received).toHaveLength(1)
  })

  it('stops when the dispatcher’s signal aborts', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    receiver.behave(() => {})
    const controller = new AbortController()
    const attempted = attempt(row, allowed, controller.signal)
    // Aborted while the receiver holds the request.
    await receiver.waitFor(1)
    controller.abort()
    expect(await attempted).toEqual({ ok: false, error: 'aborted' })
  })

  /** A receiver answering `status` with a body of `total` bytes, written as fast as the connection takes it. */
  function streamHugeAnswer(status: number, total: number) {
    const state = { written: 0, closed: false }
    receiver.behave((response) => {
      response.writeHead(status, { 'content-type': 'text/plain' })
      const chunk = Buffer.alloc(64 * 1024, 120)
      response.on('close', () => {
        state.closed = true
      })
      const pump = () => {
        while (state.written < total && !state.closed) {
          state.written += chunk.length
          if (!response.write(chunk)) return void response.once('drain', pump)
        }
        if (!state.closed) response.end()
      }
      pump()
    })
    return state
  }

  it.each([200, 500])('drops the connection of a huge answer (%i): at most 64 KiB of it is read', async (status) => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    const total = 200 * 1024 * 1024
    const state = streamHugeAnswer(status, total)
    const outcome = await attempt(row)
    if (status === 200) expect(outcome).toEqual({ ok: true, statusCode: 200 })
    else expect(outcome).toEqual({ ok: false, statusCode: 500, error: `HTTP 500: ${'x'.repeat(200)}` })
    // The receiver sees the connection close (had the answer been read to its end, it would have written it all).
    await expect.poll(() => state.closed).toBe(true)
    expect(state.written).toBeLessThan(total)
  })

  it('bounds a failed answer whose body never ends by the attempt’s time', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    receiver.behave((response) => {
      response.writeHead(502)
      response.write('upstream down')
    })
    expect(await attempt(row, { ...allowed, timeoutMs: 300 })).toEqual({ ok: false, statusCode: 502, error: 'HTTP 502: upstream down' })
  })

  it('410 Gone fails the delivery for good and deactivates the webhook', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    receiver.behave((response) => response.writeHead(410).end())
    expect(await attempt(row)).toEqual({ ok: false, statusCode: 410, permanent: true, error: 'HTTP 410 (410 Gone: the webhook was deactivated)' })
    const webhook = await t.app.db.selectFrom('webhooks').select('active').where('id', '=', hook.id).executeTakeFirstOrThrow()
    expect(webhook.active).toBe(0)
  })

  it('of a deactivated or deleted webhook fails for good and sends nothing', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    await t.app.inject({ method: 'PATCH', url: `/webhooks/${hook.id}`, headers: bearer(t.admin), payload: { active: false } })
    expect(await attempt(row)).toEqual({ ok: false, permanent: true, error: messages.webhookInactive })
    await t.app.db.deleteFrom('webhooks').execute()
    expect(await attempt(row)).toEqual({ ok: false, permanent: true, error: messages.webhookNotFound })
    expect(receiver.received).toEqual([])
  })

  it('goes to the webhook’s URL as it is now', async () => {
    const moved = await startWebhookReceiver()
    try {
      const hook = await createHook(receiver.url)
      const row = await queue(hook.id)
      await t.app.inject({ method: 'PATCH', url: `/webhooks/${hook.id}`, headers: bearer(t.admin), payload: { url: `${moved.url}/new` } })
      expect(await attempt(row)).toEqual({ ok: true, statusCode: 204 })
      expect(receiver.received).toEqual([])
      expect(moved.received.map((request) => request.url)).toEqual(['/new'])
    } finally {
      await moved.close()
    }
  })

  it('reports a receiver that is down', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    await receiver.close()
    expect(await attempt(row)).toEqual({ ok: false, error: `connect ECONNREFUSED 127.0.0.1:${receiver.port}` })
  })
})

describe('the address rules at delivery', () => {
  it('checks the address again at each delivery: a webhook created while private addresses were allowed is refused once they are not', async () => {
    const hook = await createHook(receiver.url)
    const row = await queue(hook.id)
    const outcome = await attempt(row, { allowPrivate: false })
    expect(outcome).toEqual({ ok: false, error: 'refused: 127.0.0.1 is not a public address' })
    expect(receiver.received).toEqual([])
  })

  it('refuses a name that now resolves to a private address', async () => {
    const hook = await createHook(`http://hooks.example.com:${receiver.port}/`)
    const row = await queue(hook.id)
    const lookup = async () => [{ address: '127.0.0.1', family: 4 }]
    expect(await attempt(row, { allowPrivate: false, lookup })).toEqual({
      ok: false,
      error: 'refused: hooks.example.com resolves to 127.0.0.1, not a public address',
    })
    expect(receiver.received).toEqual([])
  })

  it('resolves the name once and connects to that address, with the name in the Host header', async () => {
    const hook = await createHook(`http://hooks.example.com:${receiver.port}/in`)
    const row = await queue(hook.id)
    const asked: string[] = []
    // A name whose next answers would differ (a rebinding DNS): only the first, checked one is used.
    const answers = ['127.0.0.1', '10.9.9.9', '10.9.9.9']
    const lookup = async (hostname: string) => {
      asked.push(hostname)
      return [{ address: answers[asked.length - 1]!, family: 4 }]
    }
    expect(await attempt(row, { allowPrivate: true, lookup })).toEqual({ ok: true, statusCode: 204 })
    expect(asked).toEqual(['hooks.example.com'])
    expect(receiver.received[0]!.headers.host).toBe(`hooks.example.com:${receiver.port}`)
  })

  it('records a name that does not resolve as a failed attempt, retried', async () => {
    const hook = await createHook('http://no-such-host.invalid/')
    const row = await queue(hook.id)
    expect(await attempt(row)).toEqual({ ok: false, error: 'DNS lookup of no-such-host.invalid failed: ENOTFOUND' })
  })
})

describe('a TLS receiver', () => {
  it('speaks TLS to the pinned address: a server there that does not is an ordinary, retried failure', async () => {
    // A plain HTTP server on the port: the TLS handshake fails (had the request gone out in plain HTTP, it would be a 200).
    const server = createServer((_request, response) => response.end())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as AddressInfo).port
    try {
      const hook = await createHook(`https://hooks.example.com:${port}/`)
      const row = await queue(hook.id)
      const outcome = await attempt(row, { allowPrivate: true, timeoutMs: 2000, lookup: async () => [{ address: '127.0.0.1', family: 4 }] })
      expect(outcome).toMatchObject({ ok: false, error: expect.stringMatching(/SSL|TLS|socket|EPROTO/i) })
      expect(outcome).not.toHaveProperty('permanent')
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
