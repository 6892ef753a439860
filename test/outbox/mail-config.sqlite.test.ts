import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config.js'

// The e-mail and low-stock variables (no database: runs once).

const dataDir = mkdtempSync(join(tmpdir(), 'shop-mail-config-'))
const base = { NODE_ENV: 'test', JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-000', DATA_DIR: dataDir }

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...base, ...env })
    return []
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
}

describe('e-mail configuration', () => {
  it('defaults: .eml files, from no-reply@ the host of PUBLIC_URL, no admins, 10 s SMTP waits, threshold 5', () => {
    expect(loadConfig(base).mail).toEqual({ smtpUrl: null, from: 'no-reply@localhost', adminNotify: [], timeoutMs: 10_000 })
    expect(loadConfig({ ...base, PUBLIC_URL: 'https://tienda.example/shop' }).mail.from).toBe('no-reply@tienda.example')
    expect(loadConfig(base).lowStockThreshold).toBe(5)
  })

  it('reads SMTP_URL, MAIL_FROM with a name, several admins and the threshold', () => {
    const config = loadConfig({
      ...base,
      SMTP_URL: 'smtps://apikey:s3cret@smtp.example.com:465',
      MAIL_FROM: 'Tienda <no-reply@tienda.example>',
      ADMIN_NOTIFY_EMAIL: 'Pedidos@tienda.example, almacen@tienda.example',
      SMTP_TIMEOUT_MS: '2000',
      LOW_STOCK_THRESHOLD: '0',
    })
    expect(config.mail).toEqual({
      smtpUrl: 'smtps://apikey:s3cret@smtp.example.com:465',
      from: 'Tienda <no-reply@tienda.example>',
      adminNotify: ['pedidos@tienda.example', 'almacen@tienda.example'],
      timeoutMs: 2000,
    })
    expect(config.lowStockThreshold).toBe(0)
  })

  it('one line per bad value, never echoing the SMTP URL (it may hold a password)', () => {
    const problems = problemsOf({
      SMTP_URL: 'http://user:hunter2@mail.example.com',
      MAIL_FROM: 'not an address',
      ADMIN_NOTIFY_EMAIL: 'ops@shop.test, nope',
      LOW_STOCK_THRESHOLD: '-1',
    })
    expect(problems).toEqual([
      'SMTP_URL must be smtp://[user:pass@]host:port or smtps://[user:pass@]host:port',
      'MAIL_FROM must be an e-mail address, optionally with a name: Tienda <no-reply@example.com> (got "not an address")',
      'ADMIN_NOTIFY_EMAIL must be e-mail addresses separated by commas (got "nope")',
      'LOW_STOCK_THRESHOLD must be an integer between 0 and 2147483647 (got "-1")',
    ])
    expect(problems.join('\n')).not.toContain('hunter2')
  })
})
