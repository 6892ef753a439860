import type { FastifyInstance } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { createLoggedApp, freePort, type LogLine, silentServer, sleep, timed, unacceptingPort, WARN } from '../helpers/outage.js'

// The auth rate limit with a Redis that is down or silent: it fails open (as documented), and fast.
// No Redis is needed: "down" is a port nothing listens on, "silent" a TCP server that never answers.

/**
 * Well above what a request costs here (a few ms, tens on a loaded machine), well below what the
 * client's reconnect backoff used to cost (hundreds of ms growing to 10 s), or forever for a silent Redis.
 */
const FAST_MS = 250

let closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of closers.reverse()) await close()
  closers = []
})

/** A register attempt with an empty body: the rate limit runs, then a 422 without any password hashing. */
const attempt = (app: FastifyInstance, remoteAddress = '203.0.113.9') =>
  app.inject({ method: 'POST', url: '/auth/register', remoteAddress, payload: { name: '' } })

const redisWarnings = (lines: LogLine[]) => lines.filter((line) => line.level === WARN && /redis/i.test(line.msg))

/** `count` attempts spread over `spreadMs`: long enough for a reconnect backoff to grow. */
async function attemptsOver(app: FastifyInstance, count: number, spreadMs: number) {
  const answers: { status: number; remaining: string | undefined; ms: number }[] = []
  for (let i = 0; i < count; i += 1) {
    const { value: res, ms } = await timed(() => attempt(app))
    answers.push({ status: res.statusCode, remaining: res.headers['ratelimit-remaining'] as string | undefined, ms })
    expect(res.json()).toEqual({ error: expect.any(String) })
    await sleep(spreadMs / count)
  }
  return answers
}

/** Every one of `count` answers let through uncounted (a 422 with the whole budget, `max`), each within FAST_MS. */
function expectLetThrough(answers: Awaited<ReturnType<typeof attemptsOver>>, count: number, max: string) {
  expect(answers.map((a) => a.status)).toEqual(Array(count).fill(422))
  expect(answers.map((a) => a.remaining)).toEqual(Array(count).fill(max))
  expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(FAST_MS)
}

/** A service on `env` whose log is kept, closed after the test; `bootMs`: how long its start-up took (at most 10 s). */
async function boot(env: Record<string, string>) {
  const booted = await timed(() => createLoggedApp(env), 10_000)
  closers.push(booted.value.close)
  return { ...booted.value, bootMs: booted.ms }
}

describe('auth rate limit while Redis is down', () => {
  it('fails open within the bound on every attempt, and warns once (slow: 15 attempts spread over 2.5 s, for the reconnect backoff to reach its cap)', async () => {
    const port = await freePort()
    const { app, lines, bootMs } = await boot({ REDIS_URL: `redis://127.0.0.1:${port}`, AUTH_RATE_LIMIT_MAX: '3' })
    // Start-up does not wait for a Redis that refuses connections.
    expect(bootMs).toBeLessThan(5000)

    // Uncounted: every attempt reaches the route (422) with the full budget, none is refused.
    expectLetThrough(await attemptsOver(app, 15, 2500), 15, '3')

    // One warning for the whole outage, however many reconnect attempts and requests it saw.
    const warnings = redisWarnings(lines)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]?.msg).toBe('Redis is unavailable: the auth rate limit lets requests through uncounted until it is back')
  })
})

describe('auth rate limit while Redis cannot be reached (connections never accepted)', () => {
  it('start-up waits REDIS_CONNECT_TIMEOUT_MS at most; attempts fail open at once; one warning', async () => {
    const stuck = await unacceptingPort()
    closers.push(async () => stuck.close())
    const { app, lines, bootMs } = await boot({ REDIS_URL: `redis://127.0.0.1:${stuck.port}`, REDIS_CONNECT_TIMEOUT_MS: '400', AUTH_RATE_LIMIT_MAX: '3' })
    expect(bootMs).toBeGreaterThanOrEqual(350)
    expect(bootMs).toBeLessThan(5000)
    expectLetThrough(await attemptsOver(app, 10, 1500), 10, '3')
    const warnings = redisWarnings(lines)
    expect(warnings).toHaveLength(1)
    expect((warnings[0]?.err as { code?: string }).code).toBe('ETIMEDOUT')
  })
})

describe('auth rate limit while Redis is silent (accepts connections, never answers)', () => {
  it('boots, fails open within the bound on every attempt, and warns once (slow: 15 attempts spread over 2.5 s, for the client to reconnect)', async () => {
    const silent = await silentServer()
    closers.push(silent.close)
    const { app, lines, bootMs } = await boot({ REDIS_URL: `redis://127.0.0.1:${silent.port}`, AUTH_RATE_LIMIT_MAX: '3' })
    // Start-up waits at most about one command timeout for the silent Redis.
    expect(bootMs).toBeLessThan(5000)

    expectLetThrough(await attemptsOver(app, 15, 2500), 15, '3')
    // The client kept trying (a fresh connection each time the silent one timed out)...
    expect(silent.connections()).toBeGreaterThan(1)
    // ...and said so once.
    expect(redisWarnings(lines)).toHaveLength(1)
  })

  it('bounds each wait by REDIS_COMMAND_TIMEOUT_MS and REDIS_CONNECT_TIMEOUT_MS', async () => {
    const silent = await silentServer()
    closers.push(silent.close)
    const { app, bootMs } = await boot({ REDIS_URL: `redis://127.0.0.1:${silent.port}`, REDIS_COMMAND_TIMEOUT_MS: '1500', REDIS_CONNECT_TIMEOUT_MS: '1000' })
    // Start-up waited for the first handshake to time out (1.5 s), not longer.
    expect(bootMs).toBeGreaterThanOrEqual(1400)
    expect(bootMs).toBeLessThan(5000)
    expect((await timed(() => attempt(app))).ms).toBeLessThan(FAST_MS)
  })
})
