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

describe('auth rate limit while Redis is down', () => {
  it('fails open within the bound on every attempt, and warns once (slow: 15 attempts spread over 2.5 s, for the reconnect backoff to reach its cap)', async () => {
    const port = await freePort()
    const booted = await timed(() => createLoggedApp({ REDIS_URL: `redis://127.0.0.1:${port}`, AUTH_RATE_LIMIT_MAX: '3' }), 10_000)
    closers.push(booted.value.close)
    const { app, lines } = booted.value
    // Start-up does not wait for a Redis that refuses connections.
    expect(booted.ms).toBeLessThan(5000)

    const answers = await attemptsOver(app, 15, 2500)
    // Uncounted: every attempt reaches the route (422) with the full budget, none is refused.
    expect(answers.map((a) => a.status)).toEqual(Array(15).fill(422))
    expect(answers.map((a) => a.remaining)).toEqual(Array(15).fill('3'))
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(FAST_MS)

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
    const booted = await timed(() => createLoggedApp({ REDIS_URL: `redis://127.0.0.1:${stuck.port}`, REDIS_CONNECT_TIMEOUT_MS: '400' }), 10_000)
    closers.push(booted.value.close)
    const { app, lines } = booted.value
    expect(booted.ms).toBeGreaterThanOrEqual(350)
    expect(booted.ms).toBeLessThan(5000)
    const answers = await attemptsOver(app, 10, 1500)
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(422))
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(FAST_MS)
    const warnings = redisWarnings(lines)
    expect(warnings).toHaveLength(1)
    expect((warnings[0]?.err as { code?: string }).code).toBe('ETIMEDOUT')
  })
})

describe('auth rate limit while Redis is silent (accepts connections, never answers)', () => {
  it('boots, fails open within the bound on every attempt, and warns once (slow: 15 attempts spread over 2.5 s, for the client to reconnect)', async () => {
    const silent = await silentServer()
    closers.push(silent.close)
    const booted = await timed(() => createLoggedApp({ REDIS_URL: `redis://127.0.0.1:${silent.port}`, AUTH_RATE_LIMIT_MAX: '3' }), 10_000)
    closers.push(booted.value.close)
    const { app, lines } = booted.value
    // Start-up waits at most about one command timeout for the silent Redis.
    expect(booted.ms).toBeLessThan(5000)

    const answers = await attemptsOver(app, 15, 2500)
    expect(answers.map((a) => a.status)).toEqual(Array(15).fill(422))
    expect(answers.map((a) => a.remaining)).toEqual(Array(15).fill('3'))
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(FAST_MS)
    // The client kept trying (a fresh connection each time the silent one timed out)...
    expect(silent.connections()).toBeGreaterThan(1)
    // ...and said so once.
    expect(redisWarnings(lines)).toHaveLength(1)
  })

  it('bounds each wait by REDIS_COMMAND_TIMEOUT_MS and REDIS_CONNECT_TIMEOUT_MS', async () => {
    const silent = await silentServer()
    closers.push(silent.close)
    const booted = await timed(
      () => createLoggedApp({ REDIS_URL: `redis://127.0.0.1:${silent.port}`, REDIS_COMMAND_TIMEOUT_MS: '1500', REDIS_CONNECT_TIMEOUT_MS: '1000' }),
      10_000,
    )
    closers.push(booted.value.close)
    // Start-up waited for the first handshake to time out (1.5 s), not longer.
    expect(booted.ms).toBeGreaterThanOrEqual(1400)
    expect(booted.ms).toBeLessThan(5000)
    expect((await timed(() => attempt(booted.value.app))).ms).toBeLessThan(FAST_MS)
  })
})
