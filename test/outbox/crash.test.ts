import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { dialect, testConfig } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { createPgSchema, testDatabaseUrl, type PgSchema } from '../helpers/pg-schema.js'
import { fillCart } from '../helpers/shop.js'
import { type SmtpFake, startSmtpFake } from '../fakes/smtp-server.js'

// The process dies between the commit and the send: an order is committed (its e-mails queued), an instance of the
// service in a child process claims them and is killed (SIGKILL) the moment the SMTP server sees its MAIL FROM, before
// anything is sent. A new instance on the same database takes the rows once their lease runs out and delivers each
// e-mail exactly once. On SQLite (one file) and PostgreSQL (one schema).

let smtp: SmtpFake
let dataDir: string
let databaseUrl: string
let schema: PgSchema | undefined
let handle: DatabaseHandle
const children: ChildProcess[] = []

beforeAll(async () => {
  smtp = await startSmtpFake()
  dataDir = mkdtempSync(join(tmpdir(), 'shop-outbox-crash-'))
  if (dialect === 'postgres') {
    databaseUrl = testDatabaseUrl()
    schema = await createPgSchema(databaseUrl, 'test_outbox_crash')
    handle = connectDatabase(databaseUrl, { schema: schema.name, poolSize: 4 })
  } else {
    databaseUrl = `sqlite:${join(dataDir, 'shop.db')}`
    handle = connectDatabase(databaseUrl)
  }
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  await handle.db.destroy()
  await schema?.drop()
  await smtp.close()
  rmSync(dataDir, { recursive: true, force: true })
})

function startInstance(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/outbox/fixtures/outbox-instance.ts'], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-000',
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      PUBLIC_URL: 'http://shop.test',
      SMTP_URL: smtp.url,
      ADMIN_NOTIFY_EMAIL: 'ops@shop.test',
      LOG_LEVEL: process.env.TEST_CHILD_LOG ?? 'silent',
      TEST_OUTBOX_LEASE_MS: '6000',
      ...(schema ? { TEST_PG_SCHEMA: schema.name } : {}),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve(child)
    })
    child.once('exit', (code) => reject(new Error(`instance exited early (${code})`)))
  })
}

describe('a crash between the commit and the send', () => {
  it('is delivered after the restart, exactly once (slow: two service processes started with tsx, one killed)', async () => {
    // The change, committed by an instance whose dispatcher is off: its two e-mails wait in the outbox.
    const writer = await buildApp(testConfig({ ADMIN_NOTIFY_EMAIL: 'ops@shop.test' }, dataDir), {
      database: { ...handle, db: handle.db },
      logger: false,
      changeFeed: false,
      outbox: { enabled: false },
    })
    let orderId: number
    try {
      await writer.ready()
      const user = await makeUser(writer)
      const product = await makeProduct(writer, { stock: 10, priceCents: 1999 })
      await fillCart(writer, user.id, [{ productId: product.id, quantity: 1 }])
      const res = await writer.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
      expect(res.statusCode).toBe(201)
      orderId = (res.json() as { id: number }).id
    } finally {
      await writer.close()
    }
    const queued = await handle.db.selectFrom('outbox').select(['id', 'status']).execute()
    expect(queued).toHaveLength(2)

    // The first instance dies as soon as the SMTP server hears from it, before any message is sent.
    let killed = false
    let first: ChildProcess | undefined
    smtp.onMailFrom = () => {
      if (!killed && first) {
        killed = true
        first.kill('SIGKILL')
      }
      // Whatever it was saying never completes: the client is gone.
      return new Promise(() => {})
    }
    const starting = startInstance()
    first = children.at(-1)
    const exited = new Promise((resolve) => first?.once('exit', resolve))
    await starting.catch(() => undefined)
    await exited
    expect(killed).toBe(true)
    expect(smtp.received).toEqual([])
    const held = await handle.db.selectFrom('outbox').select(['status', 'locked_until']).execute()
    expect(held.every((row) => row.status === 'pending')).toBe(true)
    expect(held.some((row) => row.locked_until !== null)).toBe(true)

    // Restarted: the leases run out, the new instance takes the rows and delivers each once.
    smtp.onMailFrom = undefined
    const second = await startInstance()
    try {
      await expect
        // The 6 s lease, then a delivery; a start-up with tsx on a loaded 2-core runner alone can take 10 s.
        .poll(async () => (await handle.db.selectFrom('outbox').select('status').execute()).map((row) => row.status), { timeout: 45_000, interval: 100 })
        .toEqual(['delivered', 'delivered'])
    } finally {
      const done = new Promise((resolve) => second.once('exit', resolve))
      second.kill('SIGTERM')
      await done
    }
    // Both instances are gone, so nothing more can come: each message sent is on the SMTP server (it records a
    // message before it answers its DATA), a copy sent twice included.
    const subjects = smtp.subjects().sort()
    expect(subjects).toEqual([`Hemos recibido tu pedido #${orderId}`, `Nuevo pedido #${orderId} (19,99\u00a0€)`].sort())
    const ids = smtp.received.map((mail) => mail.parsed.messageId)
    expect(new Set(ids).size).toBe(2)
  }, 90_000)
})
