import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type DeliveryOutcome, nextAttemptAt, type OutboxMessage, defaultRetrySchedule } from '../../src/modules/outbox/dispatcher.js'
import { createTestApp, useTestApp } from '../helpers/app.js'

// The dispatcher on its own, with a counting `webhook` channel and rows written straight into the outbox.

// No poll in the way: each test drains by hand. A short timeout for the hung receiver.
const t = useTestApp({}, { outbox: { pollMs: 3_600_000, timeoutMs: 200, concurrency: { webhook: 3 } } })
let deliver: (message: OutboxMessage, signal: AbortSignal) => Promise<DeliveryOutcome>
const seen: OutboxMessage[] = []

beforeAll(() => {
  t.app.outbox.registerChannel('webhook', (message, signal) => {
    seen.push(message)
    return deliver(message, signal)
  })
})
beforeEach(async () => {
  seen.length = 0
  deliver = async () => ({ ok: true, statusCode: 200 })
  await t.app.outbox.drain()
  await t.app.db.deleteFrom('outbox').execute()
})

async function queue(fields: { createdAt?: string; lockedUntil?: string | null; payload?: unknown } = {}) {
  const id = randomUUID()
  const createdAt = fields.createdAt ?? new Date().toISOString()
  await t.app.db
    .insertInto('outbox')
    .values({
      id,
      channel: 'webhook',
      webhook_id: 7,
      event: 'order.created',
      payload: JSON.stringify(fields.payload ?? { id, type: 'order.created' }),
      status: 'pending',
      next_attempt_at: createdAt,
      locked_until: fields.lockedUntil ?? null,
      created_at: createdAt,
    })
    .execute()
  return id
}

async function row(id: string) {
  return t.app.db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
}

describe('the outbox dispatcher', () => {
  it('delivers a due row once and records it', async () => {
    const id = await queue({ payload: { hello: 'world' } })
    expect(await t.app.outbox.drain()).toBe(1)
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject({ id, channel: 'webhook', webhookId: 7, event: 'order.created', payload: { hello: 'world' }, attempts: 0 })
    const after = await row(id)
    expect(after).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200, last_error: null, locked_until: null })
    expect(after.delivered_at).not.toBeNull()
    expect(await t.app.outbox.drain()).toBe(0)
    expect(seen).toHaveLength(1)
  })

  it('is woken by wake() without waiting for the poll', async () => {
    const id = await queue()
    t.app.outbox.wake()
    await expect.poll(async () => (await row(id)).status, { timeout: 5000 }).toBe('delivered')
  })

  it('keeps a failed row pending with its error, status code and next attempt within a minute', async () => {
    deliver = async () => ({ ok: false, error: 'HTTP 503', statusCode: 503 })
    const id = await queue()
    const before = Date.now()
    await t.app.outbox.drain()
    const after = await row(id)
    expect(after).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 503, last_error: 'HTTP 503', locked_until: null, delivered_at: null })
    const delay = Date.parse(after.next_attempt_at) - before
    expect(delay).toBeGreaterThan(20_000)
    expect(delay).toBeLessThan(60_000)
    // Not due yet: not tried again.
    await t.app.outbox.drain()
    expect(seen).toHaveLength(1)
  })

  it('fails a permanent failure at once', async () => {
    deliver = async () => ({ ok: false, error: 'HTTP 410', statusCode: 410, permanent: true })
    const id = await queue()
    await t.app.outbox.drain()
    expect(await row(id)).toMatchObject({ status: 'failed', attempts: 1, last_status_code: 410, last_error: 'HTTP 410' })
  })

  it('fails a message still undelivered 24 h after its creation', async () => {
    deliver = async () => ({ ok: false, error: 'connection refused' })
    const id = await queue({ createdAt: new Date(Date.now() - 24 * 3_600_000 - 1000).toISOString() })
    await t.app.outbox.drain()
    expect(await row(id)).toMatchObject({ status: 'failed', attempts: 1, last_error: 'connection refused', last_status_code: null })
  })

  it('counts a channel that throws as a failed attempt', async () => {
    deliver = async () => {
      throw new Error('socket hang up')
    }
    const id = await queue()
    await t.app.outbox.drain()
    expect(await row(id)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'socket hang up' })
  })

  it('bounds a delivery that never answers, and aborts its signal', async () => {
    let aborted = false
    deliver = (_message, signal) =>
      new Promise(() => {
        signal.addEventListener('abort', () => {
          aborted = true
        })
      })
    const id = await queue()
    await t.app.outbox.drain()
    expect(aborted).toBe(true)
    expect(await row(id)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'no answer within 200 ms' })
  })

  it('takes again a row whose lease ran out (a crashed instance), not one still held', async () => {
    const expired = await queue({ lockedUntil: new Date(Date.now() - 1000).toISOString() })
    const held = await queue({ lockedUntil: new Date(Date.now() + 60_000).toISOString() })
    await t.app.outbox.drain()
    expect(seen.map((message) => message.id)).toEqual([expired])
    expect((await row(held)).status).toBe('pending')
  })

  it('has no more deliveries in flight than its concurrency', async () => {
    let inFlight = 0
    let most = 0
    deliver = async () => {
      inFlight += 1
      most = Math.max(most, inFlight)
      await new Promise((resolve) => setTimeout(resolve, 10))
      inFlight -= 1
      return { ok: true }
    }
    for (let i = 0; i < 12; i++) await queue()
    expect(await t.app.outbox.drain()).toBe(12)
    expect(most).toBeGreaterThan(1)
    expect(most).toBeLessThanOrEqual(3)
    const counts = await t.app.db.selectFrom('outbox').select(['status']).execute()
    expect(counts.every((r) => r.status === 'delivered')).toBe(true)
  })

  it('fails a delivery for good, after one attempt, when its channel refuses it permanently (a webhook that is gone)', async () => {
    const other = await createTestApp({}, { outbox: { pollMs: 3_600_000 } })
    try {
      const id = randomUUID()
      const now = new Date().toISOString()
      await other.app.db
        .insertInto('outbox')
        .values({
          id,
          channel: 'webhook',
          webhook_id: 999_999,
          event: 'order.created',
          payload: '{}',
          status: 'pending',
          next_attempt_at: now,
          created_at: now,
        })
        .execute()
      expect(await other.app.outbox.drain()).toBe(1)
      expect(await other.app.db.selectFrom('outbox').select(['status', 'attempts', 'last_error']).where('id', '=', id).executeTakeFirst()).toEqual({
        status: 'failed',
        attempts: 1,
        last_error: 'Webhook no encontrado',
      })
    } finally {
      await other.close()
    }
  })
})

describe('the lanes: slots per channel, and per webhook endpoint', () => {
  // An app of its own, with 2 e-mail slots, 4 webhook slots and 2 per endpoint. Endpoints 7 and 17 hang until the
  // test lets them answer (a long timeout); every other endpoint, and every e-mail, is delivered at once.
  const HUNG = new Set([7, 17])
  const lanes = useTestApp({}, { outbox: { pollMs: 3_600_000, timeoutMs: 10_000, concurrency: { email: 2, webhook: 4 }, perEndpoint: 2, closeTimeoutMs: 100 } })
  let released: (() => void)[] = []
  const inFlight = new Map<number, number>()
  let most = 0

  beforeAll(() => {
    const channel = async (message: OutboxMessage, signal: AbortSignal): Promise<DeliveryOutcome> => {
      const endpoint = message.webhookId
      if (endpoint === null || !HUNG.has(endpoint)) return { ok: true }
      inFlight.set(endpoint, (inFlight.get(endpoint) ?? 0) + 1)
      most = Math.max(most, ...inFlight.values())
      await new Promise<void>((resolve) => {
        released.push(resolve)
        signal.addEventListener('abort', () => resolve(), { once: true })
      })
      inFlight.set(endpoint, (inFlight.get(endpoint) ?? 1) - 1)
      return { ok: true }
    }
    lanes.app.outbox.registerChannel('webhook', channel)
    lanes.app.outbox.registerChannel('email', channel)
  })
  // Run before the app's close (Vitest runs the after hooks in reverse): nothing left hanging for it to wait on.
  afterAll(() => {
    releaseAll()
  })
  beforeEach(async () => {
    releaseAll()
    await lanes.app.outbox.drain()
    await lanes.app.db.deleteFrom('outbox').execute()
    most = 0
  })

  function releaseAll() {
    const waiting = released
    released = []
    for (const release of waiting) release()
  }

  const hung = () => [...inFlight.values()].reduce((sum, n) => sum + n, 0)

  async function queueRow(channel: 'email' | 'webhook', webhookId: number | null) {
    const id = randomUUID()
    const now = new Date().toISOString()
    await lanes.app.db
      .insertInto('outbox')
      .values({ id, channel, webhook_id: webhookId, event: 'order.created', payload: '{}', status: 'pending', next_attempt_at: now, created_at: now })
      .execute()
    return id
  }

  const rowsOf = async (ids: string[]) => lanes.app.db.selectFrom('outbox').select(['id', 'status', 'locked_until']).where('id', 'in', ids).execute()

  it('starts at most 2 deliveries of an endpoint that hangs, does not claim its other rows, and serves the other endpoints meanwhile', async () => {
    const stuck: string[] = []
    for (let i = 0; i < 6; i++) stuck.push(await queueRow('webhook', 7))
    lanes.app.outbox.wake()
    await expect.poll(hung, { timeout: 5000, interval: 10 }).toBe(2)
    // The two it started are held (their lease); the other four are left as they were, claimable later or by another instance.
    const held = (await rowsOf(stuck)).filter((row) => row.locked_until !== null)
    expect(held).toHaveLength(2)
    expect((await rowsOf(stuck)).every((row) => row.status === 'pending')).toBe(true)

    const others = [await queueRow('webhook', 8), await queueRow('webhook', 9), await queueRow('webhook', 8), await queueRow('webhook', 8)]
    lanes.app.outbox.wake()
    await expect.poll(async () => (await rowsOf(others)).every((row) => row.status === 'delivered'), { timeout: 5000, interval: 10 }).toBe(true)
    expect(hung()).toBe(2)
    expect((await rowsOf(stuck)).filter((row) => row.locked_until !== null)).toEqual(held)

    // Endpoint 7 answers: its other rows go, still two at a time.
    await expect
      .poll(
        async () => {
          releaseAll()
          return (await rowsOf(stuck)).every((row) => row.status === 'delivered')
        },
        { timeout: 5000, interval: 10 },
      )
      .toBe(true)
    expect(most).toBe(2)
  })

  it('gives e-mails slots of their own: a webhook lane full of hung deliveries does not hold one back', async () => {
    for (let i = 0; i < 3; i++) {
      await queueRow('webhook', 7)
      await queueRow('webhook', 17)
    }
    lanes.app.outbox.wake()
    // Every webhook slot taken, by two endpoints that never answer.
    await expect.poll(hung, { timeout: 5000, interval: 10 }).toBe(4)
    const mail = await queueRow('email', null)
    lanes.app.outbox.wake()
    await expect.poll(async () => (await rowsOf([mail]))[0]?.status, { timeout: 5000, interval: 10 }).toBe('delivered')
    expect(hung()).toBe(4)
  })
})

describe('the retry schedule', () => {
  const created = '2026-01-01T00:00:00.000Z'
  const at = Date.parse(created)
  const delay = (failures: number, random: number) => Date.parse(nextAttemptAt(defaultRetrySchedule, failures, created, at, () => random) ?? '') - at

  it('makes the first retry within 1 min and the second within 5 min, jitter included', () => {
    expect(delay(1, 0)).toBe(22_500)
    expect(delay(1, 1)).toBe(37_500)
    expect(delay(2, 0)).toBe(90_000)
    expect(delay(2, 1)).toBe(150_000)
  })

  it('grows, is capped, never passes 24 h after creation, and gives up after', () => {
    expect(delay(10, 0.5)).toBe(4 * 3_600_000)
    const late = at + 23 * 3_600_000
    expect(nextAttemptAt(defaultRetrySchedule, 9, created, late, () => 0.5)).toBe('2026-01-02T00:00:00.000Z')
    expect(nextAttemptAt(defaultRetrySchedule, 10, created, at + 24 * 3_600_000, () => 0.5)).toBeNull()
  })
})
