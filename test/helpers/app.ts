import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll } from 'vitest'
import { type AppOptions, buildApp } from '../../src/app.js'
import { type Config, loadConfig } from '../../src/config.js'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import type { ImageHost } from '../../src/modules/images/image-host.js'
import type { OutboxPluginOptions } from '../../src/modules/outbox/dispatcher.js'
import { makeUser, type TestUser } from './factories.js'
import { createPgSchema, testDatabaseUrl } from './pg-schema.js'

export const dialect = process.env.TEST_DIALECT === 'postgres' ? 'postgres' : 'sqlite'

/**
 * TEST_CATALOG_CACHE=on (the Vitest project `sqlite-cached`) runs the suite with the product read
 * cache on, as production does; tests that write rows straight into the database then say so with
 * `app.catalogCache.invalidate()`, as any writer must.
 */
export const catalogCacheOn = process.env.TEST_CATALOG_CACHE === 'on'

/**
 * TEST_SQLITE_FILE=on (the same project) puts each test app's SQLite database in a file, as production does, instead of
 * in memory: its long reads (the facets) then run on the reader threads (src/db/sqlite-readers.ts).
 */
const sqliteFile = process.env.TEST_SQLITE_FILE === 'on'

export interface TestApp {
  app: FastifyInstance
  config: Config
  database: DatabaseHandle
  dataDir: string
  close: () => Promise<void>
}

/** A fresh database for one test app: SQLite in memory (or a file), or a new PostgreSQL schema dropped at close. */
export async function openTestDatabase(): Promise<{ handle: DatabaseHandle; drop: () => Promise<void> }> {
  if (dialect === 'sqlite' && sqliteFile) {
    const dir = mkdtempSync(join(tmpdir(), 'shop-test-db-'))
    // Two threads whatever the cores (on one core the default is none, and the threads would go untested).
    const handle = connectDatabase(`sqlite:${join(dir, 'shop.db')}`, { readers: { threads: 2 } })
    return {
      handle,
      drop: async () => {
        await handle.db.destroy()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  }
  if (dialect === 'sqlite') {
    const handle = connectDatabase('sqlite::memory:')
    return { handle, drop: () => handle.db.destroy() }
  }
  const url = testDatabaseUrl()
  const schema = await createPgSchema(url)
  const handle = connectDatabase(url, { schema: schema.name, poolSize: 12 })
  return {
    handle,
    drop: async () => {
      await handle.db.destroy()
      await schema.drop()
    },
  }
}

/** The configuration of a test app; `env` overrides the defaults. */
export function testConfig(env: Record<string, string> = {}, dataDir = mkdtempSync(join(tmpdir(), 'shop-test-'))): Config {
  return loadConfig({
    NODE_ENV: 'test',
    JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-000',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    PUBLIC_URL: 'http://shop.test',
    ...env,
  })
}

/** Builds the whole service on a fresh database, as the server does, and makes it ready. */
export async function createTestApp(
  env: Record<string, string> = {},
  extra: { redis?: Redis; imageHost?: ImageHost; outbox?: OutboxPluginOptions['options'] } = {},
): Promise<TestApp> {
  const t = await buildTestApp(env, { catalogCache: catalogCacheOn, ...extra })
  try {
    await t.app.ready()
  } catch (error) {
    await t.close()
    throw error
  }
  return t
}

/**
 * A test app on a fresh database, as createTestApp makes it, but built with buildApp's own options and not made
 * ready: for a test that adds a route or a hook before the app starts, keeps the log (`logger`), or turns on what
 * createTestApp leaves to the Vitest project (`catalogCache: true`). `app.inject` and `app.listen` make it ready;
 * `close` closes it, drops the database and removes its data folder, even when the app failed to start.
 */
export async function buildTestApp(env: Record<string, string> = {}, options: Omit<AppOptions, 'database'> = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'shop-test-'))
  const config = testConfig(env, dataDir)
  const { handle, drop } = await openTestDatabase()
  const app = await buildApp(config, { logger: false, ...options, database: handle }).catch(async (error: unknown) => {
    await drop()
    rmSync(dataDir, { recursive: true, force: true })
    throw error
  })
  return {
    app,
    config,
    database: handle,
    dataDir,
    close: async () => {
      try {
        await app.close()
      } finally {
        await drop()
        rmSync(dataDir, { recursive: true, force: true })
      }
    },
  }
}

/** A test app of a file (or a describe block), with an admin and a customer made for it. */
export interface UsedTestApp extends TestApp {
  admin: TestUser
  customer: TestUser
}

/**
 * The one set-up of a file: builds a test app before its tests (with an admin and a customer) and closes it after.
 * Call it at the top of a file or of a `describe`; read the fields inside hooks and tests, once they are set.
 *
 *   const shop = useTestApp({ LOW_STOCK_THRESHOLD: '3' })
 *   it('…', async () => { await shop.app.inject({ url: '/products', headers: bearer(shop.admin) }) })
 */
export function useTestApp(env: Record<string, string> = {}, extra: Parameters<typeof createTestApp>[1] = {}): UsedTestApp {
  const used = {} as UsedTestApp
  beforeAll(async () => {
    const t = await createTestApp(env, extra)
    Object.assign(used, t, { admin: await makeUser(t.app, 'admin'), customer: await makeUser(t.app, 'customer') })
  })
  afterAll(async () => {
    await used.close?.()
  })
  return used
}
