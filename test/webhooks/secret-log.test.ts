import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js'
import { openTestDatabase, testConfig } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'

// A webhook's secret is in one answer only (its creation's): never in another answer, never in the log, at any level.

let app: FastifyInstance
let drop: () => Promise<void>
let receiver: WebhookReceiver
const lines: string[] = []

beforeAll(async () => {
  receiver = await startWebhookReceiver()
  const database = await openTestDatabase()
  drop = database.drop
  const stream = { write: (line: string) => void lines.push(line) }
  app = await buildApp(testConfig({ WEBHOOKS_ALLOW_PRIVATE: 'true' }), {
    database: database.handle,
    logger: { level: 'trace', stream },
    catalogCache: false,
    outbox: { pollMs: 50, retry: { firstDelayMs: 100, factor: 1, jitter: 0 } },
  })
  await app.ready()
})
afterAll(async () => {
  await app.close()
  await drop()
  await receiver.close()
})

describe('a webhook’s secret', () => {
  it('is shown once, and never logged: not on creation, reads, changes, deliveries or failed attempts', async () => {
    const admin = await makeUser(app, 'admin')
    const created = await app.inject({ method: 'POST', url: '/webhooks', headers: bearer(admin), payload: { url: receiver.url, events: ['stock.low'] } })
    expect(created.statusCode).toBe(201)
    const { id, secret } = created.json() as { id: number; secret: string }
    const key = secret.slice('whsec_'.length)
    const answers = [
      await app.inject({ url: '/webhooks', headers: bearer(admin) }),
      await app.inject({ url: `/webhooks/${id}`, headers: bearer(admin) }),
      await app.inject({ method: 'PATCH', url: `/webhooks/${id}`, headers: bearer(admin), payload: { description: 'ERP' } }),
    ]
    // One failed attempt (500), then a delivered one.
    let calls = 0
    receiver.behave((response) => {
      calls += 1
      response.writeHead(calls === 1 ? 500 : 204).end()
    })
    await app.db.transaction().execute((trx) => app.outbox.emit(trx, { type: 'stock.low', data: { id: 1, stock: 2 } }))
    await receiver.waitFor(2)
    answers.push(await app.inject({ url: `/webhooks/${id}/deliveries`, headers: bearer(admin) }))
    for (const answer of answers) {
      expect(answer.statusCode).toBe(200)
      expect(answer.body).not.toContain(key)
    }
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.some((line) => line.includes('delivery failed; will retry'))).toBe(true)
    for (const line of lines) expect(line).not.toContain(key)
  })

  it('a 410 Gone through the outbox fails the delivery for good, deactivates the webhook, and logs its id only', async () => {
    const admin = await makeUser(app, 'admin')
    const url = `${receiver.url}/gone?token=receiver-token-never-logged`
    const created = await app.inject({ method: 'POST', url: '/webhooks', headers: bearer(admin), payload: { url, events: ['product.deleted'] } })
    const { id } = created.json() as { id: number }
    receiver.behave((response) => response.writeHead(410).end())
    await app.db.transaction().execute((trx) => app.outbox.emit(trx, { type: 'product.deleted', data: { id: 8 } }))
    const row = () => app.db.selectFrom('outbox').selectAll().where('webhook_id', '=', id).executeTakeFirstOrThrow()
    await expect.poll(async () => (await row()).status, { timeout: 5000, interval: 25 }).not.toBe('pending')
    expect(await row()).toMatchObject({ status: 'failed', attempts: 1, last_status_code: 410 })
    expect((await app.db.selectFrom('webhooks').select('active').where('id', '=', id).executeTakeFirstOrThrow()).active).toBe(0)
    const line = lines.map((text) => JSON.parse(text) as Record<string, unknown>).find((entry) => String(entry.msg).includes('410 Gone'))
    expect(line).toMatchObject({ level: 40, webhookId: id })
    expect(lines.join('\n')).not.toContain('receiver-token-never-logged')
  })
})
