import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { useInstances } from '../helpers/shared-database.js'

// Each event reads the webhooks' subscriptions from memory (webhooks.service.ts, subscriptionsCache). A webhook
// created, changed or deleted on one instance must reach the events of every other instance on the same database
// through the change feed; and without a live feed the subscriptions are read from the database every time.

const env = { WEBHOOKS_ALLOW_PRIVATE: 'true' }
// Two instances on one database, each with its change feed; and one with none (on a database of its own).
const fed = useInstances(2, 'webhook_subscriptions', { env, app: { outbox: { enabled: false } } })
const unfedInstance = useInstances(1, 'webhook_subscriptions_unfed', { env, app: { changeFeed: false, outbox: { enabled: false } } })
let admin: TestUser

beforeAll(async () => {
  admin = await makeUser(fed.apps[0]!, 'admin')
})

/** Emits product.created on `app`, as a service does (in a transaction), and returns the webhooks it queued deliveries for */
async function queuedFor(app: FastifyInstance): Promise<number[]> {
  const id = Math.floor(Math.random() * 1e9)
  await app.db.transaction().execute((trx) => app.outbox.emit(trx, { type: 'product.created', data: { id } }))
  const rows = await app.db.selectFrom('outbox').select(['webhook_id', 'payload']).where('channel', '=', 'webhook').execute()
  return rows
    .filter((row) => (JSON.parse(row.payload) as { data: { id: number } }).data.id === id)
    .map((row) => row.webhook_id as number)
    .sort((a, b) => a - b)
}

/** Creates a webhook through the API on `app`; returns its id. */
async function createHook(app: FastifyInstance, path: string, events: string[]): Promise<number> {
  const created = await app.inject({ method: 'POST', url: '/webhooks', headers: bearer(admin), payload: { url: `http://127.0.0.1:9${path}`, events } })
  expect(created.statusCode).toBe(201)
  return (created.json() as { id: number }).id
}

describe('the subscriptions every event reads', () => {
  it('follow a webhook created, changed and deleted on another instance, within a second', async () => {
    const [a, b] = fed.apps as [FastifyInstance, FastifyInstance]
    const [unfed] = unfedInstance.apps as [FastifyInstance]
    // b has read (and kept) the subscriptions: none yet.
    expect(await queuedFor(b)).toEqual([])

    const hook = await createHook(a, '/h', ['product.created'])
    // a itself at once; b once the change feed tells it.
    expect(await queuedFor(a)).toEqual([hook])
    await expect.poll(() => queuedFor(b), { timeout: 1000, interval: 20 }).toEqual([hook])

    await createHook(a, '/o', ['order.created'])
    // Each change on a, then what b's next events go to.
    const steps: [method: 'PATCH' | 'DELETE', payload: object | undefined, expected: number[]][] = [
      ['PATCH', { events: ['order.paid'] }, []],
      ['PATCH', { events: ['product.created'] }, [hook]],
      ['PATCH', { active: false }, []],
      ['PATCH', { active: true }, [hook]],
      ['DELETE', undefined, []],
    ]
    for (const [method, payload, expected] of steps) {
      const changed = await a.inject({ method, url: `/webhooks/${hook}`, headers: bearer(admin), ...(payload ? { payload } : {}) })
      expect(changed.statusCode).toBe(200)
      await expect.poll(() => queuedFor(b), { timeout: 1000, interval: 20 }).toEqual(expected)
    }

    // An instance without a live feed reads the database on every event: a row written behind its back counts at once.
    expect(await queuedFor(unfed)).toEqual([])
    const now = new Date().toISOString()
    const direct = await unfed.db
      .insertInto('webhooks')
      .values({
        url: 'http://127.0.0.1:9/d',
        events: '["product.created"]',
        description: '',
        active: 1,
        secret: 'whsec_AAAA',
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    expect(await queuedFor(unfed)).toEqual([direct.id])
  })

  it('are not touched by a retry (it changes a delivery only) nor by a refused change', async () => {
    const [a] = fed.apps as [FastifyInstance]
    const hook = await createHook(a, '/r', ['product.created'])
    expect(await queuedFor(a)).toContain(hook)
    const delivery = await a.db.selectFrom('outbox').select('id').where('webhook_id', '=', hook).executeTakeFirstOrThrow()
    // What a itself publishes (on SQLite, any other connection's commit also fires every topic, so a
    // subscriber would count those too).
    const publish = vi.spyOn(a.changeFeed, 'publish')
    try {
      const retried = await a.inject({ method: 'POST', url: `/webhooks/${hook}/deliveries/${delivery.id}/retry`, headers: bearer(admin) })
      expect(retried.statusCode).toBe(202)
      const refused = await a.inject({ method: 'PATCH', url: '/webhooks/999999', headers: bearer(admin), payload: { active: false } })
      expect(refused.statusCode).toBe(404)
      expect(publish.mock.calls).toEqual([])
      await createHook(a, '/s', ['product.created'])
      expect(publish.mock.calls).toEqual([['webhooks']])
    } finally {
      publish.mockRestore()
    }
  })
})
