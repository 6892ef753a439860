import { createDecoder, createSigner } from 'fast-jwt'
import { describe, expect, it, vi } from 'vitest'
import { createTestApp, useTestApp } from '../helpers/app.js'
import { bearer, makeUser, uniqueEmail } from '../helpers/factories.js'

// A limit high enough that this file never meets it; the limit has its own tests.
const shop = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000' })
const SECRET = 'test-secret-that-is-long-enough-for-hs256-000'

const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  shop.app.inject({ method: 'POST', url, payload: payload as object, headers })

const countUsers = async () =>
  Number(
    (
      await shop.app.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )

describe('POST /auth/register', () => {
  it('creates a customer and answers 201 with the user, its id as a string', async () => {
    const email = uniqueEmail('reg')
    const res = await post('/auth/register', { name: 'Ana', email, password: 'secret1' })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(Object.keys(body).sort()).toEqual(['message', 'user'])
    expect(typeof body.message).toBe('string')
    expect(body.user).toEqual({ id: expect.stringMatching(/^\d+$/), name: 'Ana', email, role: 'customer', staffRole: null, createdAt: expect.any(String) })
    expect(body.user.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    const row = await shop.app.db.selectFrom('users').selectAll().where('id', '=', Number(body.user.id)).executeTakeFirstOrThrow()
    expect(row.role).toBe('customer')
    expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
    expect(res.body).not.toContain('secret1')
    expect(res.body).not.toContain('argon2')
  })

  it('ignores a role in the body: registration always makes a customer', async () => {
    const res = await post('/auth/register', { name: 'Eve', email: uniqueEmail('eve'), password: 'secret1', role: 'admin' })
    expect(res.statusCode).toBe(201)
    expect(res.json().user.role).toBe('customer')
    const row = await shop.app.db.selectFrom('users').select('role').where('id', '=', Number(res.json().user.id)).executeTakeFirstOrThrow()
    expect(row.role).toBe('customer')
  })

  it('trims and lower-cases the e-mail, and refuses the same e-mail in another case with 409', async () => {
    const email = uniqueEmail('case')
    const first = await post('/auth/register', { name: 'Bo', email: `  ${email.toUpperCase()}  `, password: 'secret1' })
    expect(first.statusCode).toBe(201)
    expect(first.json().user.email).toBe(email)
    const before = await countUsers()
    const again = await post('/auth/register', { name: 'Bo 2', email: email.replace('case', 'CASE'), password: 'secret2' })
    expect(again.statusCode).toBe(409)
    expect(again.json()).toEqual({ error: 'El email ya está en uso' })
    expect(await countUsers()).toBe(before)
  })

  it.each([
    [{ email: 'a@b.co', password: 'secret1' }, 'name should not be empty'],
    [{ name: '', email: 'a@b.co', password: 'secret1' }, 'name should not be empty'],
    [{ name: '   ', email: 'a@b.co', password: 'secret1' }, 'name should not be empty'],
    [{ name: 5, email: 'a@b.co', password: 'secret1' }, 'name must be a string'],
    [{ name: 'x'.repeat(101), email: 'a@b.co', password: 'secret1' }, 'name must be shorter than or equal to 100 characters'],
    [{ name: 'Ana', password: 'secret1' }, 'email should not be empty'],
    [{ name: 'Ana', email: 'not-an-email', password: 'secret1' }, 'email must be a valid email'],
    [{ name: 'Ana', email: 'a@b', password: 'secret1' }, 'email must be a valid email'],
    [{ name: 'Ana', email: ['a@b.co'], password: 'secret1' }, 'email must be a valid email'],
    [{ name: 'Ana', email: 5, password: 'secret1' }, 'email must be a valid email'],
    [{ name: 'Ana', email: `${'x'.repeat(250)}@b.co`, password: 'secret1' }, 'email must be shorter than or equal to 254 characters'],
    [{ name: 'Ana', email: 'a@b.co' }, 'password should not be empty'],
    [{ name: 'Ana', email: 'a@b.co', password: '12345' }, 'La contraseña debe tener al menos 6 caracteres'],
    [{ name: 'Ana', email: 'a@b.co', password: 123456 }, 'password must be a string'],
    [{ name: 'Ana', email: 'a@b.co', password: 'p'.repeat(129) }, 'password must be shorter than or equal to 128 characters'],
    [{}, 'name should not be empty'],
    [[], 'body must be an object'],
    ['just a string', 'body must be an object'],
  ])('refuses %j with 422 "%s" and writes nothing', async (payload, message) => {
    const before = await countUsers()
    const res = await shop.app.inject({
      method: 'POST',
      url: '/auth/register',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(payload),
    })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await countUsers()).toBe(before)
  })

  it('answers an empty body with 422, not a parse error', async () => {
    const res = await shop.app.inject({ method: 'POST', url: '/auth/register', headers: { 'content-type': 'application/json' }, payload: '' })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'body must be an object' })
  })

  it('stores SQL-looking and unicode text literally', async () => {
    const name = "Robert'); DROP TABLE users;-- 🛒 Ñandú"
    const res = await post('/auth/register', { name, email: uniqueEmail('sql'), password: "' OR 1=1 --" })
    expect(res.statusCode).toBe(201)
    expect(res.json().user.name).toBe(name)
    const login = await post('/auth/login', { email: res.json().user.email, password: "' OR 1=1 --" })
    expect(login.statusCode).toBe(200)
  })
})

describe('POST /auth/login', () => {
  it('answers 200 with a token, a refresh token and the user, its id as a string', async () => {
    const user = await makeUser(shop.app, 'customer', 'Luz')
    const res = await post('/auth/login', { email: user.email.toUpperCase(), password: user.password })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body).toEqual({
      token: expect.any(String),
      refreshToken: expect.stringMatching(/^[\w-]{43}$/),
      user: { id: String(user.id), name: 'Luz', email: user.email, role: 'customer', staffRole: null },
    })
    const payload = createDecoder()(body.token) as { sub: string; role: string; iat: number; exp: number }
    expect(payload).toMatchObject({ sub: String(user.id), role: 'customer' })
    // JWT_EXPIRES_IN defaults to one day.
    expect(payload!.exp - payload!.iat).toBe(86400)
    const header = JSON.parse(Buffer.from(body.token.split('.')[0], 'base64url').toString())
    expect(header.alg).toBe('HS256')
    const me = await shop.app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${body.token}` } })
    expect(me.statusCode).toBe(200)
    expect(me.json().id).toBe(user.id)
  })

  it('JWT_EXPIRES_IN sets the lifetime; a bare number is seconds', async () => {
    const settings = [
      ['3600', 3600],
      ['30m', 1800],
      ['12h', 43_200],
    ] as const
    // One app per setting, side by side: building an app is most of this test's time.
    const lifetimes = await Promise.all(
      settings.map(async ([setting]) => {
        const other = await createTestApp({ JWT_EXPIRES_IN: setting })
        try {
          const user = await makeUser(other.app)
          const login = await other.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
          const payload = createDecoder()(login.json().token) as { iat: number; exp: number }
          return [setting, payload.exp - payload.iat]
        } finally {
          await other.close()
        }
      }),
    )
    expect(lifetimes).toEqual(settings)
  })

  it('answers a wrong password and an unknown e-mail alike: 401 "Credenciales inválidas"', async () => {
    const user = await makeUser(shop.app)
    for (const payload of [
      { email: user.email, password: 'wrong-password' },
      { email: uniqueEmail('ghost'), password: 'whatever' },
    ]) {
      const res = await post('/auth/login', payload)
      expect(res.statusCode).toBe(401)
      expect(res.json()).toEqual({ error: 'Credenciales inválidas' })
    }
  })

  it.each([
    [{ email: 'nope', password: 'x' }, 'email must be a valid email'],
    [{ email: 'a@b.co', password: '' }, 'password should not be empty'],
    [{ email: 'a@b.co' }, 'password should not be empty'],
    [{ password: 'secret1' }, 'email should not be empty'],
    [{ email: 'a@b.co', password: 7 }, 'password must be a string'],
  ])('validates the input first: %j -> 422 "%s"', async (payload, message) => {
    const res = await post('/auth/login', payload)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
  })
})

describe('tokens', () => {
  const sign = (payload: Record<string, unknown>) => createSigner({ key: SECRET, algorithm: 'HS256' })(payload)

  it('a protected route without a bearer token answers 401 "Unauthorized - No user found"', async () => {
    for (const headers of [{}, { authorization: 'Basic YWxhZGRpbjpvcGVuc2VzYW1l' }, { authorization: 'Bearer' }]) {
      const res = await shop.app.inject({ url: '/auth/me', headers })
      expect(res.statusCode).toBe(401)
      expect(res.json()).toEqual({ error: 'Unauthorized - No user found' })
    }
  })

  it('a malformed, badly signed, alg:none or expired token answers 401 "Token inválido o expirado"', async () => {
    const user = await makeUser(shop.app)
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(
      JSON.stringify({ sub: String(user.id), role: 'admin', iat_ms: Date.now() }),
    ).toString('base64url')}.`
    const expired = sign({
      sub: String(user.id),
      role: 'customer',
      iat_ms: Date.now() - 10_000,
      iat: Math.floor(Date.now() / 1000) - 10,
      exp: Math.floor(Date.now() / 1000) - 5,
    })
    const otherSecret = createSigner({ key: 'another-secret-that-is-long-enough-000000', algorithm: 'HS256' })({
      sub: String(user.id),
      role: 'admin',
      iat_ms: Date.now(),
    })
    const hs512 = createSigner({ key: SECRET, algorithm: 'HS512' })({ sub: String(user.id), role: 'admin', iat_ms: Date.now() })
    for (const token of ['garbage', 'a.b.c', none, expired, otherSecret, hs512, `${user.token}x`, `${user.token} extra`, 'a b']) {
      const res = await shop.app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${token}` } })
      expect(res.statusCode, token).toBe(401)
      expect(res.json()).toEqual({ error: 'Token inválido o expirado' })
    }
  })

  it('a valid token without a role answers 403 "Forbidden - No role assigned" on a role-protected route', async () => {
    const user = await makeUser(shop.app)
    const token = sign({ sub: String(user.id), iat_ms: Date.now() })
    const res = await shop.app.inject({ url: '/auth/users', headers: { authorization: `Bearer ${token}` } })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: 'Forbidden - No role assigned' })
  })

  it('a valid token without a role, or with a role the service does not know, answers 403 on the routes for any user', async () => {
    const user = await makeUser(shop.app)
    const roleless = sign({ sub: String(user.id), iat_ms: Date.now() })
    const unknownRole = sign({ sub: String(user.id), role: 'superuser', iat_ms: Date.now() })
    for (const [method, url] of [
      ['GET', '/auth/me'],
      ['GET', '/cart'],
      ['POST', '/cart/add'],
      ['GET', '/orders'],
      ['POST', '/orders'],
      ['GET', '/orders/1'],
    ] as const) {
      const noRole = await shop.app.inject({ method, url, headers: { authorization: `Bearer ${roleless}` } })
      expect(noRole.statusCode, `${method} ${url}`).toBe(403)
      expect(noRole.json()).toEqual({ error: 'Forbidden - No role assigned' })
      const unknown = await shop.app.inject({ method, url, headers: { authorization: `Bearer ${unknownRole}` } })
      expect(unknown.statusCode, `${method} ${url}`).toBe(403)
      expect(unknown.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: customer, admin' })
    }
    // Nothing was written for that user.
    const cart = await shop.app.inject({ url: '/cart', headers: bearer(user) })
    expect(cart.json()).toMatchObject({ items: [], total: 0 })
    const orders = await shop.app.inject({ url: '/orders', headers: bearer(user) })
    expect(orders.json()).toEqual([])
  })

  it('the role comes from the token: a customer on an admin route answers 403 with the allowed roles', async () => {
    const customer = await makeUser(shop.app)
    const res = await shop.app.inject({ url: '/auth/users', headers: bearer(customer) })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
  })

  it('authentication runs before validation: no token on an admin route with a bad body is 401', async () => {
    const res = await post('/auth/users', { name: '' })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: 'Unauthorized - No user found' })
  })
})

describe('GET /auth/me', () => {
  it('answers the caller, never the password', async () => {
    const user = await makeUser(shop.app, 'customer', 'Mia')
    const res = await shop.app.inject({ url: '/auth/me', headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      id: user.id,
      name: 'Mia',
      email: user.email,
      role: 'customer',
      staffRole: null,
      createdAt: expect.any(String),
      permissions: [],
    })
  })
})

describe('admin user management', () => {
  it.each(['/auth/users', '/auth/create-user'])('POST %s creates a user with a role: 201, numeric id, no password', async (url) => {
    const email = uniqueEmail('made')
    const res = await post(url, { name: 'Staff', email, password: 'secret1', role: 'admin' }, bearer(shop.admin))
    expect(res.statusCode).toBe(201)
    expect(res.json()).toEqual({ id: expect.any(Number), name: 'Staff', email, role: 'admin', staffRole: 'owner', createdAt: expect.any(String) })
    const login = await post('/auth/login', { email, password: 'secret1' })
    expect(login.json().user.role).toBe('admin')
  })

  it.each([
    [{ name: 'X', email: 'x@shop.test', password: 'secret1', role: 'root' }, 422, "El rol debe ser 'customer' o 'admin'"],
    [{ name: 'X', email: 'x@shop.test', password: 'secret1', role: 1 }, 422, "El rol debe ser 'customer' o 'admin'"],
    [{ name: 'X', email: 'x@shop.test', password: 'secret1', role: ['admin'] }, 422, "El rol debe ser 'customer' o 'admin'"],
    [{ name: 'X', email: 7, password: 'secret1', role: 'admin' }, 422, 'email must be a valid email'],
    [{ name: 'X', email: 'x@shop.test', password: 'secret1' }, 422, 'role should not be empty'],
    [{ name: 'X', email: 'x@shop.test', password: 'short', role: 'admin' }, 422, 'La contraseña debe tener al menos 6 caracteres'],
    [{ name: 'X', email: 'bad', password: 'secret1', role: 'admin' }, 422, 'email must be a valid email'],
    [{ name: '', email: 'x@shop.test', password: 'secret1', role: 'admin' }, 422, 'name should not be empty'],
  ])('refuses %j with %i "%s"', async (payload, status, message) => {
    const before = await countUsers()
    for (const url of ['/auth/users', '/auth/create-user']) {
      const res = await post(url, payload, bearer(shop.admin))
      expect(res.statusCode).toBe(status)
      expect(res.json()).toEqual({ error: message })
    }
    expect(await countUsers()).toBe(before)
  })

  it('refuses a taken e-mail with 409 "El email ya está en uso" on both paths', async () => {
    const existing = await makeUser(shop.app)
    for (const url of ['/auth/users', '/auth/create-user']) {
      const res = await post(url, { name: 'Dup', email: existing.email.toUpperCase(), password: 'secret1', role: 'customer' }, bearer(shop.admin))
      expect(res.statusCode).toBe(409)
      expect(res.json()).toEqual({ error: 'El email ya está en uso' })
    }
  })

  it('customers cannot create users (403) and anonymous callers get 401', async () => {
    const customer = await makeUser(shop.app)
    const payload = { name: 'X', email: uniqueEmail(), password: 'secret1', role: 'admin' }
    expect((await post('/auth/users', payload, bearer(customer))).statusCode).toBe(403)
    expect((await post('/auth/create-user', payload, bearer(customer))).json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    expect((await post('/auth/create-user', payload)).statusCode).toBe(401)
  })

  it('GET /auth/users pages through users in id order; bad paging is 422', async () => {
    await makeUser(shop.app)
    await makeUser(shop.app)
    const all = await shop.app.inject({ url: '/auth/users?limit=1000', headers: bearer(shop.admin) })
    expect(all.statusCode).toBe(200)
    const ids = all.json().map((u: { id: number }) => u.id)
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect(all.body).not.toContain('password')
    const page = await shop.app.inject({ url: '/auth/users?limit=2&offset=1', headers: bearer(shop.admin) })
    expect(page.json().map((u: { id: number }) => u.id)).toEqual(ids.slice(1, 3))
    const bad = await shop.app.inject({ url: '/auth/users?limit=abc', headers: bearer(shop.admin) })
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'limit must be an integer number' })
    const tooMany = await shop.app.inject({ url: '/auth/users?limit=5000', headers: bearer(shop.admin) })
    expect(tooMany.json()).toEqual({ error: 'limit must not be greater than 1000' })
  })

  it('GET /auth/users/:id answers the user, 404 "Usuario no encontrado", 422 for a non-numeric id', async () => {
    const user = await makeUser(shop.app, 'customer', 'Seen')
    const res = await shop.app.inject({ url: `/auth/users/${user.id}`, headers: bearer(shop.admin) })
    expect(res.json()).toEqual({ id: user.id, name: 'Seen', email: user.email, role: 'customer', staffRole: null, createdAt: expect.any(String) })
    const missing = await shop.app.inject({ url: '/auth/users/999999', headers: bearer(shop.admin) })
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toEqual({ error: 'Usuario no encontrado' })
    const bad = await shop.app.inject({ url: '/auth/users/abc', headers: bearer(shop.admin) })
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'id must be an integer number' })
  })

  it('PATCH /auth/users/:id changes name, e-mail and role; a role change ends the old tokens', async () => {
    const user = await makeUser(shop.app)
    const email = uniqueEmail('moved')
    const res = await shop.app.inject({
      method: 'PATCH',
      url: `/auth/users/${user.id}`,
      headers: bearer(shop.admin),
      payload: { name: 'New Name', email: email.toUpperCase() },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ id: user.id, name: 'New Name', email, role: 'customer', staffRole: null, createdAt: expect.any(String) })
    // A name or e-mail change keeps the token valid.
    expect((await shop.app.inject({ url: '/auth/me', headers: bearer(user) })).statusCode).toBe(200)

    const promoted = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(shop.admin), payload: { role: 'admin' } })
    expect(promoted.json().role).toBe('admin')
    const old = await shop.app.inject({ url: '/auth/me', headers: bearer(user) })
    expect(old.statusCode).toBe(401)
    expect(old.json()).toEqual({ error: 'Token inválido o expirado' })
    const login = await post('/auth/login', { email, password: user.password })
    expect(login.json().user.role).toBe('admin')
    expect((await shop.app.inject({ url: '/auth/users', headers: { authorization: `Bearer ${login.json().token}` } })).statusCode).toBe(200)
  })

  it('PATCH with a new password ends the old tokens and the old password', async () => {
    const user = await makeUser(shop.app)
    // The token has been checked (and its state cached) before the change.
    expect((await shop.app.inject({ url: '/auth/me', headers: bearer(user) })).statusCode).toBe(200)
    const res = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(shop.admin), payload: { password: 'brand-new-pass' } })
    expect(res.statusCode).toBe(200)
    expect((await shop.app.inject({ url: '/auth/me', headers: bearer(user) })).statusCode).toBe(401)
    expect((await post('/auth/login', { email: user.email, password: user.password })).statusCode).toBe(401)
    expect((await post('/auth/login', { email: user.email, password: 'brand-new-pass' })).statusCode).toBe(200)
  })

  it('a password or role change ends a token issued in the same millisecond', async () => {
    // A stopped clock: the token, the change and the check all happen at one instant.
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      for (const payload of [{ password: 'brand-new-pass' }, { role: 'admin' }]) {
        const user = await makeUser(shop.app)
        expect((await shop.app.inject({ url: '/auth/me', headers: bearer(user) })).statusCode).toBe(200)
        const res = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(shop.admin), payload })
        expect(res.statusCode).toBe(200)
        const after = await shop.app.inject({ url: '/auth/me', headers: bearer(user) })
        expect(after.statusCode).toBe(401)
        expect(after.json()).toEqual({ error: 'Token inválido o expirado' })
      }
    } finally {
      vi.useRealTimers()
    }
  })

  it('PATCH refuses: own role (403), a taken e-mail (409), unknown user (404), bad fields (422), empty body (422)', async () => {
    const own = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${shop.admin.id}`, headers: bearer(shop.admin), payload: { role: 'customer' } })
    expect(own.statusCode).toBe(403)
    expect(own.json()).toEqual({ error: 'No puedes cambiar tu propio rol' })
    const other = await makeUser(shop.app)
    const user = await makeUser(shop.app)
    const taken = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(shop.admin), payload: { email: other.email } })
    expect(taken.statusCode).toBe(409)
    expect(taken.json()).toEqual({ error: 'El email ya está en uso' })
    const missing = await shop.app.inject({ method: 'PATCH', url: '/auth/users/999999', headers: bearer(shop.admin), payload: { name: 'X' } })
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toEqual({ error: 'Usuario no encontrado' })
    const badRole = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(shop.admin), payload: { role: 'owner' } })
    expect(badRole.statusCode).toBe(422)
    expect(badRole.json()).toEqual({ error: "El rol debe ser 'customer' o 'admin'" })
    const empty = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(shop.admin), payload: {} })
    expect(empty.statusCode).toBe(422)
    expect(empty.json()).toEqual({ error: 'body must contain at least one field' })
    const before = await shop.app.db.selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow()
    const unknownOnly = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(shop.admin), payload: { foo: 1 } })
    expect(unknownOnly.statusCode).toBe(422)
    expect(unknownOnly.json()).toEqual({ error: 'body must contain at least one field' })
    const row = await shop.app.db.selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow()
    expect(row).toEqual(before)
    expect(row.email).toBe(user.email)
    expect(row.role).toBe('customer')
  })

  it('DELETE /auth/users/:id removes the user and ends their tokens; not yourself (409); unknown is 404', async () => {
    const user = await makeUser(shop.app)
    // The token has been checked (and its state cached) before the change.
    expect((await shop.app.inject({ url: '/auth/me', headers: bearer(user) })).statusCode).toBe(200)
    const res = await shop.app.inject({ method: 'DELETE', url: `/auth/users/${user.id}`, headers: bearer(shop.admin) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: expect.any(String) })
    expect(await shop.app.db.selectFrom('users').select('id').where('id', '=', user.id).executeTakeFirst()).toBeUndefined()
    const gone = await shop.app.inject({ url: '/auth/me', headers: bearer(user) })
    expect(gone.statusCode).toBe(401)
    expect(gone.json()).toEqual({ error: 'Token inválido o expirado' })
    const again = await shop.app.inject({ method: 'DELETE', url: `/auth/users/${user.id}`, headers: bearer(shop.admin) })
    expect(again.statusCode).toBe(404)
    expect(again.json()).toEqual({ error: 'Usuario no encontrado' })
    const self = await shop.app.inject({ method: 'DELETE', url: `/auth/users/${shop.admin.id}`, headers: bearer(shop.admin) })
    expect(self.statusCode).toBe(409)
    expect(self.json()).toEqual({ error: 'No puedes eliminar tu propia cuenta' })
    expect(await shop.app.db.selectFrom('users').select('id').where('id', '=', shop.admin.id).executeTakeFirst()).toBeDefined()
  })

  it.each([['owner'], [''], [1], [['admin']], [{ role: 'admin' }]])(
    "PATCH with role %j is 422 \"El rol debe ser 'customer' o 'admin'\" and changes nothing",
    async (role) => {
      const user = await makeUser(shop.app)
      const before = await shop.app.db.selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow()
      for (const payload of [{ role }, { name: 'Renamed', role }]) {
        const res = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(shop.admin), payload })
        expect(res.statusCode).toBe(422)
        expect(res.json()).toEqual({ error: "El rol debe ser 'customer' o 'admin'" })
      }
      expect(await shop.app.db.selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow()).toEqual(before)
      // The user's token still works: nothing about them changed.
      expect((await shop.app.inject({ url: '/auth/me', headers: bearer(user) })).statusCode).toBe(200)
    },
  )

  it('an admin\'s refused own-role change (403 "No puedes cambiar tu propio rol") leaves their row as it was', async () => {
    const self = await makeUser(shop.app, 'admin', 'Self Admin')
    const before = await shop.app.db.selectFrom('users').selectAll().where('id', '=', self.id).executeTakeFirstOrThrow()
    expect(before.role).toBe('admin')
    for (const payload of [{ role: 'customer' }, { name: 'Demoted', email: uniqueEmail('demoted'), role: 'customer' }]) {
      const res = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${self.id}`, headers: bearer(self), payload })
      expect(res.statusCode).toBe(403)
      expect(res.json()).toEqual({ error: 'No puedes cambiar tu propio rol' })
    }
    const row = await shop.app.db.selectFrom('users').selectAll().where('id', '=', self.id).executeTakeFirstOrThrow()
    expect(row).toEqual(before)
    expect(row.role).toBe('admin')
    // The admin's token is still an admin's token.
    const list = await shop.app.inject({ url: '/auth/users', headers: bearer(self) })
    expect(list.statusCode).toBe(200)
  })

  it('every user-management route answers 401 "Unauthorized - No user found" without a token, and nothing changes', async () => {
    const target = await makeUser(shop.app, 'customer', 'Target')
    const users = () => shop.app.db.selectFrom('users').selectAll().orderBy('id').execute()
    const before = await users()
    const email = uniqueEmail('anon-made')
    const created = { name: 'Anon Made', email, password: 'secret1', role: 'admin' }
    const requests = [
      ['GET', '/auth/users', undefined],
      ['GET', `/auth/users/${target.id}`, undefined],
      ['PATCH', `/auth/users/${target.id}`, { name: 'Hijacked', email: uniqueEmail('hijack'), role: 'admin', password: 'hijacked1' }],
      ['DELETE', `/auth/users/${target.id}`, undefined],
      ['POST', '/auth/users', created],
      ['POST', '/auth/create-user', created],
    ] as const
    for (const headers of [{}, { authorization: 'Basic YWxhZGRpbjpvcGVuc2VzYW1l' }]) {
      for (const [method, url, payload] of requests) {
        const res = await shop.app.inject({ method, url, headers, ...(payload ? { payload } : {}) })
        expect(res.statusCode, `${method} ${url}`).toBe(401)
        expect(res.json(), `${method} ${url}`).toEqual({ error: 'Unauthorized - No user found' })
      }
    }
    expect(await users()).toEqual(before)
    expect(await shop.app.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined()
    // The target's token and password still work.
    expect((await shop.app.inject({ url: '/auth/me', headers: bearer(target) })).json()).toMatchObject({ id: target.id, name: 'Target', role: 'customer' })
    expect((await post('/auth/login', { email: target.email, password: target.password })).statusCode).toBe(200)
  })

  it('customers cannot read, change or delete users', async () => {
    const customer = await makeUser(shop.app)
    for (const [method, url] of [
      ['GET', '/auth/users'],
      ['GET', `/auth/users/${customer.id}`],
      ['PATCH', `/auth/users/${customer.id}`],
      ['DELETE', `/auth/users/${shop.admin.id}`],
    ] as const) {
      const res = await shop.app.inject({ method, url, headers: bearer(customer), ...(method === 'PATCH' ? { payload: { role: 'admin' } } : {}) })
      expect(res.statusCode).toBe(403)
      expect(res.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    }
    const row = await shop.app.db.selectFrom('users').select('role').where('id', '=', customer.id).executeTakeFirstOrThrow()
    expect(row.role).toBe('customer')
  })
})
