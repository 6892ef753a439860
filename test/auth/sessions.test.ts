import { createHash } from 'node:crypto'
import { createDecoder } from 'fast-jwt'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ConfigError } from '../../src/config.js'
import { successorKey, successorToken } from '../../src/modules/sessions/tokens.js'
import { testConfig, useTestApp } from '../helpers/app.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'

// A limit this file never meets: the limit has its own tests.
const shop = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000' })

const INVALID = { error: 'Token inválido o expirado' }
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

interface Pair {
  token: string
  refreshToken: string
}

async function login(user: TestUser): Promise<Pair> {
  const res = await shop.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  expect(res.statusCode).toBe(200)
  return res.json()
}

const refresh = (refreshToken: unknown) => shop.app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken } as object })
const me = (token: string) => shop.app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${token}` } })
const sidOf = (token: string) => (createDecoder()(token) as { sid: number }).sid
const session = (id: number) => shop.app.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
const tokensOf = (sessionId: number) => shop.app.db.selectFrom('refresh_tokens').selectAll().where('session_id', '=', sessionId).orderBy('id').execute()

async function expectRefused(pair: Pair): Promise<void> {
  const access = await me(pair.token)
  expect(access.statusCode).toBe(401)
  expect(access.json()).toEqual(INVALID)
  const renewed = await refresh(pair.refreshToken)
  expect(renewed.statusCode).toBe(401)
  expect(renewed.json()).toEqual(INVALID)
}

describe('log-in starts a session', () => {
  it('the access token carries the session id; the refresh token is opaque and stored only as its SHA-256', async () => {
    const user = await makeUser(shop.app)
    const pair = await login(user)
    expect(pair.refreshToken).toMatch(/^[\w-]{43}$/)
    const sid = sidOf(pair.token)
    expect(Number.isInteger(sid)).toBe(true)
    const row = await session(sid)
    expect(row).toMatchObject({ user_id: user.id, ended_at: null, ended_reason: null })
    const [stored] = await tokensOf(sid)
    expect(stored).toMatchObject({ token_hash: sha256(pair.refreshToken), spent_at: null })
    // Valid for REFRESH_TOKEN_TTL (30 days by default) from its issue.
    expect(Date.parse(stored!.expires_at) - Date.parse(stored!.created_at)).toBe(30 * 86_400_000)
    const raw = await shop.app.db.selectFrom('refresh_tokens').select('id').where('token_hash', '=', pair.refreshToken).execute()
    expect(raw).toEqual([])
    expect((await me(pair.token)).statusCode).toBe(200)
  })
})

describe('the session check', () => {
  it('is answered from memory: a session ended behind the service’s back (SQL by hand) is not seen at once', async () => {
    const user = await makeUser(shop.app)
    const pair = await login(user)
    expect((await me(pair.token)).statusCode).toBe(200)
    // Through the app's own connection: no change-feed notice (the service's own routes publish one).
    await shop.app.db.updateTable('sessions').set({ ended_at: new Date().toISOString(), ended_reason: 'logout' }).where('id', '=', sidOf(pair.token)).execute()
    expect((await me(pair.token)).statusCode).toBe(200)
    // The refresh reads the database: refused at once.
    expect((await refresh(pair.refreshToken)).json()).toEqual(INVALID)
    // Any session change through the service empties the memory.
    shop.app.changeFeed.publish('sessions')
    expect((await me(pair.token)).json()).toEqual(INVALID)
  })
})

describe('housekeeping at log-in', () => {
  it('deletes the user’s expired refresh tokens and their sessions ended over 30 days ago; keeps everything else', async () => {
    const user = await makeUser(shop.app)
    const stranger = await makeUser(shop.app)
    const old = await login(user)
    const recent = await login(user)
    const live = await login(user)
    const theirs = await login(stranger)
    const longAgo = new Date(Date.now() - 31 * 86_400_000).toISOString()
    const yesterday = new Date(Date.now() - 86_400_000).toISOString()
    await shop.app.db
      .updateTable('sessions')
      .set({ ended_at: longAgo, ended_reason: 'logout' })
      .where('id', 'in', [sidOf(old.token), sidOf(theirs.token)])
      .execute()
    await shop.app.db.updateTable('sessions').set({ ended_at: yesterday, ended_reason: 'logout' }).where('id', '=', sidOf(recent.token)).execute()
    await shop.app.db
      .updateTable('refresh_tokens')
      .set({ expires_at: yesterday })
      .where('token_hash', 'in', [sha256(recent.refreshToken), sha256(theirs.refreshToken)])
      .execute()
    const fresh = await login(user)
    const left = await shop.app.db.selectFrom('sessions').select('id').where('user_id', 'in', [user.id, stranger.id]).orderBy('id').execute()
    expect(left.map((row) => row.id)).toEqual([sidOf(recent.token), sidOf(live.token), sidOf(theirs.token), sidOf(fresh.token)])
    expect(await tokensOf(sidOf(recent.token))).toEqual([])
    expect(await tokensOf(sidOf(theirs.token))).toHaveLength(1)
    expect(await tokensOf(sidOf(live.token))).toHaveLength(1)
    // The deleted session's access token is refused like an ended one's; the live session is untouched.
    expect((await me(old.token)).json()).toEqual(INVALID)
    expect((await refresh(live.refreshToken)).statusCode).toBe(200)
  })
})

describe('POST /auth/refresh', () => {
  it('answers a new pair and spends the old refresh token; both access tokens of the session keep working', async () => {
    const user = await makeUser(shop.app)
    const first = await login(user)
    const res = await refresh(first.refreshToken)
    expect(res.statusCode).toBe(200)
    const second: Pair = res.json()
    expect(Object.keys(second).sort()).toEqual(['refreshToken', 'token'])
    expect(second.refreshToken).not.toBe(first.refreshToken)
    expect(sidOf(second.token)).toBe(sidOf(first.token))
    expect(createDecoder()(second.token)).toMatchObject({ sub: String(user.id), role: 'customer' })
    const rows = await tokensOf(sidOf(first.token))
    expect(rows).toHaveLength(2)
    expect(rows[0]).toMatchObject({ token_hash: sha256(first.refreshToken), spent_at: expect.any(String) })
    expect(rows[1]).toMatchObject({ token_hash: sha256(second.refreshToken), spent_at: null })
    expect((await me(second.token)).statusCode).toBe(200)
    expect((await me(first.token)).statusCode).toBe(200)
    // And the chain goes on.
    const third = await refresh(second.refreshToken)
    expect(third.statusCode).toBe(200)
  })

  it.each([
    [{}, 'refreshToken should not be empty'],
    [{ refreshToken: '' }, 'refreshToken should not be empty'],
    [{ refreshToken: 42 }, 'refreshToken must be a string'],
  ])('validates the body: %j → 422 %s', async (payload, message) => {
    const res = await shop.app.inject({ method: 'POST', url: '/auth/refresh', payload })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
  })

  it('refuses any string that is not a valid refresh token, an access token or 5,000 characters included, with 401', async () => {
    const user = await makeUser(shop.app)
    const pair = await login(user)
    const selects = vi.spyOn(shop.app.db, 'selectFrom')
    // The outbox's dispatcher reads in the background: only reads of refresh tokens count.
    const tokenReads = () => selects.mock.calls.filter(([from]) => typeof from === 'string' && from.startsWith('refresh_tokens')).length
    try {
      // Not in a refresh token's form: refused without a query.
      for (const token of ['not-a-token', pair.token, pair.token.slice(0, 200), 'x'.repeat(201), 'x'.repeat(5000), `${pair.refreshToken}=`, ' '.repeat(43)]) {
        const res = await refresh(token)
        expect({ length: token.length, status: res.statusCode, body: res.json() }).toEqual({ length: token.length, status: 401, body: INVALID })
      }
      expect(tokenReads()).toBe(0)
      // In the form, but no token of ours: looked up, and refused the same.
      const unknown = await refresh('A'.repeat(43))
      expect(unknown.statusCode).toBe(401)
      expect(unknown.json()).toEqual(INVALID)
      expect(tokenReads()).toBe(1)
    } finally {
      selects.mockRestore()
    }
    expect(await session(sidOf(pair.token))).toMatchObject({ ended_at: null })
    expect((await refresh(pair.refreshToken)).statusCode).toBe(200)
  })

  describe('with a login rate limit of 1', () => {
    const limited = useTestApp({ AUTH_RATE_LIMIT_MAX: '1' })

    it('is not under the login rate limit', async () => {
      const user = limited.customer
      const res = await limited.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
      let refreshToken = res.json().refreshToken as string
      for (let i = 0; i < 3; i++) {
        const next = await limited.app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken } })
        expect(next.statusCode).toBe(200)
        expect(next.headers['ratelimit-limit']).toBeUndefined()
        refreshToken = next.json().refreshToken
      }
      expect((await limited.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).statusCode).toBe(429)
    })
  })

  describe('a spent token presented again', () => {
    afterEach(() => {
      vi.useRealTimers()
    })

    /** When the refresh token was spent, as the service wrote it (ms). */
    const spentAt = async (refreshToken: string) => {
      const row = await shop.app.db.selectFrom('refresh_tokens').select('spent_at').where('token_hash', '=', sha256(refreshToken)).executeTakeFirstOrThrow()
      return Date.parse(row.spent_at!)
    }

    it('within REFRESH_REUSE_GRACE (10 s) of its rotation is a duplicate: it gets the same successor pair, and nothing is issued', async () => {
      const user = await makeUser(shop.app)
      const first = await login(user)
      const rotated: Pair = (await refresh(first.refreshToken)).json()
      vi.useFakeTimers({ toFake: ['Date'] })
      vi.setSystemTime((await spentAt(first.refreshToken)) + 9_999)
      const again = await refresh(first.refreshToken)
      expect(again.statusCode).toBe(200)
      expect(again.json()).toEqual(rotated)
      expect(await tokensOf(sidOf(first.token))).toHaveLength(2)
      expect(await session(sidOf(first.token))).toMatchObject({ ended_at: null })
      expect((await me(rotated.token)).statusCode).toBe(200)
      expect((await refresh(rotated.refreshToken)).statusCode).toBe(200)
    })

    it('after the grace is theft: its whole session ends, its refresh and access tokens; other sessions live on', async () => {
      const user = await makeUser(shop.app)
      const stolen = await login(user)
      const other = await login(user)
      const rotated: Pair = (await refresh(stolen.refreshToken)).json()
      vi.useFakeTimers({ toFake: ['Date'] })
      vi.setSystemTime((await spentAt(stolen.refreshToken)) + 10_000)
      const again = await refresh(stolen.refreshToken)
      expect(again.statusCode).toBe(401)
      expect(again.json()).toEqual(INVALID)
      await expectRefused(rotated)
      expect((await me(stolen.token)).statusCode).toBe(401)
      expect(await session(sidOf(stolen.token))).toMatchObject({ ended_at: expect.any(String), ended_reason: 'reuse' })
      expect((await me(other.token)).statusCode).toBe(200)
      expect((await refresh(other.refreshToken)).statusCode).toBe(200)
    })

    it('once its successor has been rotated in turn is theft too, within the grace', async () => {
      const user = await makeUser(shop.app)
      const first = await login(user)
      const second: Pair = (await refresh(first.refreshToken)).json()
      const third: Pair = (await refresh(second.refreshToken)).json()
      const again = await refresh(first.refreshToken)
      expect(again.statusCode).toBe(401)
      expect(again.json()).toEqual(INVALID)
      await expectRefused(third)
      expect(await session(sidOf(first.token))).toMatchObject({ ended_reason: 'reuse' })
    })

    describe('with REFRESH_REUSE_GRACE=0', () => {
      const strict = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000', REFRESH_REUSE_GRACE: '0' })

      it('is theft at once', async () => {
        const user = strict.customer
        const first: Pair = (await strict.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).json()
        const renew = (refreshToken: string) => strict.app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken } })
        const rotated: Pair = (await renew(first.refreshToken)).json()
        expect((await renew(first.refreshToken)).statusCode).toBe(401)
        expect((await renew(rotated.refreshToken)).json()).toEqual(INVALID)
        const ended = await strict.app.db.selectFrom('sessions').select('ended_reason').where('id', '=', sidOf(first.token)).executeTakeFirstOrThrow()
        expect(ended.ended_reason).toBe('reuse')
      })
    })

    it('the successor is derived from the spent token under the JWT secret, never stored: the database keeps only hashes', async () => {
      const user = await makeUser(shop.app)
      const first = await login(user)
      const rotated: Pair = (await refresh(first.refreshToken)).json()
      expect(rotated.refreshToken).toMatch(/^[\w-]{43}$/)
      expect(rotated.refreshToken).toBe(successorToken(successorKey(shop.config.jwtSecret), first.refreshToken))
      expect(successorToken(successorKey('another-test-secret-that-is-long-enough-000'), first.refreshToken)).not.toBe(rotated.refreshToken)
      const rows = await tokensOf(sidOf(first.token))
      expect(rows.map((row) => row.token_hash)).toEqual([sha256(first.refreshToken), sha256(rotated.refreshToken)])
      expect(JSON.stringify(rows)).not.toContain(rotated.refreshToken)
    })
  })

  it('two refreshes of one token at once: both get the same new pair, and only one new token is issued', async () => {
    const user = await makeUser(shop.app)
    const pair = await login(user)
    const answers = await Promise.all([refresh(pair.refreshToken), refresh(pair.refreshToken)])
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200])
    expect(answers[0]!.json()).toEqual(answers[1]!.json())
    const rows = await tokensOf(sidOf(pair.token))
    expect(rows).toHaveLength(2)
    expect(rows.filter((row) => row.spent_at === null)).toHaveLength(1)
    expect(await session(sidOf(pair.token))).toMatchObject({ ended_at: null })
  })

  it('an expired refresh token is refused (the session is not ended for it: expiry is no theft)', async () => {
    const user = await makeUser(shop.app)
    const pair = await login(user)
    await shop.app.db
      .updateTable('refresh_tokens')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('token_hash', '=', sha256(pair.refreshToken))
      .execute()
    const res = await refresh(pair.refreshToken)
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual(INVALID)
    expect(await session(sidOf(pair.token))).toMatchObject({ ended_at: null })
    expect((await me(pair.token)).statusCode).toBe(200)
  })

  describe('with REFRESH_TOKEN_TTL=2h', () => {
    const short = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000', REFRESH_TOKEN_TTL: '2h' })

    it('each refresh token lives 2 hours', async () => {
      const user = short.customer
      const res = await short.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
      const row = await short.app.db
        .selectFrom('refresh_tokens')
        .selectAll()
        .where('token_hash', '=', sha256(res.json().refreshToken))
        .executeTakeFirstOrThrow()
      expect(Date.parse(row.expires_at) - Date.parse(row.created_at)).toBe(2 * 3_600_000)
    })
  })

  it('REFRESH_TOKEN_TTL sets each token’s lifetime, in JWT_EXPIRES_IN’s forms', () => {
    expect(testConfig({ REFRESH_TOKEN_TTL: '3600' }).sessions.refreshTokenTtlMs).toBe(3_600_000)
    expect(testConfig({ RESET_TOKEN_TTL: '90m' }).sessions.resetTokenTtlMs).toBe(90 * 60_000)
    expect(testConfig().sessions).toEqual({
      refreshTokenTtlMs: 30 * 86_400_000,
      refreshReuseGraceMs: 10_000,
      resetTokenTtlMs: 3_600_000,
      shopUrl: 'http://shop.test',
    })
    expect(() => testConfig({ REFRESH_TOKEN_TTL: 'soon' })).toThrow(ConfigError)
    expect(() => testConfig({ RESET_TOKEN_TTL: '0' })).toThrow(/RESET_TOKEN_TTL must be a duration/)
    expect(() => testConfig({ SHOP_URL: 'tienda' })).toThrow(/SHOP_URL must be an absolute http\(s\) URL/)
  })

  it('REFRESH_REUSE_GRACE: 10 s by default, in JWT_EXPIRES_IN’s forms, 0 turns it off, at most 5 minutes', () => {
    const grace = (value: string) => testConfig({ REFRESH_REUSE_GRACE: value }).sessions.refreshReuseGraceMs
    expect(testConfig().sessions.refreshReuseGraceMs).toBe(10_000)
    expect(grace('30s')).toBe(30_000)
    expect(grace('30')).toBe(30_000)
    expect(grace('2m')).toBe(120_000)
    expect(grace('500ms')).toBe(500)
    expect(grace('0')).toBe(0)
    expect(grace('5m')).toBe(300_000)
    for (const bad of ['soon', '-1', '6m', '1h']) {
      expect(() => grace(bad)).toThrow(`REFRESH_REUSE_GRACE must be a duration of at most 5 minutes such as 10s, 30s or 2m, or 0 to turn it off (got "${bad}")`)
    }
  })

  it('a deleted user or a changed role ends the sessions: refresh and access tokens answer 401', async () => {
    const admin = shop.admin
    const deleted = await makeUser(shop.app)
    const promoted = await makeUser(shop.app)
    const deletedPair = await login(deleted)
    const promotedPair = await login(promoted)
    expect((await shop.app.inject({ method: 'DELETE', url: `/auth/users/${deleted.id}`, headers: bearer(admin) })).statusCode).toBe(200)
    expect((await shop.app.inject({ method: 'PATCH', url: `/auth/users/${promoted.id}`, headers: bearer(admin), payload: { role: 'admin' } })).statusCode).toBe(
      200,
    )
    await expectRefused(deletedPair)
    await expectRefused(promotedPair)
    // The promoted user logs in again, as an admin.
    const fresh = await login(promoted)
    expect(createDecoder()(fresh.token)).toMatchObject({ role: 'admin' })
    expect((await shop.app.inject({ url: '/auth/users', headers: { authorization: `Bearer ${fresh.token}` } })).statusCode).toBe(200)
  })
})

describe('POST /auth/logout', () => {
  const logout = (token: string, payload?: object) =>
    shop.app.inject({ method: 'POST', url: '/auth/logout', headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) })

  it('ends the caller’s session at once: its access tokens and refresh token; the user’s other sessions live on', async () => {
    const user = await makeUser(shop.app)
    const pair = await login(user)
    const other = await login(user)
    const older = pair.token
    const rotated: Pair = (await refresh(pair.refreshToken)).json()
    const res = await logout(rotated.token)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: 'Sesión cerrada' })
    await expectRefused(rotated)
    expect((await me(older)).statusCode).toBe(401)
    expect(await session(sidOf(pair.token))).toMatchObject({ ended_at: expect.any(String), ended_reason: 'logout' })
    expect((await me(other.token)).statusCode).toBe(200)
    expect((await refresh(other.refreshToken)).statusCode).toBe(200)
    // Logging out again with the ended session's token: 401 like any request.
    const again = await logout(rotated.token)
    expect(again.statusCode).toBe(401)
    expect(again.json()).toEqual(INVALID)
  })

  it('with a refresh token of another of the caller’s sessions, ends that one too; someone else’s is ignored', async () => {
    const user = await makeUser(shop.app)
    const stranger = await makeUser(shop.app)
    const here = await login(user)
    const there = await login(user)
    const theirs = await login(stranger)
    const res = await logout(here.token, { refreshToken: there.refreshToken })
    expect(res.statusCode).toBe(200)
    await expectRefused(here)
    await expectRefused(there)
    const other = await login(user)
    const ignored = await logout(other.token, { refreshToken: theirs.refreshToken })
    expect(ignored.statusCode).toBe(200)
    expect(ignored.json()).toEqual({ message: 'Sesión cerrada' })
    expect((await me(theirs.token)).statusCode).toBe(200)
    expect(await session(sidOf(theirs.token))).toMatchObject({ ended_at: null })
  })

  it('needs a token (401), and validates the body before ending anything (422)', async () => {
    const none = await shop.app.inject({ method: 'POST', url: '/auth/logout' })
    expect(none.statusCode).toBe(401)
    expect(none.json()).toEqual({ error: 'Unauthorized - No user found' })
    const user = await makeUser(shop.app)
    const pair = await login(user)
    for (const [payload, message] of [
      [{ refreshToken: 5 }, 'refreshToken must be a string'],
      [{ refreshToken: '' }, 'refreshToken should not be empty'],
    ] as const) {
      const res = await logout(pair.token, payload)
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error: message })
    }
    expect((await me(pair.token)).statusCode).toBe(200)
  })

  it('a token from before sessions (no sid) names no session: logging out with it ends every token of the user', async () => {
    const user = await makeUser(shop.app)
    const pair = await login(user)
    expect(createDecoder()(user.token)).not.toHaveProperty('sid')
    const res = await logout(user.token)
    expect(res.statusCode).toBe(200)
    expect((await me(user.token)).statusCode).toBe(401)
    await expectRefused(pair)
  })
})

describe('POST /auth/logout-all', () => {
  it('every token of the caller stops working, every session ends; a new log-in works', async () => {
    const user = await makeUser(shop.app)
    const stranger = await makeUser(shop.app)
    const a = await login(user)
    const b = await login(user)
    const theirs = await login(stranger)
    const res = await shop.app.inject({ method: 'POST', url: '/auth/logout-all', headers: { authorization: `Bearer ${a.token}` } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: 'Todas las sesiones cerradas' })
    await expectRefused(a)
    await expectRefused(b)
    expect((await me(user.token)).statusCode).toBe(401)
    const ended = await shop.app.db.selectFrom('sessions').select(['ended_reason']).where('user_id', '=', user.id).execute()
    expect(ended.map((row) => row.ended_reason)).toEqual(['logout-all', 'logout-all'])
    expect((await me(theirs.token)).statusCode).toBe(200)
    const fresh = await login(user)
    expect((await me(fresh.token)).statusCode).toBe(200)
    expect((await refresh(fresh.refreshToken)).statusCode).toBe(200)
  })

  it('takes no body, and needs a token', async () => {
    const user = await makeUser(shop.app)
    const pair = await login(user)
    const body = await shop.app.inject({ method: 'POST', url: '/auth/logout-all', headers: { authorization: `Bearer ${pair.token}` }, payload: { all: true } })
    expect(body.statusCode).toBe(422)
    expect(body.json()).toEqual({ error: 'property all should not exist' })
    expect((await me(pair.token)).statusCode).toBe(200)
    const none = await shop.app.inject({ method: 'POST', url: '/auth/logout-all' })
    expect(none.statusCode).toBe(401)
    expect(none.json()).toEqual({ error: 'Unauthorized - No user found' })
  })
})
