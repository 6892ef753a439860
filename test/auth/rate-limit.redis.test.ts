import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { randomInt } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { type TestApp, useTestApp } from '../helpers/app.js'
import { createLoggedApp, freePort, freezableRelay, INFO, type LogLine, sleep, timed, WARN } from '../helpers/outage.js'
import { useInstances } from '../helpers/shared-database.js'

// Runs when TEST_REDIS_URL is set (CI always sets it; .ci/run fails if these tests were skipped).
const redisUrl = process.env.TEST_REDIS_URL

// A fresh address per run: counters of earlier runs may still be alive in Redis.
const client = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
const login = (t: TestApp, remoteAddress: string) =>
  t.app.inject({ method: 'POST', url: '/auth/login', remoteAddress, payload: { email: 'nobody@shop.test', password: 'whatever' } })

describe.skipIf(!redisUrl)('auth rate limit in Redis', () => {
  const first = useTestApp({ REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '4' })
  const second = useTestApp({ REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '4' })

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

  describe('on real listening servers', () => {
    // Through the network the client address is 127.0.0.1, so use a trusted proxy header to pick the client.
    const servers = useInstances(2, 'ratelimitredis', { env: { REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '2', TRUST_PROXY: 'true' } })

    it('keeps counting across them', async () => {
      const ip = client()
      const urls: string[] = []
      for (const app of servers.apps) urls.push(await app.listen({ port: 0, host: '127.0.0.1' }))
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
    })
  })
})

describe.skipIf(!redisUrl)('auth rate limit keys in Redis', () => {
  const t = useTestApp({ REDIS_URL: redisUrl!, AUTH_RATE_LIMIT_MAX: '4' })

  it('are the prefix and the client address, and expire with the window', async () => {
    const redis = new Redis(redisUrl!)
    try {
      const ip = client()
      expect((await login(t, ip)).headers['ratelimit-remaining']).toBe('3')
      expect(await redis.get(`shop-api:auth-rate-limit:${ip}`)).toBe('1')
      const ttl = await redis.pttl(`shop-api:auth-rate-limit:${ip}`)
      expect(ttl).toBeGreaterThan(890_000)
      expect(ttl).toBeLessThanOrEqual(900_000)
      // The library's own store named it after the route, which createRateLimit leaves empty.
      expect(await redis.exists(`shop-api:auth-rate-limit:undefinedundefined-${ip}`)).toBe(0)
      // Register and login count on the same key.
      await t.app.inject({ method: 'POST', url: '/auth/register', remoteAddress: ip, payload: { name: '' } })
      expect(await redis.get(`shop-api:auth-rate-limit:${ip}`)).toBe('2')
      expect(await redis.pttl(`shop-api:auth-rate-limit:${ip}`)).toBeLessThanOrEqual(ttl)
    } finally {
      redis.disconnect()
    }
  })
})

/** A relay to Redis that can stop passing requests on, as a Redis that hangs does (the socket stays open). */
async function freezableRedis(target: URL) {
  const relay = await freezableRelay(Number(target.port || 6379), target.hostname)
  return { ...relay, url: `redis://127.0.0.1:${relay.port}` }
}

/** Attempts until one is counted (RateLimit-Remaining below `max`); fails if none is within `timeout` ms. */
async function untilCounted(t: FastifyInstance, ip: string, max: string, timeout: number): Promise<void> {
  const remaining = async () =>
    (await t.inject({ method: 'POST', url: '/auth/register', remoteAddress: ip, payload: { name: '' } })).headers['ratelimit-remaining']
  await expect.poll(remaining, { timeout, interval: 20 }).not.toBe(max)
}

const register = (t: FastifyInstance, ip: string) => timed(() => t.inject({ method: 'POST', url: '/auth/register', remoteAddress: ip, payload: { name: '' } }))
const warnings = (lines: LogLine[]) => lines.filter((l) => l.level === WARN && /redis/i.test(l.msg)).length
const recoveries = (lines: LogLine[]) => lines.filter((l) => l.level === INFO && l.msg === 'Redis is back: the auth rate limit counts again').length

describe.skipIf(!redisUrl)('auth rate limit when Redis goes silent, then answers again', () => {
  it('the first attempt waits one command timeout, the next ones nothing; counting resumes by itself', async () => {
    const relay = await freezableRedis(new URL(redisUrl!))
    const logged = await createLoggedApp({ REDIS_URL: relay.url, AUTH_RATE_LIMIT_MAX: '5', REDIS_COMMAND_TIMEOUT_MS: '1000' })
    try {
      const ip = client()
      expect((await register(logged.app, ip)).value.headers['ratelimit-remaining']).toBe('4')
      relay.freeze(true)
      // Caught in flight: bounded by the command timeout, then let through uncounted.
      const first = await register(logged.app, ip)
      expect(first.value.statusCode).toBe(422)
      expect(first.value.headers['ratelimit-remaining']).toBe('5')
      expect(first.ms).toBeGreaterThanOrEqual(900)
      expect(first.ms).toBeLessThan(3000)
      // The silent connection was dropped: later attempts do not each wait the timeout out.
      for (let i = 0; i < 10; i += 1) {
        const next = await register(logged.app, ip)
        expect(next.value.headers['ratelimit-remaining']).toBe('5')
        expect(next.ms).toBeLessThan(250)
      }
      expect(warnings(logged.lines)).toBe(1)
      relay.freeze(false)
      // Back within the reconnect delay (at most a second) plus the handshake.
      await untilCounted(logged.app, ip, '5', 3000)
      expect(recoveries(logged.lines)).toBe(1)
      expect(warnings(logged.lines)).toBe(1)
    } finally {
      await logged.close()
      await relay.close()
    }
  })
})

// A Redis of the test's own, stopped and started again: the shared one is never touched.
const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0

describe.skipIf(!redisUrl || !hasRedisServer)('auth rate limit when Redis stops and comes back (a throw-away redis-server)', () => {
  let server: ChildProcess | undefined
  afterEach(() => {
    server?.kill('SIGKILL')
    server = undefined
  })

  async function startRedis(port: number): Promise<void> {
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 20, maxRetriesPerRequest: null })
    probe.on('error', () => undefined)
    try {
      await timed(() => probe.ping(), 5000)
    } finally {
      probe.disconnect()
    }
  }
  async function stopRedis(): Promise<void> {
    const stopping = server
    server = undefined
    if (!stopping || stopping.exitCode !== null) return
    await new Promise((resolve) => {
      stopping.once('exit', resolve)
      stopping.kill('SIGTERM')
    })
  }

  /** Five attempts 100 ms apart while Redis is away: each let through uncounted (the whole budget of 5), and at once. */
  async function attemptsWhileAway(app: FastifyInstance, ip: string): Promise<void> {
    for (let i = 0; i < 5; i += 1) {
      const res = await register(app, ip)
      expect(res.value.headers['ratelimit-remaining']).toBe('5')
      expect(res.ms).toBeLessThan(250)
      await sleep(100)
    }
  }

  it('fails open fast while it is away, warns once per outage, and counts again when it returns', async () => {
    const port = await freePort()
    const logged = await createLoggedApp({ REDIS_URL: `redis://127.0.0.1:${port}`, AUTH_RATE_LIMIT_MAX: '5' })
    const ip = client()
    try {
      // Down from the start.
      await attemptsWhileAway(logged.app, ip)
      expect(warnings(logged.lines)).toBe(1)

      // Back: counted again within the reconnect delay.
      await startRedis(port)
      await untilCounted(logged.app, ip, '5', 3000)
      expect(recoveries(logged.lines)).toBe(1)
      expect((await register(logged.app, ip)).value.headers['ratelimit-remaining']).toBe('3')

      // Away again: a second outage, a second warning, and still fast.
      await stopRedis()
      await attemptsWhileAway(logged.app, ip)
      expect(warnings(logged.lines)).toBe(2)

      // And back once more (an empty Redis: the counter starts again).
      await startRedis(port)
      await untilCounted(logged.app, ip, '5', 5000)
      expect(recoveries(logged.lines)).toBe(2)
    } finally {
      await logged.close()
    }
  })
})
