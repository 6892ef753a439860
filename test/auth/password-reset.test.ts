import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { openTestDatabase, testConfig, useTestApp } from '../helpers/app.js'
import { makeUser, type TestUser } from '../helpers/factories.js'
import { queuedEmails } from '../helpers/outbox.js'

const shop = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000' })

const ACCEPTED = { message: 'Si el email está registrado, recibirás un enlace para restablecer la contraseña' }
const BAD_LINK = { error: 'Enlace inválido o caducado' }
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

const requestReset = (email: unknown, app = shop.app, remoteAddress?: string) =>
  app.inject({ method: 'POST', url: '/auth/password-reset', payload: { email } as object, ...(remoteAddress ? { remoteAddress } : {}) })
const confirm = (payload: object, app = shop.app, remoteAddress?: string) =>
  app.inject({ method: 'POST', url: '/auth/password-reset/confirm', payload, ...(remoteAddress ? { remoteAddress } : {}) })
const login = (email: string, password: string, app = shop.app) => app.inject({ method: 'POST', url: '/auth/login', payload: { email, password } })

/** The tokens of the reset links queued for `email`, oldest first. */
async function linkTokens(email: string, app = shop.app): Promise<string[]> {
  const mails = await queuedEmails(app.db, email)
  return mails.map((mail) => {
    expect(mail.template).toBe('password-reset')
    return new URL(String(mail.data.link)).searchParams.get('token') as string
  })
}

async function resetLink(user: TestUser): Promise<string> {
  const res = await requestReset(user.email)
  expect(res.statusCode).toBe(202)
  return (await linkTokens(user.email)).at(-1) as string
}

const links = (userId: number) => shop.app.db.selectFrom('password_resets').selectAll().where('user_id', '=', userId).orderBy('id').execute()

describe('POST /auth/password-reset', () => {
  it('queues one e-mail with a link to the shop, and stores the token only as its SHA-256', async () => {
    const user = await makeUser(shop.app, 'customer', 'Ana Pérez')
    const res = await requestReset(`  ${user.email.toUpperCase()} `)
    expect(res.statusCode).toBe(202)
    expect(res.json()).toEqual(ACCEPTED)
    const mails = await queuedEmails(shop.app.db, user.email)
    expect(mails).toEqual([{ template: 'password-reset', to: user.email, data: { name: 'Ana Pérez', link: expect.any(String) } }])
    const link = String(mails[0]!.data.link)
    expect(link).toMatch(/^http:\/\/shop\.test\/reset-password\?token=[\w-]{43}$/)
    const token = new URL(link).searchParams.get('token')!
    const [row] = await links(user.id)
    expect(row).toMatchObject({ token_hash: sha256(token), used_at: null })
    // Valid for RESET_TOKEN_TTL, one hour by default.
    expect(Date.parse(row!.expires_at) - Date.parse(row!.created_at)).toBe(3_600_000)
  })

  it('an unknown e-mail gets the same status and body, and nothing is written or sent', async () => {
    const before = await queuedEmails(shop.app.db)
    const resetsBefore = await shop.app.db.selectFrom('password_resets').select('id').execute()
    const res = await requestReset('nobody-here@shop.test')
    const known = await requestReset((await makeUser(shop.app)).email)
    expect(res.statusCode).toBe(known.statusCode)
    expect(res.body).toBe(known.body)
    expect(res.headers['content-type']).toBe(known.headers['content-type'])
    expect(await queuedEmails(shop.app.db, 'nobody-here@shop.test')).toEqual([])
    expect(await queuedEmails(shop.app.db)).toHaveLength(before.length + 1)
    expect(await shop.app.db.selectFrom('password_resets').select('id').execute()).toHaveLength(resetsBefore.length + 1)
  })

  it.each([
    [{}, 'email should not be empty'],
    [{ email: 'not-an-email' }, 'email must be a valid email'],
    [{ email: 5 }, 'email must be a valid email'],
    [{ email: '' }, 'email must be a valid email'],
  ])('validates the e-mail first: %j → 422 %s', async (payload, message) => {
    const res = await shop.app.inject({ method: 'POST', url: '/auth/password-reset', payload })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
  })

  it('a new request leaves older links working; past five live links no more are sent', async () => {
    const user = await makeUser(shop.app)
    for (let i = 0; i < 7; i++) expect((await requestReset(user.email)).statusCode).toBe(202)
    const tokens = await linkTokens(user.email)
    expect(tokens).toHaveLength(5)
    expect(await links(user.id)).toHaveLength(5)
    // The oldest link works; using it ends the others.
    const res = await confirm({ token: tokens[0], password: 'from-the-first' })
    expect(res.statusCode).toBe(200)
    for (const token of tokens.slice(1)) expect((await confirm({ token, password: 'from-another' })).json()).toEqual(BAD_LINK)
  })

  describe('on a shop with SHOP_URL and RESET_TOKEN_TTL set', () => {
    const tienda = useTestApp({ SHOP_URL: 'https://tienda.example/', RESET_TOKEN_TTL: '15m' })

    it('SHOP_URL (without its trailing slash) makes the link; RESET_TOKEN_TTL its lifetime', async () => {
      const user = tienda.customer
      expect((await requestReset(user.email, tienda.app)).statusCode).toBe(202)
      const [mail] = await queuedEmails(tienda.app.db, user.email)
      expect(String(mail!.data.link)).toMatch(/^https:\/\/tienda\.example\/reset-password\?token=[\w-]{43}$/)
      const row = await tienda.app.db.selectFrom('password_resets').selectAll().where('user_id', '=', user.id).executeTakeFirstOrThrow()
      expect(Date.parse(row.expires_at) - Date.parse(row.created_at)).toBe(15 * 60_000)
    })
  })

  // How long each takes (a side channel for who has an account) is a bench scenario, not a test's figure.
  it('answers known and unknown e-mails, one after the other, with the same status and body', async () => {
    const fresh = await Promise.all(Array.from({ length: 20 }, () => makeUser(shop.app)))
    for (const [i, user] of fresh.entries()) {
      const known = await requestReset(user.email)
      const unknown = await requestReset(`ghost-${i}-${user.id}@shop.test`)
      expect([known.statusCode, known.json()]).toEqual([202, ACCEPTED])
      expect([unknown.statusCode, unknown.body]).toEqual([known.statusCode, known.body])
    }
    expect(await queuedEmails(shop.app.db, fresh[0]!.email)).toHaveLength(1)
  })
})

describe('POST /auth/password-reset/confirm', () => {
  it('sets the new password, ends every session of the user and every other link; the link is single use', async () => {
    const user = await makeUser(shop.app)
    const first = (await login(user.email, user.password)).json()
    const second = (await login(user.email, user.password)).json()
    const older = await resetLink(user)
    const token = await resetLink(user)
    const res = await confirm({ token, password: 'recovered-pass' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: 'Contraseña actualizada' })
    for (const pair of [first, second]) {
      const access = await shop.app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${pair.token}` } })
      expect(access.statusCode).toBe(401)
      expect(access.json()).toEqual({ error: 'Token inválido o expirado' })
      const renewed = await shop.app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken: pair.refreshToken } })
      expect(renewed.statusCode).toBe(401)
    }
    expect((await shop.app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${user.token}` } })).statusCode).toBe(401)
    const ended = await shop.app.db.selectFrom('sessions').select('ended_reason').where('user_id', '=', user.id).execute()
    expect(ended.map((row) => row.ended_reason)).toEqual(['reset', 'reset'])
    expect((await login(user.email, user.password)).statusCode).toBe(401)
    const fresh = await login(user.email, 'recovered-pass')
    expect(fresh.statusCode).toBe(200)
    // The same link again, and the older one.
    for (const used of [token, older]) {
      const again = await confirm({ token: used, password: 'second-try-1' })
      expect(again.statusCode).toBe(400)
      expect(again.json()).toEqual(BAD_LINK)
    }
    expect((await login(user.email, 'recovered-pass')).statusCode).toBe(200)
    expect((await links(user.id)).every((row) => row.used_at !== null)).toBe(true)
  })

  it('fields first: a missing token or a short password is 422, and the link stays usable', async () => {
    const user = await makeUser(shop.app)
    const token = await resetLink(user)
    const cases: [object, string][] = [
      [{ password: 'long-enough' }, 'token should not be empty'],
      [{ token: '', password: 'long-enough' }, 'token should not be empty'],
      [{ token: 7, password: 'long-enough' }, 'token must be a string'],
      [{}, 'token should not be empty'],
      [{ token }, 'password should not be empty'],
      [{ token, password: '12345' }, 'La contraseña debe tener al menos 6 caracteres'],
      [{ token: 'unknown', password: '12345' }, 'La contraseña debe tener al menos 6 caracteres'],
    ]
    for (const [payload, message] of cases) {
      const res = await confirm(payload)
      expect({ payload, status: res.statusCode, body: res.json() }).toEqual({ payload, status: 422, body: { error: message } })
    }
    expect((await links(user.id))[0]).toMatchObject({ used_at: null })
    expect((await confirm({ token, password: 'finally-ok' })).statusCode).toBe(200)
  })

  it('a bad or expired token → 400 Enlace inválido o caducado, and the password stays', async () => {
    const user = await makeUser(shop.app)
    const token = await resetLink(user)
    await shop.app.db
      .updateTable('password_resets')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('token_hash', '=', sha256(token))
      .execute()
    for (const bad of [token, 'no-such-token', token.slice(0, -1)]) {
      const res = await confirm({ token: bad, password: 'never-set-1' })
      expect(res.statusCode).toBe(400)
      expect(res.json()).toEqual(BAD_LINK)
    }
    expect((await login(user.email, user.password)).statusCode).toBe(200)
  })

  it('two confirms of one link at once: exactly one sets its password', async () => {
    const user = await makeUser(shop.app)
    const token = await resetLink(user)
    const answers = await Promise.all([confirm({ token, password: 'racer-one-1' }), confirm({ token, password: 'racer-two-2' })])
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 400])
    const winner = answers[0]!.statusCode === 200 ? 'racer-one-1' : 'racer-two-2'
    expect((await login(user.email, winner)).statusCode).toBe(200)
  })
})

describe('the reset rate limit', () => {
  const limited = useTestApp({ AUTH_RATE_LIMIT_MAX: '3' })

  it('login’s maximum, window, headers and 429, on a counter of its own shared by request and confirm', async () => {
    const ip = '198.51.100.9'
    const user = limited.customer
    const answers = [
      await requestReset(user.email, limited.app, ip),
      await confirm({ token: 'whatever', password: 'long-enough' }, limited.app, ip),
      await requestReset('nobody@shop.test', limited.app, ip),
    ]
    expect(answers.map((a) => a.statusCode)).toEqual([202, 400, 202])
    answers.forEach((answer, i) => {
      expect(answer.headers['ratelimit-limit']).toBe('3')
      expect(answer.headers['ratelimit-remaining']).toBe(String(2 - i))
      expect(Number(answer.headers['ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000)
    })
    for (const blocked of [await confirm({ token: 'whatever', password: 'long-enough' }, limited.app, ip), await requestReset(user.email, limited.app, ip)]) {
      expect(blocked.statusCode).toBe(429)
      expect(blocked.json()).toEqual({ error: 'Demasiados intentos. Intenta de nuevo en 15 minutos.' })
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0)
      expect(Object.keys(blocked.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([])
    }
    // The blocked request queued nothing: one link from the first request only.
    expect(await queuedEmails(limited.app.db, user.email)).toHaveLength(1)
    // Log-in keeps its own counter, and does not spend the reset one.
    const logins = await Promise.all(
      [1, 2, 3].map(() =>
        limited.app.inject({ method: 'POST', url: '/auth/login', remoteAddress: ip, payload: { email: user.email, password: user.password } }),
      ),
    )
    expect(logins.map((l) => l.statusCode)).toEqual([200, 200, 200])
    expect(logins[2]!.headers['ratelimit-remaining']).toBe('0')
  })
})

describe('secrets stay out of the log', () => {
  it('neither the reset token, the new password nor the refresh token is logged', async () => {
    const lines: string[] = []
    const { handle, drop } = await openTestDatabase()
    const app = await buildApp(testConfig(), { database: handle, logger: { level: 'trace', stream: { write: (line: string) => lines.push(line) } } })
    try {
      const user = await makeUser(app)
      await app.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: user.email } })
      const [token] = await linkTokens(user.email, app)
      await app.inject({ method: 'POST', url: '/auth/password-reset/confirm', payload: { token, password: 'logged-never-77' } })
      const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'logged-never-77' } })
      const refreshToken = login.json().refreshToken as string
      await app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken } })
      await app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken } })
      const log = lines.join('')
      expect(log).toContain('/auth/password-reset/confirm')
      for (const secret of [token!, 'logged-never-77', refreshToken, login.json().token]) expect(log).not.toContain(secret)
    } finally {
      await app.close()
      await drop()
    }
  })
})
