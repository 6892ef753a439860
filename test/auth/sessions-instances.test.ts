import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import { makeUser, type TestUser } from '../helpers/factories.js'
import { useInstances } from '../helpers/shared-database.js'

// Two real instances of the service on one database (each with its own connections and, on PostgreSQL,
// its own change listener): a session ended through either one is refused by the other within a second,
// although each answers the auth check from memory.

const instances = useInstances(2, 'sessions', { env: { AUTH_RATE_LIMIT_MAX: '100000' } })
let a: FastifyInstance
let b: FastifyInstance

beforeAll(() => {
  ;[a, b] = instances.apps as [FastifyInstance, FastifyInstance]
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

/** Asks `app` with the token until it is refused as an ended session's; gives up after 10 s (the cache's own bound). */
async function refused(app: FastifyInstance, token: string): Promise<void> {
  const answer = async () => {
    const res = await me(app, token)
    return { status: res.statusCode, body: res.json() as unknown }
  }
  await expect.poll(answer, { timeout: 10_000, interval: 5 }).toEqual({ status: 401, body: { error: 'Token inválido o expirado' } })
}

describe('sessions on two instances', () => {
  it('logout on A: the access token is refused on B, which had it in memory', async () => {
    const user = await makeUser(a)
    const pair = await login(a, user)
    // B has checked this session and keeps its state in memory.
    expect((await me(b, pair.token)).statusCode).toBe(200)
    expect((await me(b, pair.token)).statusCode).toBe(200)
    let heardOnB = 0
    b.changeFeed.subscribe('sessions', () => (heardOnB += 1))
    const out = await a.inject({ method: 'POST', url: '/auth/logout', headers: { authorization: `Bearer ${pair.token}` } })
    expect(out.statusCode).toBe(200)
    expect((await me(a, pair.token)).statusCode).toBe(401)
    await refused(b, pair.token)
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
    expect(all.statusCode).toBe(200)
    await refused(a, second.token)
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
    expect(changed.statusCode).toBe(200)
    await refused(a, laptop.token)
    expect((await me(a, mine.token)).statusCode).toBe(200)
    expect((await me(b, mine.token)).statusCode).toBe(200)
  })
})
