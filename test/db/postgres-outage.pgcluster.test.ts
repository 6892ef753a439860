import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { testConfig } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { findPostgresBinaries, freePort, startSilentProxy, startThrowawayPostgres, type ThrowawayPostgres } from '../helpers/throwaway-postgres.js'

// Runs once (not per dialect): it brings its own PostgreSQL, which it stops, starts and silences.
const binaries = findPostgresBinaries()
const skipReason = 'skip' in binaries ? binaries.skip : undefined
if (skipReason) console.warn(`test/db/postgres-outage: skipped, ${skipReason}`)

const NOT_READY = { error: 'La base de datos no responde' }
// Short waits so the silent-database cases take seconds; /ready's own bound (1.5 s) is not one of them.
const TIMEOUTS = { connectTimeoutMs: 1000, statementTimeoutMs: 1000 }

interface Service {
  app: FastifyInstance
  handle: DatabaseHandle
  logs: () => { level: number; msg: string }[]
  close: () => Promise<void>
}

/** The service on `url`; its connections are named `applicationName` (the listener's `<name>-listener`). */
async function openService(url: string, applicationName: string): Promise<Service> {
  const lines: string[] = []
  const handle = connectDatabase(`${url}?application_name=${applicationName}`, { poolSize: 4, timeouts: TIMEOUTS })
  const app = await buildApp(testConfig(), {
    database: handle,
    catalogCache: true,
    logger: { level: 'info', stream: { write: (line: string) => lines.push(line) } },
  })
  await app.ready()
  return {
    app,
    handle,
    logs: () => lines.map((line) => JSON.parse(line) as { level: number; msg: string }),
    close: async () => {
      await app.close()
      await handle.db.destroy()
    },
  }
}

/** Waits until `condition` holds (asked every 20 ms), failing after `timeoutMs`; returns the milliseconds it took. */
async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const started = performance.now()
  await expect.poll(condition, { timeout: timeoutMs, interval: 20, message: `not within ${timeoutMs} ms: ${what}` }).toBe(true)
  return performance.now() - started
}

/** A request that must answer within `deadlineMs`: a hang fails the test instead of stalling it. */
async function timedGet(app: FastifyInstance, url: string, deadlineMs = 5000, headers: Record<string, string> = {}) {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  const response = await Promise.race([
    app.inject({ method: 'GET', url, headers }),
    new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`GET ${url} did not answer within ${deadlineMs} ms`)), deadlineMs)
    }),
  ]).finally(() => clearTimeout(timer))
  return { status: response.statusCode, body: response.json() as unknown, ms: performance.now() - started }
}

async function adminQuery(url: string, text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await client.query(text)
  } finally {
    await client.end()
  }
}

describe.skipIf(skipReason !== undefined)('PostgreSQL away and back (a throw-away cluster)', () => {
  let cluster: ThrowawayPostgres
  let databases = 0
  /** A new database on the throw-away cluster, so the cases do not see each other's rows. */
  const newDatabase = async () => {
    databases += 1
    const name = `outage_${databases}`
    await adminQuery(cluster.url, `create database ${name}`)
    return cluster.url.replace(/\/postgres$/, `/${name}`)
  }

  beforeAll(async () => {
    if ('bin' in binaries) cluster = await startThrowawayPostgres(binaries.bin)
  }, 60_000)
  afterAll(async () => {
    await cluster?.destroy()
  })

  it('a restart: fast 503s with the documented body while it is down, /health 200, everything back within a second', async () => {
    const service = await openService(await newDatabase(), 'outage-restart')
    const { app } = service
    try {
      const admin = await makeUser(app, 'admin')
      await waitFor(() => app.changeFeed.live, 2000, 'change feed live')
      expect((await timedGet(app, '/products')).status).toBe(200)
      const before = app.catalogCache.hits().total
      expect((await timedGet(app, '/products')).status).toBe(200)
      expect(app.catalogCache.hits().total).toBe(before + 1)

      await cluster.stop()
      // The listener hears the shutdown; caches stop answering, since other instances' writes would go unheard.
      await waitFor(() => !app.changeFeed.live, 2000, 'change feed deaf')

      const health = await timedGet(app, '/health')
      expect(health).toMatchObject({ status: 200, body: { status: 'ok' } })
      for (const url of ['/ready', '/categories', '/products', '/auth/me']) {
        const answer = await timedGet(app, url, 5000, bearer(admin))
        expect({ url, status: answer.status, body: answer.body }).toEqual({ url, status: 503, body: NOT_READY })
        expect(answer.ms).toBeLessThan(300)
      }
      const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { email: admin.email, password: admin.password } })
      expect(login.statusCode).toBe(503)
      expect(login.json()).toEqual(NOT_READY)

      await cluster.start()
      const backIn = await waitFor(
        async () => (await timedGet(app, '/categories')).status === 200 && (await timedGet(app, '/ready')).status === 200 && app.changeFeed.live,
        3000,
        'service working again',
      )
      expect(backIn).toBeLessThan(1000)

      // Writes work, and the cache is used again.
      const created = await app.inject({
        method: 'POST',
        url: '/categories',
        headers: bearer(admin),
        payload: { name: 'Back', description: 'after the restart' },
      })
      expect(created.statusCode).toBe(201)
      expect((await timedGet(app, '/products')).status).toBe(200)
      const afterRestart = app.catalogCache.hits().total
      expect((await timedGet(app, '/products')).status).toBe(200)
      expect(app.catalogCache.hits().total).toBe(afterRestart + 1)

      // Said once when lost and once when back, not per request.
      const messages = service.logs().map((line) => line.msg)
      expect(messages.filter((msg) => msg.startsWith('database lost'))).toHaveLength(1)
      expect(messages.filter((msg) => msg === 'database is back')).toHaveLength(1)
      expect(messages.filter((msg) => msg.startsWith('change feed: listener lost'))).toHaveLength(1)
    } finally {
      await service.close()
    }
  })

  it('pg_terminate_backend on every connection of the service: it stays up and reconnects, no outage declared', async () => {
    const service = await openService(await newDatabase(), 'outage-terminate')
    const { app } = service
    try {
      // Fill the pool with idle connections, then end them all, and the listener's.
      await Promise.all(Array.from({ length: 4 }, () => timedGet(app, '/categories')))
      await waitFor(() => app.changeFeed.live, 2000, 'change feed live')
      const { rows } = await adminQuery(
        cluster.url,
        "select pg_terminate_backend(pid) as ended from pg_stat_activity where application_name like 'outage-terminate%'",
      )
      expect(rows.length).toBeGreaterThanOrEqual(2)

      await waitFor(() => !app.changeFeed.live, 2000, 'listener lost')
      const back = await waitFor(() => app.changeFeed.live, 2000, 'listener back')
      expect(back).toBeLessThan(1000)
      expect(await timedGet(app, '/categories')).toMatchObject({ status: 200 })
      expect(await timedGet(app, '/ready')).toMatchObject({ status: 200, body: { status: 'ready' } })
      expect(app.databaseStatus.available).toBe(true)
      expect(service.logs().filter((line) => line.msg.startsWith('database lost'))).toHaveLength(0)
    } finally {
      await service.close()
    }
  })

  it("a change is told to other instances while this instance's listener is reconnecting", async () => {
    const url = await newDatabase()
    const writer = await openService(url, 'outage-notify-a')
    const reader = await openService(url, 'outage-notify-b')
    try {
      let heard = 0
      reader.app.changeFeed.subscribe('catalog', () => {
        heard += 1
      })
      await waitFor(() => writer.app.changeFeed.live && reader.app.changeFeed.live, 2000, 'both listening')
      const { rows } = await adminQuery(
        cluster.url,
        // (Before listeners had a name of their own, the one connection that ran LISTEN.)
        "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'outage-notify-a-listener' or (application_name = 'outage-notify-a' and query like 'listen %')",
      )
      expect(rows).toHaveLength(1)
      await waitFor(() => !writer.app.changeFeed.live, 2000, "the writer's listener lost")

      const before = heard
      writer.app.changeFeed.publish('catalog')
      await waitFor(() => heard > before, 2000, 'the other instance told')
    } finally {
      await writer.close()
      await reader.close()
    }
  })

  it('a change that could not be told while the database was away from this instance is told once it is back (slow: a silent database is noticed at the read timeout)', async () => {
    // The writer reaches the database through a proxy that goes silent; the reader's listener stays connected.
    const proxy = await startSilentProxy(cluster.port)
    const url = await newDatabase()
    const writer = await openService(url.replace(`:${cluster.port}/`, `:${proxy.port}/`), 'outage-resend-a')
    const reader = await openService(url, 'outage-resend-b')
    try {
      let heard = 0
      reader.app.changeFeed.subscribe('catalog', () => {
        heard += 1
      })
      await waitFor(() => writer.app.changeFeed.live && reader.app.changeFeed.live, 2000, 'both listening')
      proxy.silence()
      const before = heard
      writer.app.changeFeed.publish('catalog')
      await waitFor(() => !writer.app.databaseStatus.available, 5000, "the writer's database lost")
      // Its NOTIFY failed (the one warning of it, checked below), and it is tried again while the database is away:
      // the other instance has heard nothing yet.
      await waitFor(() => writer.logs().some((line) => line.msg.startsWith('change feed: could not tell')), 5000, 'the NOTIFY failed')
      expect(heard).toBe(before)
      proxy.restore()
      await waitFor(() => heard > before, 3000, 'the other instance told after the return')
      const messages = writer.logs().map((line) => line.msg)
      expect(messages.filter((msg) => msg.startsWith('change feed: could not tell'))).toHaveLength(1)
    } finally {
      await writer.close()
      await reader.close()
      await proxy.close()
    }
  })

  it('a silent database (accepts, never answers): /ready within 2 s, requests bounded, then fast; back when it answers (slow: it waits out the timeouts)', async () => {
    const proxy = await startSilentProxy(cluster.port)
    const url = (await newDatabase()).replace(`:${cluster.port}/`, `:${proxy.port}/`)
    const service = await openService(url, 'outage-silent')
    const { app } = service
    try {
      await Promise.all(Array.from({ length: 4 }, () => timedGet(app, '/categories')))
      await waitFor(() => app.changeFeed.live, 2000, 'change feed live')
      proxy.silence()

      const ready = await timedGet(app, '/ready')
      expect(ready).toMatchObject({ status: 503, body: NOT_READY })
      expect(ready.ms).toBeLessThan(2000)
      const first = await timedGet(app, '/categories', 8000)
      expect(first).toMatchObject({ status: 503, body: NOT_READY })
      // Bounded by the read timeout (statement timeout + 1 s) or the connect timeout.
      expect(first.ms).toBeLessThan(TIMEOUTS.statementTimeoutMs + 1500)
      await waitFor(() => !app.databaseStatus.available, 4000, 'database declared lost')
      expect(app.changeFeed.live).toBe(false)
      for (const path of ['/categories', '/products', '/ready']) {
        const answer = await timedGet(app, path)
        expect(answer).toMatchObject({ status: 503, body: NOT_READY })
        expect(answer.ms).toBeLessThan(100)
      }
      expect(await timedGet(app, '/health')).toMatchObject({ status: 200, body: { status: 'ok' } })

      proxy.restore()
      const backIn = await waitFor(async () => (await timedGet(app, '/categories')).status === 200 && app.changeFeed.live, 4000, 'back')
      expect(backIn).toBeLessThan(1500)
    } finally {
      await service.close()
      await proxy.close()
    }
  })

  it('a statement longer than the statement timeout is cancelled by the server: 503, and no outage', async () => {
    const service = await openService(await newDatabase(), 'outage-slow')
    try {
      const started = performance.now()
      await expect(sql`select pg_sleep(5)`.execute(service.app.db)).rejects.toMatchObject({ statusCode: 503, message: NOT_READY.error })
      expect(performance.now() - started).toBeLessThan(TIMEOUTS.statementTimeoutMs + 500)
      expect(service.app.databaseStatus.available).toBe(true)
      expect(await timedGet(service.app, '/categories')).toMatchObject({ status: 200 })
    } finally {
      await service.close()
    }
  })

  it('start-up with an unreachable or silent database: bounded retries, then one clear line, no password (slow: three processes under tsx, retrying for 2 s)', async () => {
    const silent = await startSilentProxy(cluster.port)
    silent.silence()
    const nothing = await freePort()
    const dataDir = mkdtempSync(join(tmpdir(), 'shop-outage-'))
    const runNode = (script: string[], databaseUrl: string) =>
      new Promise<{ code: number | null; stderr: string; ms: number }>((resolve) => {
        const started = performance.now()
        const child = spawn(process.execPath, ['--import', 'tsx', ...script], {
          env: {
            ...process.env,
            NODE_ENV: 'development',
            DATA_DIR: dataDir,
            PORT: '0',
            LOG_LEVEL: 'silent',
            JWT_SECRET: 'outage-test-secret-that-is-long-enough-000',
            DATABASE_URL: databaseUrl,
            PG_STARTUP_TIMEOUT_MS: '2000',
            PG_CONNECT_TIMEOUT_MS: '500',
          },
          stdio: ['ignore', 'ignore', 'pipe'],
        })
        let stderr = ''
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString()
        })
        const killer = setTimeout(() => child.kill('SIGKILL'), 20_000)
        child.on('exit', (code) => {
          clearTimeout(killer)
          resolve({ code, stderr, ms: performance.now() - started })
        })
      })
    try {
      const refused = `postgres://shop:hunter2secret@127.0.0.1:${nothing}/shop`
      const hanging = `postgres://shop:hunter2secret@127.0.0.1:${silent.port}/shop`
      const results = await Promise.all([runNode(['src/server.ts'], refused), runNode(['src/server.ts'], hanging), runNode(['src/cli.ts', 'migrate'], hanging)])
      for (const [index, result] of results.entries()) {
        const port = index === 0 ? nothing : silent.port
        expect(result.code, result.stderr).toBe(1)
        expect(result.stderr.trim().split('\n'), result.stderr).toHaveLength(1)
        expect(result.stderr).toMatch(
          new RegExp(`^Cannot start: the database at postgres://shop@127\\.0\\.0\\.1:${port}/shop did not answer within 2 s \\(.+\\); giving up\\.\\n$`),
        )
        expect(result.stderr).toContain(index === 0 ? 'ECONNREFUSED' : '(no answer within 500 ms)')
        expect(result.stderr).not.toContain('hunter2secret')
        // 2 s of retries plus node and tsx starting: about 5 s here, up to 10 s on a loaded machine
        // (a hang would be killed at 20 s, with no line).
        expect(result.ms).toBeLessThan(15_000)
      }
    } finally {
      await silent.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 30_000)
})
