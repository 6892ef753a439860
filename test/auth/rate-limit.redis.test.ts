import { randomInt } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestApp, createTestApp } from '../helpers/app.js'

// Runs when TEST_REDIS_URL is set (CI always sets it; .ci/run fails if these tests were skipped).
const redisUrl = process.env.TEST_REDIS_URL

describe.skipIf(!redisUrl)('auth rate limit in Redis', () => {
  let first: TestApp
  let second: TestApp
  beforeAll(async () => {
    first = await createTestApp({ REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '4' })
    second = await createTestApp({ REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '4' })
  })
  afterAll(async () => {
    await first?.close()
    await second?.close()
  })

  // A fresh address per run: counters of earlier runs may still be alive in Redis.
  const client = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
  const login = (t: TestApp, remoteAddress: string) =>
    t.app.inject({ method: 'POST', url: '/auth/login', remoteAddress, payload: { email: 'nobody@shop.test', password: 'whatever' } })

  it('two instances on one Redis share one limit per client', async () => {
    const ip = client()
    const seen: string[] = []
    for (const t of [first, second, first, second]) {
      const res = await login(t, ip)
      expect(res.statusCode).toBe(401)
      seen.push(String(res.headers['ratelimit-remaining']))
    }
    expect(seen).toEqual(['3', '2', '1', '0'])
    for (const t of [first, second]) {
      const res = await login(t, ip)
      expect(res.statusCode).toBe(429)
      expect(res.json()).toEqual({ error: 'Demasiados intentos. Intenta de nuevo en 15 minutos.' })
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(890)
    }
    // Another client still has its own budget on both instances.
    expect((await login(second, client())).statusCode).toBe(401)
  })

  it('keeps counting across real listening servers', async () => {
    const ip = client()
    // Through the network the client address is 127.0.0.1, so use a trusted proxy header to pick the client.
    const a = await createTestApp({ REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '2', TRUST_PROXY: 'true' })
    const b = await createTestApp({ REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '2', TRUST_PROXY: 'true' })
    try {
      const urls = [await a.app.listen({ port: 0, host: '127.0.0.1' }), await b.app.listen({ port: 0, host: '127.0.0.1' })]
      const statuses: number[] = []
      for (const url of [urls[0], urls[1], urls[0]]) {
        const res = await fetch(`${url}/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
          body: JSON.stringify({ email: 'nobody@shop.test', password: 'whatever' }),
        })
        statuses.push(res.status)
      }
      expect(statuses).toEqual([401, 401, 429])
    } finally {
      await a.close()
      await b.close()
    }
  })
})
