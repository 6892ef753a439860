import { createDecoder } from 'fast-jwt'
import { describe, expect, it, vi } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { makeUser, type TestUser } from '../helpers/factories.js'

// A request in flight when its session is logged out: it was authorized when it started, so it
// finishes; everything that starts after the logout answered is refused. The password hashing of
// PATCH /auth/me is held at a gate, so the logout lands in the middle of that request, every time.

const gate = vi.hoisted(() => ({ armed: false, entered: (): void => {}, release: Promise.resolve() }))

vi.mock('../../src/modules/users/passwords.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/modules/users/passwords.js')>()
  return {
    ...original,
    hashPassword: async (password: string) => {
      if (gate.armed) {
        gate.armed = false
        gate.entered()
        await gate.release
      }
      return original.hashPassword(password)
    },
  }
})

const shop = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000' })

describe('logout racing a request in flight', () => {
  it('the request that was already authorized finishes; the session stays ended; later requests are refused', async () => {
    const user = await makeUser(shop.app)
    const pair = (await shop.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).json()
    const auth = { authorization: `Bearer ${pair.token}` }
    let release!: () => void
    const entered = new Promise<void>((resolve) => (gate.entered = resolve))
    gate.release = new Promise<void>((resolve) => (release = resolve))
    gate.armed = true
    const inFlight = shop.app.inject({
      method: 'PATCH',
      url: '/auth/me',
      headers: auth,
      payload: { password: 'set-in-flight', currentPassword: user.password },
    })
    // Authenticated, current password checked: now hashing the new one.
    await entered
    const out = await shop.app.inject({ method: 'POST', url: '/auth/logout', headers: auth })
    expect(out.statusCode).toBe(200)
    release()
    const finished = await inFlight
    expect(finished.statusCode).toBe(200)
    // The password change could not carry the ended session over: it stays ended.
    const session = await shop.app.db.selectFrom('sessions').select(['ended_reason']).where('user_id', '=', user.id).executeTakeFirstOrThrow()
    expect(session.ended_reason).toBe('logout')
    const after = await shop.app.inject({ url: '/auth/me', headers: auth })
    expect(after.statusCode).toBe(401)
    expect(after.json()).toEqual({ error: 'Token inválido o expirado' })
    const renewed = await shop.app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken: pair.refreshToken } })
    expect(renewed.statusCode).toBe(401)
    // What the finished request did holds: the new password is the one that logs in.
    const login = await shop.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'set-in-flight' } })
    expect(login.statusCode).toBe(200)
  })
})

interface Pair {
  token: string
  refreshToken: string
}

const login = async (user: TestUser): Promise<Pair> =>
  (await shop.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).json()
const refresh = (refreshToken: string) => shop.app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken } })
const me = (token: string) => shop.app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${token}` } })
const sidOf = (token: string) => (createDecoder()(token) as { sid: number }).sid

// Clients that refresh one refresh token at the same moment (tabs waking up together) are duplicates, not
// a theft: each one gets the successor pair. Several rounds per session, each round refreshing the pair the
// round before handed out, so that on PostgreSQL (where a duplicate may arrive before or after the winner's
// commit) both orders are met.
describe('refreshes of one token at once (tabs waking up together)', () => {
  const ROUNDS = 5

  it.each([2, 3, 10])('%i at once: every client gets the same successor pair, which works; the session lives on', async (clients) => {
    const user = await makeUser(shop.app)
    const first = await login(user)
    let current = first
    for (let round = 0; round < ROUNDS; round++) {
      const answers = await Promise.all(Array.from({ length: clients }, () => refresh(current.refreshToken)))
      expect(answers.map((answer) => answer.statusCode)).toEqual(Array<number>(clients).fill(200))
      const pairs = answers.map((answer) => answer.json<Pair>())
      for (const pair of pairs) expect(pair).toEqual(pairs[0])
      const successor = pairs[0]!
      expect(successor.refreshToken).not.toBe(current.refreshToken)
      expect(sidOf(successor.token)).toBe(sidOf(first.token))
      for (const pair of pairs) expect((await me(pair.token)).statusCode).toBe(200)
      current = successor
    }
    const session = await shop.app.db.selectFrom('sessions').select(['ended_at']).where('id', '=', sidOf(first.token)).executeTakeFirstOrThrow()
    expect(session.ended_at).toBeNull()
    // The pair every client now holds refreshes once more, and that pair works too.
    const further = await refresh(current.refreshToken)
    expect(further.statusCode).toBe(200)
    expect((await me(further.json<Pair>().token)).statusCode).toBe(200)
  })
})
