import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type TestApp, createTestApp } from '../helpers/app.js'
import { makeUser } from '../helpers/factories.js'

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

let t: TestApp

beforeAll(async () => {
  t = await createTestApp({ AUTH_RATE_LIMIT_MAX: '100000' })
})
afterAll(async () => t.close())

describe('logout racing a request in flight', () => {
  it('the request that was already authorized finishes; the session stays ended; later requests are refused', async () => {
    const user = await makeUser(t.app)
    const pair = (await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).json()
    const auth = { authorization: `Bearer ${pair.token}` }
    let release!: () => void
    const entered = new Promise<void>((resolve) => (gate.entered = resolve))
    gate.release = new Promise<void>((resolve) => (release = resolve))
    gate.armed = true
    const inFlight = t.app.inject({ method: 'PATCH', url: '/auth/me', headers: auth, payload: { password: 'set-in-flight', currentPassword: user.password } })
    // Authenticated, current password checked: now hashing the new one.
    await entered
    const out = await t.app.inject({ method: 'POST', url: '/auth/logout', headers: auth })
    expect(out.statusCode).toBe(200)
    release()
    const finished = await inFlight
    expect(finished.statusCode).toBe(200)
    // The password change could not carry the ended session over: it stays ended.
    const session = await t.app.db.selectFrom('sessions').select(['ended_reason']).where('user_id', '=', user.id).executeTakeFirstOrThrow()
    expect(session.ended_reason).toBe('logout')
    const after = await t.app.inject({ url: '/auth/me', headers: auth })
    expect(after.statusCode).toBe(401)
    expect(after.json()).toEqual({ error: 'Token inválido o expirado' })
    const renewed = await t.app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken: pair.refreshToken } })
    expect(renewed.statusCode).toBe(401)
    // What the finished request did holds: the new password is the one that logs in.
    const login = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'set-in-flight' } })
    expect(login.statusCode).toBe(200)
  })
})
