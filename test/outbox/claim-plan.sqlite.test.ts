import { CompiledQuery, Kysely } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import type { Database } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { SqliteStatementDialect } from '../../src/db/sqlite-compiler.js'
import { claimDue, type LaneClaim } from '../../src/modules/outbox/outbox.repository.js'

let handle: DatabaseHandle | undefined
afterEach(async () => {
  await handle?.db.destroy()
  handle = undefined
})

/** The plan SQLite makes for the dispatcher's claim of `lanes`: the statement claimDue runs, explained. */
async function claimPlan(lanes: LaneClaim[]): Promise<string[]> {
  handle = connectDatabase('sqlite::memory:')
  await migrateToLatest(handle.db)
  const sqlite = handle.sqlite!
  // A backlog of 2,000 e-mails due, as a busy shop leaves behind a sale.
  const insert = sqlite.prepare(
    `insert into outbox (id, channel, event, payload, status, attempts, next_attempt_at, created_at)
     values (?, 'email', 'order.created', '{}', 'pending', 0, ?, ?)`,
  )
  sqlite.transaction(() => {
    for (let i = 0; i < 2000; i++) insert.run(`e-${String(i).padStart(5, '0')}`, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')
  })()
  sqlite.exec('analyze')
  const queries: CompiledQuery[] = []
  const logged = new Kysely<Database>({
    dialect: new SqliteStatementDialect({ database: sqlite }),
    log: (event) => {
      if (event.level === 'query') queries.push(event.query)
    },
  })
  await claimDue(logged, 'sqlite', { lanes, now: Date.parse('2026-06-01T00:00:00.000Z'), leaseMs: 60_000 })
  const [claim] = queries
  if (!claim) throw new Error('claimDue ran no statement')
  const plan = sqlite.prepare(`explain query plan ${claim.sql}`).all(...(claim.parameters as unknown[])) as Array<{ detail: string }>
  return plan.map((row) => row.detail)
}

describe('the dispatcher’s claim on SQLite', () => {
  it('a lane reads its own channel’s due rows through the index, not the other lane’s backlog', async () => {
    const webhookLane = await claimPlan([{ channel: 'webhook', limit: 8, perEndpoint: { cap: 4, inFlight: new Map() } }])
    // By channel, then time: the webhook lane seeks its channel's rows and finds none, whatever the e-mails' backlog.
    expect(
      webhookLane.some((detail) => /outbox_due \(channel=\? AND next_attempt_at<\?\)/.test(detail)),
      webhookLane.join('\n'),
    ).toBe(true)
    expect(
      webhookLane.some((detail) => /^SCAN outbox\b/.test(detail)),
      webhookLane.join('\n'),
    ).toBe(false)
    await handle?.db.destroy()
    const emailLane = await claimPlan([{ channel: 'email', limit: 8 }])
    expect(
      emailLane.some((detail) => /outbox_due \(channel=\? AND next_attempt_at<\?\)/.test(detail)),
      emailLane.join('\n'),
    ).toBe(true)
  })
})
