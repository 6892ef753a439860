import { randomInt } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestApp, useTestApp } from '../helpers/app.js'

// Runs when TEST_REDIS_URL is set: the password-reset counter in Redis is shared by every instance, and is
// not login's counter.
const redisUrl = process.env.TEST_REDIS_URL

// A fresh address per run: counters of earlier runs may still be alive in Redis.
const client = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

describe.skipIf(!redisUrl)('password-reset rate limit in Redis', () => {
  const first = useTestApp({ REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '3' })
  const second = useTestApp({ REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '3' })
  let redis: Redis
  beforeAll(() => {
    redis = new Redis(redisUrl!)
  })
  afterAll(async () => {
    await redis?.quit()
  })

  it('two instances share one reset counter per client, under its own key, apart from login’s', async () => {
    const ip = client()
    const seen: string[] = []
    const reset = (t: TestApp) => t.app.inject({ method: 'POST', url: '/auth/password-reset', remoteAddress: ip, payload: { email: 'nobody@shop.test' } })
    const confirm = (t: TestApp) =>
      t.app.inject({ method: 'POST', url: '/auth/password-reset/confirm', remoteAddress: ip, payload: { token: 'nope', password: 'long-enough' } })
    for (const send of [() => reset(first), () => confirm(second), () => reset(second)]) {
      const res = await send()
      expect(res.statusCode).toBeLessThan(429)
      seen.push(String(res.headers['ratelimit-remaining']))
    }
    expect(seen).toEqual(['2', '1', '0'])
    const blocked = await confirm(first)
    expect(blocked.statusCode).toBe(429)
    expect(blocked.json()).toEqual({ error: 'Demasiados intentos. Intenta de nuevo en 15 minutos.' })
    expect(Number(await redis.get(`shop-api:password-reset-rate-limit:${ip}`))).toBe(4)
    expect(await redis.get(`shop-api:auth-rate-limit:${ip}`)).toBeNull()
    // Login still has its whole budget for this client.
    const login = await second.app.inject({
      method: 'POST',
      url: '/auth/login',
      remoteAddress: ip,
      payload: { email: 'nobody@shop.test', password: 'whatever' },
    })
    expect(login.statusCode).toBe(401)
    expect(login.headers['ratelimit-remaining']).toBe('2')
    expect(Number(await redis.get(`shop-api:password-reset-rate-limit:${ip}`))).toBe(4)
  })
})
