import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AppOptions, buildApp } from '../../src/app.js'
import { openTestDatabase, type TestApp, testConfig } from './app.js'

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
