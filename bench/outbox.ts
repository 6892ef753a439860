// The outbox bench: `npx tsx bench/outbox.ts [--db sqlite|postgres|both] [--quick]`.
// 1. Deliveries per second: N queued e-mails to a local SMTP server (smtp-server, in this process), and N rows to a
//    channel that only counts (the dispatcher's own cost: claim, record), on a SQLite file or a PostgreSQL schema.
// 2. Orders per second with their e-mails due and the dispatcher sending them meanwhile, against the same orders with
//    the dispatcher off (rows still written): alternate windows, the median of each; the target is ≥ 0.9×.
// PostgreSQL: TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), a throw-away schema.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase, type DatabaseHandle } from '../src/db/connect.js'
import { enqueueEmail } from '../src/modules/outbox/outbox.js'
import { startSmtpFake } from '../test/fakes/smtp-server.js'
import { startWebhookReceiver } from '../test/fakes/webhook-receiver.js'
import { bearer, makeUser, type TestUser } from '../test/helpers/factories.js'
import { createPgSchema } from '../test/helpers/pg-schema.js'
import { fillCart, makeProduct } from '../test/helpers/shop.js'

type Kind = 'sqlite' | 'postgres'

const { values } = parseArgs({ options: { db: { type: 'string', default: 'sqlite' }, quick: { type: 'boolean', default: false } } })
const kinds: Kind[] = values.db === 'both' ? ['sqlite', 'postgres'] : [values.db === 'postgres' ? 'postgres' : 'sqlite']
const ROWS = values.quick ? 300 : 2000
const WINDOW_MS = values.quick ? 1500 : 5000
const ROUNDS = 3

async function openDatabase(kind: Kind, dir: string): Promise<{ handle: DatabaseHandle; drop: () => Promise<void> }> {
  if (kind === 'sqlite') {
    const handle = connectDatabase(`sqlite:${join(dir, 'shop.db')}`)
    return { handle, drop: () => handle.db.destroy() }
  }
  const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const schema = await createPgSchema(url, 'bench_outbox')
  const handle = connectDatabase(url, { schema: schema.name })
  return {
    handle,
    drop: async () => {
      await handle.db.destroy()
      await schema.drop()
    },
  }
}

async function app(handle: DatabaseHandle, dir: string, env: Record<string, string>, enabled: boolean): Promise<FastifyInstance> {
  const config = loadConfig({
    NODE_ENV: 'test',
    JWT_SECRET: 'bench-secret-that-is-long-enough-for-hs256-0000',
    DATA_DIR: dir,
    PUBLIC_URL: 'http://shop.test',
    LOG_LEVEL: 'silent',
    ...env,
  })
  const built = await buildApp(config, { database: handle, logger: false, changeFeed: false, outbox: { enabled } })
  await built.ready()
  return built
}

async function deliveriesPerSecond(shop: FastifyInstance, rows: number, channel: 'email' | 'webhook'): Promise<number> {
  const now = new Date().toISOString()
  for (let i = 0; i < rows; i += 250) {
    const batch = Math.min(250, rows - i)
    if (channel === 'email') {
      await shop.db.transaction().execute((trx) =>
        enqueueEmail(
          trx,
          ...Array.from({ length: batch }, (_, n) => ({
            template: 'password-reset' as const,
            to: `u${i + n}@shop.test`,
            data: { name: 'U', link: 'https://shop.test/r' },
          })),
        ),
      )
    } else {
      await shop.db
        .insertInto('outbox')
        .values(
          Array.from({ length: batch }, () => ({
            id: randomUUID(),
            channel: 'webhook' as const,
            payload: '{}',
            status: 'pending' as const,
            next_attempt_at: now,
            created_at: now,
          })),
        )
        .execute()
    }
  }
  const started = performance.now()
  await shop.outbox.drain()
  return rows / ((performance.now() - started) / 1000)
}

async function ordersPerSecond(shop: FastifyInstance, users: TestUser[], productId: number): Promise<number> {
  let orders = 0
  const deadline = performance.now() + WINDOW_MS
  const started = performance.now()
  await Promise.all(
    users.map(async (user) => {
      while (performance.now() < deadline) {
        await fillCart(shop, user.id, [{ productId, quantity: 1 }])
        const res = await shop.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
        if (res.statusCode === 201) orders += 1
      }
    }),
  )
  return orders / ((performance.now() - started) / 1000)
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? Number.NaN

for (const kind of kinds) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-outbox-'))
  const smtp = await startSmtpFake()
  const { handle, drop } = await openDatabase(kind, dir)
  try {
    const mailing = await app(handle, dir, { SMTP_URL: smtp.url, ADMIN_NOTIFY_EMAIL: 'ops@shop.test' }, true)
    // The dispatcher's own cost: webhook rows to a channel that only counts.
    mailing.outbox.registerChannel('webhook', async () => ({ ok: true, statusCode: 204 }))
    const smtpRate = await deliveriesPerSecond(mailing, ROWS, 'email')
    const countingRate = await deliveriesPerSecond(mailing, ROWS * 5, 'webhook')
    console.log(`${kind}: ${ROWS} e-mails to a local SMTP server: ${smtpRate.toFixed(0)}/s (a pool of 4 connections, 8 in flight)`)
    console.log(`${kind}: ${ROWS * 5} rows to a counting channel: ${countingRate.toFixed(0)}/s (the dispatcher's own cost)`)
    await mailing.close()

    // Orders per second: a shop where each order has 3 webhooks (a local receiver) and 2 e-mails (the customer's and
    // ADMIN_NOTIFY_EMAIL's) due, delivered meanwhile, against a shop on its own database with neither webhooks nor
    // admin e-mail (its customer's "order received" e-mail is still queued: every shop sends that one).
    const receiver = await startWebhookReceiver()
    const plainDir = mkdtempSync(join(tmpdir(), 'bench-outbox-plain-'))
    const plainDb = await openDatabase(kind, plainDir)
    const plain = await app(plainDb.handle, dir, { SMTP_URL: smtp.url }, true)
    const busy = await app(handle, dir, { SMTP_URL: smtp.url, ADMIN_NOTIFY_EMAIL: 'ops@shop.test', WEBHOOKS_ALLOW_PRIVATE: 'true' }, true)
    const admin = await makeUser(busy, 'admin')
    for (let i = 0; i < 3; i++) {
      const res = await busy.inject({ method: 'POST', url: '/webhooks', headers: bearer(admin), payload: { url: receiver.url, events: ['order.created'] } })
      if (res.statusCode !== 201) throw new Error(`webhook: ${res.statusCode} ${res.body}`)
    }
    const busyUsers = await Promise.all(Array.from({ length: 8 }, () => makeUser(busy)))
    const plainUsers = await Promise.all(Array.from({ length: 8 }, () => makeUser(plain)))
    const busyProduct = await makeProduct(busy, { stock: 10_000_000 })
    const plainProduct = await makeProduct(plain, { stock: 10_000_000 })
    const withMail: number[] = []
    const without: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      without.push(await ordersPerSecond(plain, plainUsers, plainProduct.id))
      withMail.push(await ordersPerSecond(busy, busyUsers, busyProduct.id))
    }
    const ratio = median(withMail) / median(without)
    console.log(
      `${kind}: orders/s with 3 webhooks and 2 e-mails due per order, delivered meanwhile ${median(withMail).toFixed(0)} (${withMail.map((r) => r.toFixed(0)).join(', ')}), ` +
        `without them ${median(without).toFixed(0)} (${without.map((r) => r.toFixed(0)).join(', ')}): ${ratio.toFixed(2)}× (target ≥ 0.90: ${ratio >= 0.9 ? 'met' : 'NOT met'})`,
    )
    await busy.outbox.drain()
    console.log(`${kind}: ${receiver.received.length} webhook deliveries reached the receiver`)
    const pending = await busy.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow()
    console.log(`${kind}: ${smtp.received.length} messages reached the SMTP server, ${Number(pending.n)} still pending after the last drain`)
    await plain.close()
    await busy.close()
    await plainDb.drop()
    rmSync(plainDir, { recursive: true, force: true })
    await receiver.close()
  } finally {
    await drop()
    await smtp.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
