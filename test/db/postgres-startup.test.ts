import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseHandle, waitForDatabase } from '../../src/db/connect.js'
import { dialect } from '../helpers/app.js'
import { type BuiltServer, buildServer, freePort, runServer, serverEnv } from '../helpers/server-process.js'

// Start-up against a PostgreSQL that answers "no": a database that does not exist, a role that does not exist,
// a wrong password. Waiting cannot fix those, so the start-up does not wait (PG_STARTUP_TIMEOUT_MS, 30 s, is
// for a database that does not answer yet).

/** A handle whose probe fails as `error` does, counting the attempts. */
function failingHandle(error: Error): { handle: DatabaseHandle; attempts: () => number } {
  let attempts = 0
  const probe = async () => {
    attempts += 1
    throw error
  }
  return { handle: { probe } as unknown as DatabaseHandle, attempts: () => attempts }
}

const pgError = (message: string, code: string) => Object.assign(new Error(message), { code, severity: 'FATAL' })
const URL = 'postgres://shop:secret@db.internal:5432/shop'

describe('waitForDatabase', () => {
  it.each([
    ['3D000', 'database "shop" does not exist'],
    ['28P01', 'password authentication failed for user "shop"'],
    ['28000', 'role "shop" does not exist'],
    ['42501', 'permission denied for database "shop"'],
  ])('SQLSTATE %s (%s): one attempt, then one line, at once', async (code, message) => {
    const { handle, attempts } = failingHandle(pgError(message, code))
    const started = performance.now()
    const error = await waitForDatabase(handle, URL, 30_000).catch((caught: unknown) => caught)
    expect(performance.now() - started).toBeLessThan(100)
    expect(attempts()).toBe(1)
    expect((error as Error).message).toBe(
      `Cannot start: the database at postgres://shop@db.internal:5432/shop refused the connection (${message}, SQLSTATE ${code}); waiting will not change that: check DATABASE_URL.`,
    )
    expect((error as Error).message).not.toContain('secret')
  })

  it('no password in the URL where the server asks for one (pg says so itself): at once too', async () => {
    const { handle, attempts } = failingHandle(new Error('SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string'))
    await expect(waitForDatabase(handle, URL, 30_000)).rejects.toThrow(
      'Cannot start: the database at postgres://shop@db.internal:5432/shop refused the connection (SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string); waiting will not change that: check DATABASE_URL.',
    )
    expect(attempts()).toBe(1)
  })

  it('a database that does not answer yet, or is starting up (57P03), is still waited for', async () => {
    for (const error of [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      pgError('the database system is starting up', '57P03'),
    ]) {
      const { handle, attempts } = failingHandle(error)
      await expect(waitForDatabase(handle, URL, 600)).rejects.toThrow(/did not answer within 1 s/)
      expect(attempts()).toBe(2)
    }
  })
})

// The real thing: the built server against the local PostgreSQL, with a database and a role that do not exist
// (trust authentication accepts any password, so a wrong password cannot be shown here; 28P01 is in the test above).
describe.runIf(dialect === 'postgres')('the server against a PostgreSQL that refuses it', () => {
  let server: BuiltServer
  let dataDir = ''
  beforeAll(async () => {
    server = await buildServer()
    dataDir = mkdtempSync(join(tmpdir(), 'shop-pg-startup-'))
  }, 60_000)
  afterAll(() => {
    server?.remove()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  /** TEST_DATABASE_URL with another user or database. */
  const urlWith = (change: (url: URL) => void) => {
    const url = new globalThis.URL(process.env.TEST_DATABASE_URL as string)
    change(url)
    return url.toString()
  }

  it.each([
    [
      'a database that does not exist (3D000)',
      (url: URL) => void (url.pathname = '/shop_no_such_database'),
      /database "shop_no_such_database" does not exist, SQLSTATE 3D000/,
    ],
    ['a role that does not exist (28000)', (url: URL) => void (url.username = 'shop_no_such_role'), /role "shop_no_such_role" does not exist, SQLSTATE 28000/],
  ])(
    '%s: exit status 1 within a few seconds (not PG_STARTUP_TIMEOUT_MS, 30 s), one line on stderr',
    async (_name, change, reason) => {
      const databaseUrl = urlWith(change)
      const run = await runServer(server, serverEnv({ DATA_DIR: dataDir, PORT: String(await freePort()), DATABASE_URL: databaseUrl }), 45_000)
      expect(run.code).toBe(1)
      expect(run.ms).toBeLessThan(5000)
      const lines = run.stderr.split('\n').filter((line) => line !== '')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(
        /^Cannot start: the database at postgres:\/\/.* refused the connection \(.*\); waiting will not change that: check DATABASE_URL\.$/,
      )
      expect(lines[0]).toMatch(reason)
    },
    60_000,
  )

  it('the CLI (npm run migrate) does not wait either', async () => {
    const databaseUrl = urlWith((url) => void (url.pathname = '/shop_no_such_database'))
    const started = performance.now()
    const result = await promisify(execFile)(process.execPath, ['dist/cli.js', 'migrate'], {
      cwd: server.dir,
      env: serverEnv({ DATA_DIR: dataDir, DATABASE_URL: databaseUrl }),
      timeout: 45_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    )
    expect(performance.now() - started).toBeLessThan(5000)
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/refused the connection \(database "shop_no_such_database" does not exist, SQLSTATE 3D000\)/)
  }, 60_000)
})
