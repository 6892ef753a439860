import { describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { queuedEmails } from '../helpers/outbox.js'

const shop = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000' })

const INVALID = { error: 'Token inválido o expirado' }

interface Pair {
  token: string
  refreshToken: string
}

async function login(email: string, password: string): Promise<Pair> {
  const res = await shop.app.inject({ method: 'POST', url: '/auth/login', payload: { email, password } })
  expect(res.statusCode).toBe(200)
  return res.json()
}

const patchMe = (token: string, payload: unknown) =>
  shop.app.inject({ method: 'PATCH', url: '/auth/me', headers: { authorization: `Bearer ${token}` }, payload: payload as object })
const me = (token: string) => shop.app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${token}` } })
const refresh = (refreshToken: string) => shop.app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken } })
const row = (user: TestUser) => shop.app.db.selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow()

describe('PATCH /auth/me', () => {
  it('changes the name with no current password, and answers the user', async () => {
    const user = await makeUser(shop.app, 'customer', 'Old Name')
    const pair = await login(user.email, user.password)
    const res = await patchMe(pair.token, { name: '  Nueva  ' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ id: user.id, name: 'Nueva', email: user.email, role: 'customer', staffRole: null, createdAt: expect.any(String) })
    expect((await row(user)).name).toBe('Nueva')
    expect((await me(pair.token)).statusCode).toBe(200)
  })

  it('drops a role in the body: a customer cannot promote themself', async () => {
    const user = await makeUser(shop.app)
    const res = await patchMe(user.token, { name: 'Climber', role: 'admin' })
    expect(res.statusCode).toBe(200)
    expect(res.json().role).toBe('customer')
    expect((await row(user)).role).toBe('customer')
    const only = await patchMe(user.token, { role: 'admin' })
    expect(only.statusCode).toBe(422)
    expect(only.json()).toEqual({ error: 'body must contain at least one field' })
  })

  it('a new e-mail or password needs the current one: missing or wrong → 401 Credenciales inválidas, nothing changes', async () => {
    const user = await makeUser(shop.app)
    const before = await row(user)
    for (const payload of [
      { email: 'new-address@shop.test' },
      { email: 'new-address@shop.test', currentPassword: 'wrong-one' },
      { email: 'new-address@shop.test', currentPassword: '' },
      { password: 'another-pass' },
      { password: 'another-pass', currentPassword: 'wrong-one' },
      { name: 'X', password: 'another-pass', currentPassword: 'wrong-one' },
    ]) {
      const res = await patchMe(user.token, payload)
      expect(res.statusCode).toBe(401)
      expect(res.json()).toEqual({ error: 'Credenciales inválidas' })
    }
    expect(await row(user)).toEqual(before)
    expect((await me(user.token)).statusCode).toBe(200)
  })

  it('checks in order: fields (422), then the current password (401), then a taken e-mail (409)', async () => {
    const user = await makeUser(shop.app)
    const other = await makeUser(shop.app)
    const before = await row(user)
    const cases: [unknown, number, string][] = [
      [{}, 422, 'body must contain at least one field'],
      [{ email: 'not-an-email', currentPassword: 'wrong' }, 422, 'email must be a valid email'],
      [{ password: '123', currentPassword: 'wrong' }, 422, 'La contraseña debe tener al menos 6 caracteres'],
      [{ name: '', password: 'another-pass' }, 422, 'name should not be empty'],
      [{ name: 5 }, 422, 'name must be a string'],
      [{ email: 'a@b.co', currentPassword: 42 }, 422, 'currentPassword must be a string'],
      [{ email: other.email.toUpperCase(), currentPassword: 'wrong' }, 401, 'Credenciales inválidas'],
      [{ email: ` ${other.email.toUpperCase()} `, currentPassword: user.password }, 409, 'El email ya está en uso'],
    ]
    for (const [payload, status, message] of cases) {
      const res = await patchMe(user.token, payload)
      expect({ payload, status: res.statusCode, body: res.json() }).toEqual({ payload, status, body: { error: message } })
    }
    expect(await row(user)).toEqual(before)
  })

  it('needs a signed-in caller', async () => {
    const res = await shop.app.inject({ method: 'PATCH', url: '/auth/me', payload: { name: 'Nobody' } })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: 'Unauthorized - No user found' })
  })

  it('the same e-mail in another case is no change: no current password needed', async () => {
    const user = await makeUser(shop.app)
    const res = await patchMe(user.token, { email: user.email.toUpperCase() })
    expect(res.statusCode).toBe(200)
    expect(res.json().email).toBe(user.email)
  })

  it('a new e-mail with the current password: the user logs in with it; its pending reset links end', async () => {
    const user = await makeUser(shop.app)
    await shop.app.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: user.email } })
    const [mail] = await queuedEmails(shop.app.db, user.email)
    const token = new URL(String(mail!.data.link)).searchParams.get('token')!
    const email = `moved-${user.id}@shop.test`
    const res = await patchMe(user.token, { email: `  ${email.toUpperCase()}`, currentPassword: user.password })
    expect(res.statusCode).toBe(200)
    expect(res.json().email).toBe(email)
    // An e-mail change is no credentials change: the token stays good.
    expect((await me(user.token)).statusCode).toBe(200)
    await login(email, user.password)
    const confirm = await shop.app.inject({ method: 'POST', url: '/auth/password-reset/confirm', payload: { token, password: 'taken-over-1' } })
    expect(confirm.statusCode).toBe(400)
    expect(confirm.json()).toEqual({ error: 'Enlace inválido o caducado' })
  })

  it('a password change made with a token from before sessions (no sid) ends that token too', async () => {
    const user = await makeUser(shop.app)
    const res = await patchMe(user.token, { password: 'legacy-changed', currentPassword: user.password })
    expect(res.statusCode).toBe(200)
    expect((await me(user.token)).json()).toEqual(INVALID)
    await login(user.email, 'legacy-changed')
  })

  it('a new password ends every other session of the user; the caller’s own session keeps working', async () => {
    const user = await makeUser(shop.app)
    const mine = await login(user.email, user.password)
    const laptop = await login(user.email, user.password)
    const stranger = await makeUser(shop.app)
    const theirs = await login(stranger.email, stranger.password)
    const res = await patchMe(mine.token, { password: 'brand-new-pass', currentPassword: user.password })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ id: user.id, name: 'Test User', email: user.email, role: 'customer', staffRole: null, createdAt: expect.any(String) })
    expect(res.body).not.toContain('brand-new-pass')
    // The caller: its access token, and its refresh token, which rotates on.
    expect((await me(mine.token)).statusCode).toBe(200)
    const renewed = await refresh(mine.refreshToken)
    expect(renewed.statusCode).toBe(200)
    expect((await me(renewed.json().token)).statusCode).toBe(200)
    // The other session, and a token from before sessions.
    expect((await me(laptop.token)).json()).toEqual(INVALID)
    expect((await refresh(laptop.refreshToken)).json()).toEqual(INVALID)
    expect((await me(user.token)).statusCode).toBe(401)
    const ended = await shop.app.db.selectFrom('sessions').select(['ended_reason']).where('user_id', '=', user.id).orderBy('id').execute()
    expect(ended.map((r) => r.ended_reason)).toEqual([null, 'password'])
    // Someone else is untouched.
    expect((await me(theirs.token)).statusCode).toBe(200)
    // The new password logs in; the old one does not.
    const old = await shop.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
    expect(old.statusCode).toBe(401)
    await login(user.email, 'brand-new-pass')
    // A later role change still ends the carried-over session.
    await shop.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(shop.admin), payload: { role: 'admin' } })
    expect((await me(mine.token)).statusCode).toBe(401)
  })
})
