import { randomUUID } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { useInstances } from '../helpers/shared-database.js'

// Two instances of the service on one database (a SQLite file, one PostgreSQL schema) share 1,000 outbox rows:
// each row is delivered once, by one of them (counted at the channel).

const ROWS = 1000
const { apps } = useInstances(2, 'outbox_instances', { app: { changeFeed: false, outbox: { pollMs: 50 } } })
const deliveries = new Map<string, string[]>()

beforeAll(() => {
  for (const [i, app] of apps.entries()) {
    const name = 'ab'[i]!
    app.outbox.registerChannel('webhook', async (message) => {
      deliveries.set(message.id, [...(deliveries.get(message.id) ?? []), name])
      // A receiver that takes a moment, so that the two instances overlap.
      await new Promise((resolve) => setTimeout(resolve, 1))
      return { ok: true, statusCode: 204 }
    })
  }
})

describe('two instances on one database', () => {
  it(`deliver ${ROWS} rows once each`, async () => {
    const db = apps[0]!.db
    const now = new Date().toISOString()
    const ids = Array.from({ length: ROWS }, () => randomUUID())
    // To four endpoints: with at most 2 deliveries per endpoint at a time, each instance fills its 8 webhook slots.
    for (let i = 0; i < ROWS; i += 200) {
      await db
        .insertInto('outbox')
        .values(
          ids.slice(i, i + 200).map((id, k) => ({
            id,
            channel: 'webhook' as const,
            webhook_id: (k % 4) + 1,
            event: 'product.updated',
            payload: '{}',
            status: 'pending' as const,
            next_attempt_at: now,
            created_at: now,
          })),
        )
        .execute()
    }
    for (const app of apps) app.outbox.wake()
    await expect
      .poll(
        async () =>
          Number(
            (
              await db
                .selectFrom('outbox')
                .select((eb) => eb.fn.countAll<number>().as('n'))
                .where('status', '=', 'delivered')
                .executeTakeFirstOrThrow()
            ).n,
          ),
        { timeout: 60_000, interval: 100 },
      )
      .toBe(ROWS)
    await Promise.all(apps.map((app) => app.outbox.drain()))

    expect(deliveries.size).toBe(ROWS)
    const twice = [...deliveries.values()].filter((by) => by.length > 1)
    expect(twice).toEqual([])
    const rows = await db.selectFrom('outbox').select(['attempts', 'locked_until', 'delivered_at']).execute()
    expect(rows.every((row) => row.attempts === 1 && row.locked_until === null && row.delivered_at !== null)).toBe(true)
  }, 90_000)
})
