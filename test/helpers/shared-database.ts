import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll } from 'vitest'
import { type AppOptions, buildApp } from '../../src/app.js'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { dialect, testConfig } from './app.js'
import { createPgSchema, testDatabaseUrl } from './pg-schema.js'

/**
 * One database for several real instances of the service, each opening its own connections (and
 * on PostgreSQL its own change listener): a SQLite file, or one PostgreSQL schema.
 */
export interface SharedDatabase {
  open: () => DatabaseHandle
  drop: () => Promise<void>
}

export async function createSharedDatabase(name: string): Promise<SharedDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `shop-${name}-`))
    return { open: () => connectDatabase(`sqlite:${join(dir, 'shop.db')}`), drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  const url = testDatabaseUrl()
  const schema = await createPgSchema(url, `test_${name}`)
  return { open: () => connectDatabase(url, { schema: schema.name, poolSize: 4 }), drop: schema.drop }
}

export interface InstancesOptions {
  /** Environment of every instance (testConfig's defaults otherwise). */
  env?: Record<string, string>
  /** buildApp's options for every instance, besides the database. */
  app?: Omit<AppOptions, 'database'>
}

/** Several running instances of the service on one shared database; `close` stops them and drops the database. */
export interface Instances {
  apps: FastifyInstance[]
  close: () => Promise<void>
}

/** Starts `count` instances of the service on one new shared database (named after `name`). */
export async function startInstances(count: number, name: string, options: InstancesOptions = {}): Promise<Instances> {
  const shared = await createSharedDatabase(name)
  const handles: DatabaseHandle[] = []
  const apps: FastifyInstance[] = []
  const close = async () => {
    for (const app of apps) await app.close()
    for (const handle of handles) await handle.db.destroy()
    await shared.drop()
  }
  try {
    for (let i = 0; i < count; i += 1) {
      const handle = shared.open()
      handles.push(handle)
      const app = await buildApp(testConfig(options.env), { logger: false, ...options.app, database: handle })
      apps.push(app)
      await app.ready()
    }
  } catch (error) {
    await close()
    throw error
  }
  return { apps, close }
}

/** startInstances for a file: started before its tests, closed after; `apps` fills in at start. */
export function useInstances(count: number, name: string, options: InstancesOptions = {}): Instances {
  const used: Instances = { apps: [], close: async () => {} }
  beforeAll(async () => {
    const started = await startInstances(count, name, options)
    used.apps.push(...started.apps)
    used.close = started.close
  })
  afterAll(async () => {
    await used.close()
  })
  return used
}
