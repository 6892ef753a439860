import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config.js'
import { DatabaseStatus, DatabaseUnavailableError, isConnectionFailure } from '../../src/db/availability.js'
import { connectDatabase, describeDatabaseUrl } from '../../src/db/connect.js'

// Pure checks of the pieces behind test/db/postgres-outage.pgcluster.test.ts; no database needed.
const base = { NODE_ENV: 'test', JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-000', DATA_DIR: '/tmp/shop-timeouts-test' }

describe('PostgreSQL timeouts in the configuration', () => {
  it('defaults to 5 s to connect, 5 s per statement, 30 s to wait at start-up', () => {
    expect(loadConfig(base).postgres).toEqual({ connectTimeoutMs: 5000, statementTimeoutMs: 5000, startupTimeoutMs: 30_000, preparedStatements: true })
  })

  it('reads PG_*_TIMEOUT_MS, 0 turning the statement timeout off', () => {
    const config = loadConfig({ ...base, PG_CONNECT_TIMEOUT_MS: '800', PG_STATEMENT_TIMEOUT_MS: '0', PG_STARTUP_TIMEOUT_MS: '1000' })
    expect(config.postgres).toEqual({ connectTimeoutMs: 800, statementTimeoutMs: 0, startupTimeoutMs: 1000, preparedStatements: true })
  })

  it('refuses a bad value with one line per variable', () => {
    let error: unknown
    try {
      loadConfig({ ...base, PG_CONNECT_TIMEOUT_MS: '5s', PG_STATEMENT_TIMEOUT_MS: '-1' })
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).problems).toEqual([
      'PG_CONNECT_TIMEOUT_MS must be an integer between 100 and 600000 (got "5s")',
      'PG_STATEMENT_TIMEOUT_MS must be an integer between 0 and 86400000 (got "-1")',
    ])
  })
})

describe('DatabaseStatus (the breaker)', () => {
  /** The checks here answer at once: what follows a check runs in microtasks, all done by the next turn of the event loop. */
  const checked = () => new Promise((resolve) => setImmediate(resolve))

  it('one failed connection whose check passes is not an outage', async () => {
    let checks = 0
    const status = new DatabaseStatus(async () => {
      checks += 1
    }, 10)
    let lost = 0
    status.onLost(() => (lost += 1))
    status.suspect(new Error('Connection terminated unexpectedly'))
    await checked()
    expect(checks).toBe(1)
    expect(status.available).toBe(true)
    expect(lost).toBe(0)
    status.close()
  })

  it('a failed check: lost once, however many failures; back once when a check passes', async () => {
    let up = false
    let checks = 0
    const status = new DatabaseStatus(async () => {
      checks += 1
      if (!up) throw new Error('connect ECONNREFUSED')
    }, 10)
    const events: string[] = []
    status.onLost(() => events.push('lost'))
    status.onBack(() => events.push('back'))
    for (let i = 0; i < 5; i += 1) status.suspect(new Error('Connection terminated unexpectedly'))
    await checked()
    expect(checks).toBe(1)
    expect(status.available).toBe(false)
    expect(events).toEqual(['lost'])
    // While it is lost, more failures start no check of their own; the check runs again every 10 ms and fails,
    // and none of that is a second loss.
    for (let i = 0; i < 5; i += 1) status.suspect(new Error('Connection terminated unexpectedly'))
    await expect.poll(() => checks, { timeout: 2000, interval: 5 }).toBeGreaterThanOrEqual(3)
    expect(events).toEqual(['lost'])
    up = true
    await expect.poll(() => [...events], { timeout: 2000, interval: 5 }).toEqual(['lost', 'back'])
    expect(status.available).toBe(true)
    status.close()
  })

  it('tells connection failures from statement errors', () => {
    expect(isConnectionFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toBe(true)
    expect(isConnectionFailure(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe(true)
    expect(isConnectionFailure(new Error('Query read timeout'))).toBe(true)
    expect(isConnectionFailure(new Error('timeout exceeded when trying to connect'))).toBe(true)
    expect(isConnectionFailure(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false)
    expect(isConnectionFailure(Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }))).toBe(false)
  })

  it('answers 503 with the documented message', () => {
    const error = new DatabaseUnavailableError(new Error('x'))
    expect(error.statusCode).toBe(503)
    expect(error.message).toBe('La base de datos no responde')
  })
})

describe('connections', () => {
  it('SQLite is always available', async () => {
    const handle = connectDatabase('sqlite::memory:')
    expect(handle.status.available).toBe(true)
    await expect(handle.probe()).resolves.toBeUndefined()
    await handle.db.destroy()
  })

  it('a database URL in messages has no password', () => {
    expect(describeDatabaseUrl('postgres://shop:s3cret@db.internal:5432/shop?sslmode=require')).toBe('postgres://shop@db.internal:5432/shop')
  })
})
