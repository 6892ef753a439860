import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSendThread, type SendThread } from '../../src/modules/outbox/send-thread.js'
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js'

// The thread that sends e-mails and webhook deliveries off the request loop (src/modules/outbox/send-thread.ts).

const secret = `whsec_${Buffer.from('a-secret-of-thirty-two-bytes-0000').toString('base64')}`
let dataDir: string
let receiver: WebhookReceiver
let thread: SendThread

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'send-thread-'))
  receiver = await startWebhookReceiver()
  thread = createSendThread({
    mail: { smtpUrl: null, from: 'Tienda <no-reply@shop.test>', timeoutMs: 2000, dataDir, currency: 'EUR', publicUrl: 'http://shop.test' },
  })
})
afterAll(async () => {
  await thread.close()
  await receiver.close()
  rmSync(dataDir, { recursive: true, force: true })
})

const webhookJob = (id: string, body: string, timeoutMs = 5000) => ({
  kind: 'webhook' as const,
  target: { url: `${receiver.url}/in`, secret },
  message: { id, body },
  options: { allowPrivate: true, timeoutMs },
})

describe('the sending thread', () => {
  it('posts a signed webhook delivery from another thread and answers with the outcome', async () => {
    const body = JSON.stringify({ id: 'msg_1', type: 'product.created', timestamp: new Date().toISOString(), data: { id: 1 } })
    const result = await thread.run(webhookJob('msg_1', body), new AbortController().signal)
    expect(result.outcome).toEqual({ ok: true, statusCode: 204 })
    const [received] = receiver.received.slice(-1)
    expect(received?.body).toBe(body)
    expect(new Webhook(secret).verify(received!.body, received!.headers as Record<string, string>)).toEqual(JSON.parse(body))
  })

  it('renders and writes an e-mail (no SMTP_URL: a .eml file) and says what to log of it, never the body', async () => {
    const createdAt = new Date().toISOString()
    const result = await thread.run(
      {
        kind: 'email',
        mail: { id: 'mail-1', createdAt, payload: { template: 'password-reset', to: 'ana@shop.test', data: { name: 'Ana', link: 'https://shop.test/r?t=x' } } },
      },
      new AbortController().signal,
    )
    expect(result.outcome).toEqual({ ok: true })
    expect(result.sent?.to).toBe('ana@shop.test')
    expect(result.sent?.file).toMatch(/^mail\/.*mail-1\.eml$/)
    expect(JSON.stringify(result)).not.toContain('t=x')
    expect(readdirSync(join(dataDir, 'mail'))).toContain(result.sent!.file!.slice('mail/'.length))
  })

  it('aborts a job there when its signal aborts: the connection to a receiver that never answers is closed', async () => {
    receiver.behave(() => {})
    try {
      const controller = new AbortController()
      const connectionsBefore = receiver.connections
      const pending = thread.run(webhookJob('msg_slow', '{}', 30_000), controller.signal)
      await expect.poll(() => receiver.connections, { timeout: 2000 }).toBe(connectionsBefore + 1)
      const started = Date.now()
      controller.abort()
      const result = await pending
      expect(result.outcome.ok).toBe(false)
      expect(Date.now() - started).toBeLessThan(1000)
    } finally {
      receiver.behave((response) => response.writeHead(204).end())
    }
  })

  it('fails the jobs still running when it is closed, and starts again for the next job', async () => {
    receiver.behave(() => {})
    const connectionsBefore = receiver.connections
    const pending = thread.run(webhookJob('msg_closed', '{}', 30_000), new AbortController().signal)
    // Closed while the job runs: its request is at the receiver, which never answers.
    await expect.poll(() => receiver.connections, { timeout: 2000 }).toBe(connectionsBefore + 1)
    await thread.close()
    expect((await pending).outcome).toEqual({ ok: false, error: 'the service was closing' })
    receiver.behave((response) => response.writeHead(204).end())
    const next = await thread.run(webhookJob('msg_after', '{}'), new AbortController().signal)
    expect(next.outcome).toEqual({ ok: true, statusCode: 204 })
  })
})
