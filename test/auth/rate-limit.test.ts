import { afterEach, describe, expect, it, vi } from 'vitest'
import { type TestApp, createTestApp } from '../helpers/app.js'

let t: TestApp | undefined
afterEach(async () => {
  vi.useRealTimers()
  await t?.close()
  t = undefined
})

const attempt = (app: TestApp['app'], i: number, remoteAddress = '203.0.113.7', headers: Record<string, string> = {}) =>
  i % 2 === 0
    ? app.inject({ method: 'POST', url: '/auth/login', remoteAddress, headers, payload: { email: 'nobody@shop.test', password: 'whatever' } })
    : app.inject({ method: 'POST', url: '/auth/register', remoteAddress, headers, payload: { name: '' } })

describe('auth rate limit (in memory)', () => {
  it('allows 10 attempts per window across register and login, then answers 429 with the Spanish message', async () => {
    t = await createTestApp()
    // The window opens at the first attempt, somewhere between these two instants.
    const before = Date.now()
    let firstAnswered = 0
    for (let i = 0; i < 10; i++) {
      const res = await attempt(t.app, i)
      if (i === 0) firstAnswered = Date.now()
      // Every request counts, whatever its outcome (401 on login, 422 on register here).
      expect(res.statusCode).toBe(i % 2 === 0 ? 401 : 422)
      expect(res.headers['ratelimit-limit']).toBe('10')
      expect(res.headers['ratelimit-remaining']).toBe(String(9 - i))
      const reset = Number(res.headers['ratelimit-reset'])
      // A Unix timestamp in seconds: the end of the 15-minute window opened by the first attempt.
      expect(reset).toBeGreaterThanOrEqual(Math.floor((before + 900_000) / 1000))
      expect(reset).toBeLessThanOrEqual(Math.ceil((firstAnswered + 900_000) / 1000))
      expect(Object.keys(res.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([])
      expect(res.headers['retry-after']).toBeUndefined()
    }
    for (const i of [10, 11]) {
      const res = await attempt(t.app, i)
      expect(res.statusCode).toBe(429)
      expect(res.json()).toEqual({ error: 'Demasiados intentos. Intenta de nuevo en 15 minutos.' })
      expect(res.headers['ratelimit-limit']).toBe('10')
      expect(res.headers['ratelimit-remaining']).toBe('0')
      // Seconds left in the window, however slow this machine was to get here.
      const left = Math.ceil((before + 900_000 - Date.now()) / 1000)
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(left)
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(900)
      expect(Object.keys(res.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([])
    }
    // A blocked registration writes nothing even with a valid body.
    const blocked = await t.app.inject({
      method: 'POST',
      url: '/auth/register',
      remoteAddress: '203.0.113.7',
      payload: { name: 'Late', email: 'late@shop.test', password: 'secret1' },
    })
    expect(blocked.statusCode).toBe(429)
    expect(await t.app.db.selectFrom('users').select('id').where('email', '=', 'late@shop.test').executeTakeFirst()).toBeUndefined()
  })

  it('counts each client address separately and leaves other routes alone', async () => {
    t = await createTestApp({ AUTH_RATE_LIMIT_MAX: '2' })
    await attempt(t.app, 0, '198.51.100.1')
    await attempt(t.app, 1, '198.51.100.1')
    expect((await attempt(t.app, 2, '198.51.100.1')).statusCode).toBe(429)
    const other = await attempt(t.app, 0, '198.51.100.2')
    expect(other.statusCode).toBe(401)
    expect(other.headers['ratelimit-remaining']).toBe('1')
    const health = await t.app.inject({ url: '/health', remoteAddress: '198.51.100.1' })
    expect(health.statusCode).toBe(200)
    expect(health.headers['ratelimit-limit']).toBeUndefined()
  })

  it('takes the window from AUTH_RATE_LIMIT_WINDOW_MS and starts again after it', async () => {
    t = await createTestApp({ AUTH_RATE_LIMIT_MAX: '1', AUTH_RATE_LIMIT_WINDOW_MS: '2000' })
    // The limiter measures its window with Date.now(): a stopped clock, moved by hand, puts each
    // attempt exactly where the test means it, however slow the machine, and waits for nothing.
    vi.useFakeTimers({ toFake: ['Date'] })
    const start = Date.now()
    expect((await attempt(t.app, 0)).statusCode).toBe(401)
    const limited = await attempt(t.app, 0)
    expect(limited.statusCode).toBe(429)
    expect(limited.headers['retry-after']).toBe('2')
    vi.setSystemTime(start + 1999)
    expect((await attempt(t.app, 0)).statusCode).toBe(429)
    vi.setSystemTime(start + 2000)
    expect((await attempt(t.app, 0)).statusCode).toBe(401)
  })

  it('ignores X-Forwarded-For unless TRUST_PROXY says the proxy is trusted', async () => {
    t = await createTestApp({ AUTH_RATE_LIMIT_MAX: '1' })
    await attempt(t.app, 0, '127.0.0.1', { 'x-forwarded-for': '192.0.2.1' })
    expect((await attempt(t.app, 0, '127.0.0.1', { 'x-forwarded-for': '192.0.2.2' })).statusCode).toBe(429)
    await t.close()
    t = await createTestApp({ AUTH_RATE_LIMIT_MAX: '1', TRUST_PROXY: 'true' })
    await attempt(t.app, 0, '127.0.0.1', { 'x-forwarded-for': '192.0.2.1' })
    expect((await attempt(t.app, 0, '127.0.0.1', { 'x-forwarded-for': '192.0.2.2' })).statusCode).toBe(401)
    expect((await attempt(t.app, 0, '127.0.0.1', { 'x-forwarded-for': '192.0.2.1' })).statusCode).toBe(429)
  })
})

describe('auth rate limit with Redis unreachable', () => {
  it('fails open: login still answers, with the full budget in the headers', async () => {
    t = await createTestApp({ REDIS_URL: 'redis://127.0.0.1:1', AUTH_RATE_LIMIT_MAX: '3' })
    const res = await attempt(t.app, 0)
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: 'Credenciales inválidas' })
    expect(res.headers['ratelimit-limit']).toBe('3')
    expect(res.headers['ratelimit-remaining']).toBe('3')
  })
})

describe('auth rate limit for IPv6 clients', () => {
  it('counts one /64 network as one client: a host cannot shed the limit by changing its address', async () => {
    t = await createTestApp({ AUTH_RATE_LIMIT_MAX: '2' })
    await attempt(t.app, 0, '2001:db8:1:2::1')
    await attempt(t.app, 1, '2001:db8:1:2:ffff::9')
    expect((await attempt(t.app, 0, '2001:db8:1:2:abcd:1:2:3')).statusCode).toBe(429)
    // Another /64 has its own budget.
    const other = await attempt(t.app, 0, '2001:db8:1:3::1')
    expect(other.statusCode).toBe(401)
    expect(other.headers['ratelimit-remaining']).toBe('1')
  })
})
