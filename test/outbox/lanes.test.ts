import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startSmtpFake } from '../fakes/smtp-server.js'
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js'
import { useTestApp } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'

// A webhook receiver that takes the connection and the request and never answers, with 40 deliveries queued for
// it: the e-mails and the other webhook endpoints must not wait behind it. The dispatcher's options are the
// production defaults (the webhooks' own 10 s bound included), except a short wait on close.
const HUNG_DELIVERIES = 40
// Generous for CI; the dispatcher's share for the e-mail takes milliseconds.
const WITHIN_MS = 5000

// Started first (its URL is the shop's SMTP_URL) and closed last: Vitest runs the after hooks in reverse.
const smtp = await startSmtpFake()
afterAll(async () => {
  await smtp.close()
})
const t = useTestApp({ SMTP_URL: smtp.url, WEBHOOKS_ALLOW_PRIVATE: 'true' }, { outbox: { closeTimeoutMs: 100 } })
let hung: WebhookReceiver
let healthy: WebhookReceiver
beforeEach(async () => {
  hung = await startWebhookReceiver()
  hung.behave(() => {})
  healthy = await startWebhookReceiver()
})
afterEach(async () => {
  // Drops the hung connections: their attempts fail, and nothing of them is left for the next test.
  await hung.close()
  await healthy.close()
  await t.app.db.deleteFrom('webhooks').execute()
  await t.app.db.deleteFrom('outbox').execute()
})

async function createHook(url: string, events: string[]): Promise<{ id: number }> {
  const res = await t.app.inject({ method: 'POST', url: '/webhooks', headers: bearer(t.admin), payload: { url, events } })
  expect(res.statusCode).toBe(201)
  return res.json()
}

/** Queues `count` deliveries of `type` to whoever subscribed to it, as the services emit: one transaction each. */
async function emitMany(type: 'product.created' | 'stock.low', count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await t.app.db.transaction().execute((trx) => t.app.outbox.emit(trx, { type, data: { id: i + 1, stock: 0 } }))
  }
}

/** 40 deliveries to the hung receiver, and the dispatcher already holding some of them open there. */
async function hangReceiver(): Promise<void> {
  await createHook(hung.url, ['product.created'])
  await emitMany('product.created', HUNG_DELIVERIES)
  t.app.outbox.wake()
  await expect.poll(() => hung.connections, { timeout: 5000, interval: 20 }).toBeGreaterThanOrEqual(2)
}

describe('one slow webhook receiver', () => {
  it('does not delay a password-reset e-mail', async () => {
    const user = await makeUser(t.app, 'customer', 'Ana')
    await hangReceiver()
    const res = await t.app.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: user.email } })
    expect(res.statusCode).toBe(202)
    await expect.poll(() => smtp.received.filter((mail) => mail.to.includes(user.email)).length, { timeout: WITHIN_MS, interval: 10 }).toBe(1)
    const [mail] = smtp.received.filter((m) => m.to.includes(user.email))
    expect(mail?.parsed.subject).toBe('Restablece tu contraseña')
    // The hung receiver holds no more than its share of the webhook slots.
    expect(hung.connections).toBeLessThanOrEqual(2)
  })

  it('does not hold back another, healthy endpoint', async () => {
    await createHook(healthy.url, ['stock.low'])
    await hangReceiver()
    await emitMany('stock.low', 5)
    t.app.outbox.wake()
    await expect.poll(() => healthy.received.length, { timeout: WITHIN_MS, interval: 10 }).toBe(5)
    expect(healthy.received.every((request) => JSON.parse(request.body).type === 'stock.low')).toBe(true)
    expect(hung.connections).toBeLessThanOrEqual(2)
  })
})
