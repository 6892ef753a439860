import { afterEach, describe, expect, it } from 'vitest'
import { startWebhookReceiver } from '../fakes/webhook-receiver.js'
import { useTestApp } from '../helpers/app.js'
import { bearer } from '../helpers/factories.js'

// When the dispatcher looks for due rows after a write request: only when the request queued some (each look is a
// query). No poll in the way (an hour), so only the wakes after a request can deliver. On both databases.
const t = useTestApp({ WEBHOOKS_ALLOW_PRIVATE: 'true' }, { outbox: { pollMs: 3_600_000 } })

/** Lets the wake after a response (setImmediate, then the claim's query) run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 100))

afterEach(async () => {
  await t.app.outbox.drain()
  await t.app.db.deleteFrom('outbox').execute()
})

describe('the dispatcher after a write request', () => {
  it('claims nothing after writes that queued nothing (a product created and its price changed)', async () => {
    await settle()
    const before = t.app.outbox.claimsMade
    const created = await t.app.inject({ method: 'POST', url: '/products', headers: bearer(t.admin), payload: { name: 'Jarra', price: 12, stock: 5 } })
    expect(created.statusCode).toBe(201)
    const { variants } = created.json() as { variants: Array<{ id: number }> }
    const res = await t.app.inject({ method: 'PATCH', url: `/variants/${variants[0]!.id}`, headers: bearer(t.admin), payload: { price: 14.5 } })
    expect(res.statusCode).toBe(200)
    await settle()
    expect(await t.app.db.selectFrom('outbox').select('id').execute()).toEqual([])
    expect(t.app.outbox.claimsMade).toBe(before)
  })

  it('delivers what a write request queued right after it answers, without the poll', async () => {
    await settle()
    const before = t.app.outbox.claimsMade
    const res = await t.app.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: t.customer.email } })
    expect(res.statusCode).toBe(202)
    await expect
      .poll(async () => (await t.app.db.selectFrom('outbox').select('status').where('channel', '=', 'email').execute()).map((row) => row.status), {
        timeout: 5000,
      })
      .toEqual(['delivered'])
    expect(t.app.outbox.claimsMade).toBeGreaterThan(before)
  })

  it('sends a webhook delivery retried by an admin right after the answer (a row made due, not written)', async () => {
    const receiver = await startWebhookReceiver()
    try {
      const hook = await t.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: bearer(t.admin),
        payload: { url: receiver.url, events: ['product.created'] },
      })
      expect(hook.statusCode).toBe(201)
      const hookId = hook.json<{ id: number }>().id
      const created = await t.app.inject({ method: 'POST', url: '/products', headers: bearer(t.admin), payload: { name: 'Vaso', price: 3 } })
      expect(created.statusCode).toBe(201)
      await expect.poll(() => receiver.received.length, { timeout: 5000 }).toBe(1)
      await settle()
      const [delivery] = await t.app.db.selectFrom('outbox').select(['id', 'status']).where('webhook_id', '=', hookId).execute()
      expect(delivery?.status).toBe('delivered')
      const retried = await t.app.inject({ method: 'POST', url: `/webhooks/${hookId}/deliveries/${delivery!.id}/retry`, headers: bearer(t.admin) })
      expect(retried.statusCode).toBe(202)
      await expect.poll(() => receiver.received.length, { timeout: 5000 }).toBe(2)
    } finally {
      await receiver.close()
      await t.app.db.deleteFrom('webhooks').execute()
    }
  })

  it('delivers the row of a request that ran beside one that queued nothing', async () => {
    await settle()
    // Each request compares the count with its own start: the other one answering first changes nothing for it.
    const [reset, update] = await Promise.all([
      t.app.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: t.admin.email } }),
      t.app.inject({ method: 'PATCH', url: '/auth/me', headers: bearer(t.customer), payload: { name: 'Ana' } }),
    ])
    expect([reset.statusCode, update.statusCode]).toEqual([202, 200])
    await expect
      .poll(async () => (await t.app.db.selectFrom('outbox').select('status').where('channel', '=', 'email').execute()).map((row) => row.status), {
        timeout: 5000,
      })
      .toEqual(['delivered'])
  })
})
