import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { ConfigError, loadConfig } from '../../src/config.js'
import { connectDatabase } from '../../src/db/connect.js'
import { testConfig } from '../helpers/app.js'
import { type StripeFake, startStripeFake } from '../fakes/stripe-fake.js'
import { intentOf, orderStatus, pay, placeOrder, stripeEnv } from './helpers.js'

let fake: StripeFake
beforeAll(async () => {
  fake = await startStripeFake()
})
afterAll(async () => fake.close())

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'shop-config-')), ...env })
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
  return []
}

describe('payments configuration', () => {
  it('Stripe is on with a secret key; the TTL is 60 minutes with it, off without; EUR by default', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-config-'))
    expect(loadConfig({ DATA_DIR: dir }).payments).toEqual({ provider: 'manual', currency: 'EUR', orderPaymentTtlMs: 0, stripe: null })
    expect(loadConfig({ DATA_DIR: dir, STRIPE_SECRET_KEY: 'sk_test_1', SHOP_CURRENCY: 'USD' }).payments).toEqual({
      provider: 'stripe',
      currency: 'USD',
      orderPaymentTtlMs: 3_600_000,
      stripe: { secretKey: 'sk_test_1', publishableKey: null, webhookSecret: null, apiUrl: null },
    })
    const ttl = (value: string, extra: Record<string, string> = {}) =>
      loadConfig({ DATA_DIR: dir, ORDER_PAYMENT_TTL: value, ...extra }).payments.orderPaymentTtlMs
    expect([ttl('90s'), ttl('30m'), ttl('1h'), ttl('120'), ttl('0', { STRIPE_SECRET_KEY: 'sk_test_1' })]).toEqual([90_000, 1_800_000, 3_600_000, 120_000, 0])
  })

  it('one line per bad value', () => {
    expect(
      problemsOf({
        STRIPE_SECRET_KEY: 'pk_test_1',
        STRIPE_PUBLISHABLE_KEY: 'sk_test_1',
        STRIPE_WEBHOOK_SECRET: 'secret',
        STRIPE_API_URL: 'ftp://x',
        SHOP_CURRENCY: 'eur',
        ORDER_PAYMENT_TTL: '1 hour',
      }),
    ).toEqual([
      'STRIPE_SECRET_KEY must be a Stripe secret key (sk_test_…, sk_live_… or a restricted rk_… key)',
      'STRIPE_PUBLISHABLE_KEY must be a Stripe publishable key (pk_test_… or pk_live_…)',
      'STRIPE_WEBHOOK_SECRET must be a webhook signing secret (whsec_…)',
      'STRIPE_API_URL must be an http(s) URL with a host and an optional port, no path (got "ftp://x")',
      'SHOP_CURRENCY must be a three-letter ISO 4217 code in upper case, such as EUR (got "eur")',
      'ORDER_PAYMENT_TTL must be a duration such as 90s, 30m or 1h, or 0 to turn it off (got "1 hour")',
    ])
  })
})

describe('npm run cli -- payments:reconcile', () => {
  const run = promisify(execFile)
  const cli = (env: Record<string, string>) =>
    run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'payments:reconcile'], { env: { ...process.env, NODE_ENV: 'development', ...env } }).then(
      (ok) => ({ code: 0, ...ok }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    )

  it('asks Stripe about every pending order’s intent, whatever its age, applies it and prints what changed (slow: runs the CLI)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-cli-pay-'))
    const env = { ...stripeEnv(fake), DATA_DIR: dir }
    const handle = connectDatabase(`sqlite:${join(dir, 'shop.db')}`)
    const app = await buildApp(testConfig(env, dir), { database: handle, logger: false })
    const order = await placeOrder(app)
    await pay(app, order)
    fake.succeed(await intentOf(app, order.id))
    const result = await cli(env)
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(`order ${order.id}: paid\n1 order changed\n`)
    expect(await orderStatus(app, order.id)).toBe('paid')
    expect((await cli(env)).stdout).toBe('0 orders changed\n')
    await app.close()
    await handle.db.destroy()
  })

  it('with manual payments there is nothing to reconcile', async () => {
    const result = await cli({ DATA_DIR: mkdtempSync(join(tmpdir(), 'shop-cli-pay-')) })
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('nothing to reconcile')
  })
})
