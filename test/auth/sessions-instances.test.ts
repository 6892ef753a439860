import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/connect.js'
import { testConfig } from '../helpers/app.js'
import { makeUser, type TestUser } from '../helpers/factories.js'
import { createSharedDatabase, type SharedDatabase } from '../helpers/shared-database.js'

// Two real instances of the service on one database (each with its own connections and, on PostgreSQL,
// its own change listener): a session ended through either one is refused by the other within a second,
// although each answers the auth check from memory.

let shared: SharedDatabase
const handles: DatabaseHandle[] = []
let a: FastifyInstance
let b: FastifyInstance

async function startInstance(): Promise<FastifyInstance> {
  const handle = shared.open()
  handles.push(handle)
  const app = await buildApp(testConfig({ AUTH_RATE_LIMIT_MAX: '100000' }), { database: handle, logger: false })
  await app.ready()
  return app
}

beforeAll(async () => {
  shared = await createSharedDatabase('sessions')
  a = await startInstance()
  b = await startInstance()
})

afterAll(async () => {
  await a?.close()
  await b?.close()
  for (const handle of handles) await handle.db.destroy()
  await shared?.drop()
})

interface Pair {
  token: string
  refreshToken: string
}

async function login(app: FastifyInstance, user: TestUser, password = user.password): Promise<Pair> {
  const res = await app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password } })
  expect(res.statusCode).toBe(200)
  return res.json()
}

const me = (app: FastifyInstance, token: string) => app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${token}` } })

/** Polls `app` with the token until it answers 401; returns the milliseconds since `since` (the ending's answer). Gives up after 10 s (the cache's own bound). */
async function refusedAfter(app: FastifyInstance, token: string, since: number): Promise<number> {
  for (;;) {
    const answer = await me(app, token)
    if (answer.statusCode === 401) {
      expect(answer.json()).toEqual({ error: 'Token inválido o expirado' })
      return performance.now() - since
    }
    if (performance.now() - since > 10_000) throw new Error('the ended session was still accepted after 10 s')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

const delays: Record<string, number> = {}

describe('sessions on two instances', () => {
  it('logout on A: the access token is refused on B, which had it in memory (delay measured)', async () => {
    const user = await makeUser(a)
    const pair = await login(a, user)
    // B has checked this session and keeps its state in memory.
    expect((await me(b, pair.token)).statusCode).toBe(200)
    expect((await me(b, pair.token)).statusCode).toBe(200)
    let heardOnB = 0
    b.changeFeed.subscribe('sessions', () => (heardOnB += 1))
    const out = await a.inject({ method: 'POST', url: '/auth/logout', headers: { authorization: `Bearer ${pair.token}` } })
    const started = performance.now()
    expect(out.statusCode).toBe(200)
    expect((await me(a, pair.token)).statusCode).toBe(401)
    delays.logout = await refusedAfter(b, pair.token, started)
    const renewed = await b.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken: pair.refreshToken } })
    expect(renewed.statusCode).toBe(401)
    // The change feed told B (not the expiry of its cached state).
    expect(heardOnB).toBeGreaterThanOrEqual(1)
  })

  it('refreshes of one token on both instances at once: every client gets the same successor pair (the instances derive it alike)', async () => {
    const user = await makeUser(a)
    let current = await login(a, user)
    for (let round = 0; round < 5; round++) {
      const refresh = (app: FastifyInstance) => app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken: current.refreshToken } })
      const answers = await Promise.all([a, b, a, b].map(refresh))
      expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 200, 200])
      const pairs = answers.map((answer) => answer.json<Pair>())
      for (const pair of pairs) expect(pair).toEqual(pairs[0])
      for (const app of [a, b]) expect((await me(app, pairs[0]!.token)).statusCode).toBe(200)
      current = pairs[0]!
    }
  })

  it('logout-all on B ends the sessions A knows; a password change on B keeps the caller’s own session on A', async () => {
    const user = await makeUser(a)
    const first = await login(a, user)
    const second = await login(a, user)
    for (const pair of [first, second]) expect((await me(a, pair.token)).statusCode).toBe(200)
    const all = await b.inject({ method: 'POST', url: '/auth/logout-all', headers: { authorization: `Bearer ${first.token}` } })
    let started = performance.now()
    expect(all.statusCode).toBe(200)
    delays.logoutAll = await refusedAfter(a, second.token, started)
    expect((await me(a, first.token)).statusCode).toBe(401)

    const mine = await login(b, user)
    const laptop = await login(a, user)
    expect((await me(a, mine.token)).statusCode).toBe(200)
    expect((await me(a, laptop.token)).statusCode).toBe(200)
    const changed = await b.inject({
      method: 'PATCH',
      url: '/auth/me',
      headers: { authorization: `Bearer ${mine.token}` },
      payload: { password: 'changed-on-b', currentPassword: user.password },
    })
    started = performance.now()
    expect(changed.statusCode).toBe(200)
    delays.passwordChange = await refusedAfter(a, laptop.token, started)
    expect((await me(a, mine.token)).statusCode).toBe(200)
    expect((await me(b, mine.token)).statusCode).toBe(200)
    console.log(
      `session endings heard by the other instance after (ms): ${JSON.stringify(Object.fromEntries(Object.entries(delays).map(([k, v]) => [k, Math.round(v)])))}`,
    )
  })
})
