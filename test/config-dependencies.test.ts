import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'

// The bounded waits toward Redis and S3, and where uploads are spooled.

const dataDir = () => mkdtempSync(join(tmpdir(), 'shop-config-'))
const S3 = { STORAGE_DRIVER: 's3', S3_BUCKET: 'b', S3_PUBLIC_URL: 'https://cdn.example.com' }

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ DATA_DIR: dataDir(), ...env })
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
  return []
}

describe('configuration of dependency timeouts and the upload spool', () => {
  it('defaults: Redis 1 s to connect and 200 ms a command; S3 3 s to connect, 5 s of silence, 30 s a call, 2 attempts; spool in <DATA_DIR>/tmp', () => {
    const dir = dataDir()
    const config = loadConfig({ DATA_DIR: dir, ...S3 })
    expect(config.redisTimeouts).toEqual({ connectMs: 1000, commandMs: 200 })
    expect(config.storage).toMatchObject({ connectTimeoutMs: 3000, socketTimeoutMs: 5000, requestTimeoutMs: 30_000, maxAttempts: 2 })
    expect(config.uploadTmpDir).toBe(join(dir, 'tmp'))
    expect(Object.isFrozen(config.redisTimeouts)).toBe(true)
  })

  it('reads each variable', () => {
    const config = loadConfig({
      DATA_DIR: dataDir(),
      ...S3,
      REDIS_CONNECT_TIMEOUT_MS: '2500',
      REDIS_COMMAND_TIMEOUT_MS: '50',
      S3_CONNECT_TIMEOUT_MS: '1000',
      S3_SOCKET_TIMEOUT_MS: '2000',
      S3_REQUEST_TIMEOUT_MS: '60000',
      S3_MAX_ATTEMPTS: '4',
      UPLOAD_TMP_DIR: '/var/tmp/shop',
    })
    expect(config.redisTimeouts).toEqual({ connectMs: 2500, commandMs: 50 })
    expect(config.storage).toMatchObject({ connectTimeoutMs: 1000, socketTimeoutMs: 2000, requestTimeoutMs: 60_000, maxAttempts: 4 })
    expect(config.uploadTmpDir).toBe('/var/tmp/shop')
  })

  it('one line per bad value', () => {
    expect(
      problemsOf({
        ...S3,
        REDIS_CONNECT_TIMEOUT_MS: 'soon',
        REDIS_COMMAND_TIMEOUT_MS: '0',
        S3_CONNECT_TIMEOUT_MS: '-1',
        S3_SOCKET_TIMEOUT_MS: '1.5',
        S3_REQUEST_TIMEOUT_MS: '999999999',
        S3_MAX_ATTEMPTS: '0',
      }),
    ).toEqual([
      'REDIS_CONNECT_TIMEOUT_MS must be an integer between 10 and 60000 (got "soon")',
      'REDIS_COMMAND_TIMEOUT_MS must be an integer between 10 and 60000 (got "0")',
      'S3_CONNECT_TIMEOUT_MS must be an integer between 10 and 120000 (got "-1")',
      'S3_SOCKET_TIMEOUT_MS must be an integer between 10 and 600000 (got "1.5")',
      'S3_REQUEST_TIMEOUT_MS must be an integer between 10 and 600000 (got "999999999")',
      'S3_MAX_ATTEMPTS must be an integer between 1 and 10 (got "0")',
    ])
  })
})
