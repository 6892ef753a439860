import { createHash } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'

// API keys (docs/staff.md, "API keys"): made, listed, rotated and revoked by owners; a key acts as an admin of its
// staff role, never on the caller's own data, and stops at once when rotated or revoked.

const shop = useTestApp()

const SECRET = /^sk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

interface Key {
  id: number
  name: string
  staffRole: string
  prefix: string
  createdBy: number | null
  createdAt: string
  expiresAt: string | null
  lastUsedAt: string | null
  revokedAt: string | null
  secret?: string
}

afterEach(() => {
  vi.useRealTimers()
})

const key = (secret: string) => ({ authorization: `Bearer ${secret}` })
const row = (id: number) => shop.app.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()
const keyCount = async () =>
  Number(
    (
      await shop.app.db
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )

async function createKey(payload: Record<string, unknown> = {}, by: TestUser = shop.admin): Promise<Key & { secret: string }> {
  const response = await shop.app.inject({ method: 'POST', url: '/api-keys', headers: bearer(by), payload: { name: 'ERP', staffRole: 'manager', ...payload } })
  expect(response.statusCode).toBe(201)
  return response.json()
}

/** An admin of another staff role than owner (the factory makes owners). */
async function makeStaff(staffRole: 'manager' | 'catalog'): Promise<TestUser> {
  const user = await makeUser(shop.app, 'admin')
  await shop.app.db.updateTable('users').set({ staff_role: staffRole }).where('id', '=', user.id).execute()
  return user
}

describe('POST /api-keys', () => {
  it('makes a key and shows its secret once: sk_<lookup id>_<43 base64url>, stored as its SHA-256 only', async () => {
    const before = Date.now()
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString()
    const created = await createKey({ name: '  ERP sync  ', staffRole: 'catalog', expiresAt })
    expect(created).toEqual({
      id: expect.any(Number),
      name: 'ERP sync',
      staffRole: 'catalog',
      prefix: created.secret.slice(0, 15),
      createdBy: shop.admin.id,
      createdAt: expect.stringMatching(ISO),
      expiresAt,
      lastUsedAt: null,
      revokedAt: null,
      secret: expect.stringMatching(SECRET),
    })
    expect(created.prefix).toMatch(/^sk_[0-9a-f]{12}$/)
    expect(Date.parse(created.createdAt)).toBeGreaterThanOrEqual(before - 1)
    const stored = await row(created.id)
    expect(stored).toMatchObject({
      lookup_id: created.prefix.slice(3),
      secret_hash: createHash('sha256').update(created.secret).digest('hex'),
      staff_role: 'catalog',
      created_by: shop.admin.id,
    })
    expect(JSON.stringify(stored)).not.toContain(created.secret.slice(16))
  })

  it('takes an expiry with an offset, answered in UTC; none or null: never', async () => {
    const later = new Date(Date.now() + 3_600_000)
    const withOffset = later.toISOString().replace('Z', '+00:00')
    expect((await createKey({ expiresAt: withOffset })).expiresAt).toBe(later.toISOString())
    expect((await createKey({ expiresAt: null })).expiresAt).toBeNull()
    expect((await createKey()).expiresAt).toBeNull()
  })

  it.each([
    [{ staffRole: 'manager' }, 'name should not be empty'],
    [{ name: '   ', staffRole: 'manager' }, 'name should not be empty'],
    [{ name: 'x'.repeat(101), staffRole: 'manager' }, 'name must be shorter than or equal to 100 characters'],
    [{ name: 'ERP' }, 'staffRole should not be empty'],
    [{ name: 'ERP', staffRole: 'owner' }, 'staffRole must be one of the following values: manager, catalog, fulfillment, support'],
    [{ name: 'ERP', staffRole: 'boss' }, 'staffRole must be one of the following values: manager, catalog, fulfillment, support'],
    [{ name: 'ERP', staffRole: 3 }, 'staffRole must be one of the following values: manager, catalog, fulfillment, support'],
    [{ name: 'ERP', staffRole: 'manager', expiresAt: 'next week' }, 'expiresAt must be a valid ISO 8601 date string'],
    [{ name: 'ERP', staffRole: 'manager', expiresAt: '2020-01-01T00:00:00Z' }, 'expiresAt must be in the future'],
  ])('refuses %j with 422 and makes nothing', async (payload, message) => {
    const before = await keyCount()
    const response = await shop.app.inject({ method: 'POST', url: '/api-keys', headers: bearer(shop.admin), payload })
    expect(response.statusCode).toBe(422)
    expect(response.json()).toEqual({ error: message })
    expect(await keyCount()).toBe(before)
  })

  it('an expiry of now is not in the future', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const now = new Date()
    const response = await shop.app.inject({
      method: 'POST',
      url: '/api-keys',
      headers: bearer(shop.admin),
      payload: { name: 'ERP', staffRole: 'manager', expiresAt: now.toISOString() },
    })
    expect(response.json()).toEqual({ error: 'expiresAt must be in the future' })
  })
})

describe('who may manage keys: staff:manage (owners)', () => {
  it('401 without a token, 403 for a customer, a manager and a key, before validation; nothing changes', async () => {
    const target = await createKey()
    const manager = await makeStaff('manager')
    const managerKey = await createKey({ staffRole: 'manager' })
    const calls = [
      { method: 'GET', url: '/api-keys' },
      { method: 'POST', url: '/api-keys', payload: { name: '' } },
      { method: 'POST', url: `/api-keys/${target.id}/rotate` },
      { method: 'DELETE', url: `/api-keys/${target.id}` },
    ] as const
    const before = await keyCount()
    for (const call of calls) {
      const anonymous = await shop.app.inject(call)
      expect(anonymous.statusCode).toBe(401)
      expect(anonymous.json()).toEqual({ error: 'Unauthorized - No user found' })
      const customer = await shop.app.inject({ ...call, headers: bearer(shop.customer) })
      expect(customer.statusCode).toBe(403)
      expect(customer.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
      for (const headers of [bearer(manager), key(managerKey.secret)]) {
        const refused = await shop.app.inject({ ...call, headers })
        expect(refused.statusCode).toBe(403)
        expect(refused.json()).toEqual({ error: 'Forbidden - Requires permission: staff:manage' })
      }
    }
    expect(await keyCount()).toBe(before)
    expect(await row(target.id)).toMatchObject({ secret_hash: createHash('sha256').update(target.secret).digest('hex'), revoked_at: null })
  })
})

describe('GET /api-keys', () => {
  it('lists the keys newest first, paged, never a secret or a hash', async () => {
    const first = await createKey({ name: 'first' })
    const second = await createKey({ name: 'second', staffRole: 'support' })
    const response = await shop.app.inject({ url: '/api-keys?limit=1', headers: bearer(shop.admin) })
    expect(response.statusCode).toBe(200)
    const total = await keyCount()
    expect(response.headers['x-total-count']).toBe(String(total))
    expect(response.headers.link).toBe('<http://shop.test/api-keys?limit=1&offset=1>; rel="next"')
    const { secret, ...listed } = second
    expect(response.json()).toEqual([listed])
    expect(Object.keys(response.json()[0]).sort()).toEqual(
      ['id', 'name', 'staffRole', 'prefix', 'createdBy', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt'].sort(),
    )

    const all = await shop.app.inject({ url: '/api-keys?limit=1000', headers: bearer(shop.admin) })
    const keys = all.json() as Key[]
    expect(keys.map((k) => k.id)).toEqual([...keys.map((k) => k.id)].sort((a, b) => b - a))
    expect(keys.find((k) => k.id === first.id)).toMatchObject({ name: 'first', prefix: first.prefix })
    expect(all.body).not.toContain(secret.slice(16))
    expect(all.body).not.toContain('secret')
    expect(all.headers.link).toBeUndefined()

    const last = await shop.app.inject({ url: `/api-keys?limit=1&offset=${total - 1}`, headers: bearer(shop.admin) })
    expect(last.headers.link).toBe(`<http://shop.test/api-keys?limit=1&offset=${total - 2}>; rel="prev"`)
  })

  it('refuses other parameters like the other lists', async () => {
    const response = await shop.app.inject({ url: '/api-keys?limit=0', headers: bearer(shop.admin) })
    expect(response.statusCode).toBe(422)
    expect(response.json()).toEqual({ error: 'limit must not be less than 1' })
  })
})

describe('a key at work', () => {
  it('acts as an admin of its role: a catalog key writes and reads drafts, and is refused where its role lacks the permission', async () => {
    const catalog = await createKey({ name: 'PIM', staffRole: 'catalog' })
    const created = await shop.app.inject({ method: 'POST', url: '/products', headers: key(catalog.secret), payload: { name: 'Borrador PIM', price: '9.90' } })
    expect(created.statusCode).toBe(201)
    expect(created.json()).toMatchObject({ name: 'Borrador PIM', status: 'draft' })
    const drafts = await shop.app.inject({ url: '/products?status=draft', headers: key(catalog.secret) })
    expect(drafts.statusCode).toBe(200)
    expect((drafts.json() as Array<{ name: string }>).map((p) => p.name)).toContain('Borrador PIM')
    const exported = await shop.app.inject({ url: '/exports/products.csv', headers: key(catalog.secret) })
    expect(exported.statusCode).toBe(200)

    for (const [url, permission] of [
      ['/exports/orders.csv', 'orders:read'],
      ['/exports/customers.csv', 'customers:read'],
    ]) {
      const refused = await shop.app.inject({ url, headers: key(catalog.secret) })
      expect(refused.statusCode).toBe(403)
      expect(refused.json()).toEqual({ error: `Forbidden - Requires permission: ${permission}` })
    }
    // A support key reads the orders' export, which catalog lacks.
    const support = await createKey({ name: 'Helpdesk', staffRole: 'support' })
    expect((await shop.app.inject({ url: '/exports/orders.csv', headers: key(support.secret) })).statusCode).toBe(200)
  })

  it('is refused on every route of the caller’s own data, with nothing changed', async () => {
    const manager = await createKey({ name: 'Ops', staffRole: 'manager' })
    const calls = [
      { method: 'GET', url: '/cart' },
      { method: 'PATCH', url: '/cart', payload: { email: 'a@shop.test' } },
      { method: 'POST', url: '/cart/add', payload: { productId: 1, quantity: 1 } },
      { method: 'PUT', url: '/cart/item/1', payload: { quantity: 2 } },
      { method: 'DELETE', url: '/cart/item/1' },
      { method: 'DELETE', url: '/cart/clear' },
      { method: 'POST', url: '/cart/discount', payload: { code: 'WELCOME' } },
      { method: 'DELETE', url: '/cart/discount' },
      { method: 'POST', url: '/orders' },
      { method: 'POST', url: '/orders/1/cancel' },
      { method: 'POST', url: '/orders/1/payment' },
      { method: 'GET', url: '/addresses' },
      { method: 'POST', url: '/addresses', payload: {} },
      { method: 'PATCH', url: '/addresses/1', payload: { city: 'Madrid' } },
      { method: 'DELETE', url: '/addresses/1' },
      { method: 'GET', url: '/auth/me' },
      { method: 'PATCH', url: '/auth/me', payload: { name: 'Robot' } },
      { method: 'POST', url: '/auth/logout' },
      { method: 'POST', url: '/auth/logout-all' },
    ] as const
    const carts = await shop.app.db
      .selectFrom('carts')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow()
    for (const call of calls) {
      const response = await shop.app.inject({ ...call, headers: key(manager.secret) })
      expect({ call: `${call.method} ${call.url}`, status: response.statusCode, body: response.json() }).toEqual({
        call: `${call.method} ${call.url}`,
        status: 403,
        body: { error: 'Forbidden - API keys cannot be used on this route' },
      })
    }
    expect(
      await shop.app.db
        .selectFrom('carts')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow(),
    ).toEqual(carts)
    expect(await shop.app.db.selectFrom('addresses').selectAll().execute()).toEqual([])
  })

  it.each([
    ['a malformed secret', () => 'sk_short'],
    ['an unknown key', () => `sk_0123456789ab_${'A'.repeat(43)}`],
  ])('401 for %s', async (_name, secret) => {
    const response = await shop.app.inject({ url: '/products?status=draft', headers: key(secret()) })
    expect(response.statusCode).toBe(401)
    expect(response.json()).toEqual({ error: 'Token inválido o expirado' })
  })

  it('401 for a known lookup id with another secret (the hash does not match)', async () => {
    const real = await createKey()
    const forged = `${real.prefix}_${'B'.repeat(43)}`
    expect(forged).not.toBe(real.secret)
    const response = await shop.app.inject({ url: '/products?status=draft', headers: key(forged) })
    expect(response.statusCode).toBe(401)
    expect(response.json()).toEqual({ error: 'Token inválido o expirado' })
    expect((await row(real.id))?.last_used_at).toBeNull()
  })

  it('401 once expired, also after a use that was cached', async () => {
    const expiring = await createKey({ expiresAt: new Date(Date.now() + 60_000).toISOString() })
    expect((await shop.app.inject({ url: '/products?status=draft', headers: key(expiring.secret) })).statusCode).toBe(200)
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.parse(expiring.expiresAt!))
    const response = await shop.app.inject({ url: '/products?status=draft', headers: key(expiring.secret) })
    expect(response.statusCode).toBe(401)
    expect(response.json()).toEqual({ error: 'Token inválido o expirado' })
  })

  it('lastUsedAt: set on the first use, not written again within the minute, written after it', async () => {
    const used = await createKey()
    vi.useFakeTimers({ toFake: ['Date'] })
    const start = Date.now()
    const at = (ms: number) => new Date(start + ms).toISOString()
    const use = async () => expect((await shop.app.inject({ url: '/products?status=draft', headers: key(used.secret) })).statusCode).toBe(200)
    const lastUsed = async () => (await row(used.id))?.last_used_at

    vi.setSystemTime(start + 1_000)
    await use()
    expect(await lastUsed()).toBe(at(1_000))
    vi.setSystemTime(start + 30_000)
    await use()
    vi.setSystemTime(start + 60_999)
    await use()
    expect(await lastUsed()).toBe(at(1_000))
    vi.setSystemTime(start + 61_000)
    await use()
    expect(await lastUsed()).toBe(at(61_000))
    const listed = await shop.app.inject({ url: '/api-keys?limit=1000', headers: bearer(shop.admin) })
    expect((listed.json() as Key[]).find((k) => k.id === used.id)?.lastUsedAt).toBe(at(61_000))
  })

  it('lastUsedAt: a write by another instance within the minute is not written over', async () => {
    const used = await createKey()
    const recent = new Date(Date.now() - 5_000).toISOString()
    await shop.app.db.updateTable('api_keys').set({ last_used_at: recent }).where('id', '=', used.id).execute()
    expect((await shop.app.inject({ url: '/products?status=draft', headers: key(used.secret) })).statusCode).toBe(200)
    expect((await row(used.id))?.last_used_at).toBe(recent)
  })
})

describe('POST /api-keys/:id/rotate', () => {
  it('answers the key with a new secret; the old one stops at once, the new one works', async () => {
    const original = await createKey({ name: 'Rotated', staffRole: 'fulfillment' })
    expect((await shop.app.inject({ url: '/exports/orders.csv', headers: key(original.secret) })).statusCode).toBe(200)
    const response = await shop.app.inject({ method: 'POST', url: `/api-keys/${original.id}/rotate`, headers: bearer(shop.admin) })
    expect(response.statusCode).toBe(200)
    const rotated = response.json() as Key & { secret: string }
    expect(rotated).toEqual({
      ...original,
      prefix: rotated.secret.slice(0, 15),
      secret: expect.stringMatching(SECRET),
      lastUsedAt: expect.stringMatching(ISO),
    })
    expect(rotated.secret).not.toBe(original.secret)
    expect(rotated.prefix).not.toBe(original.prefix)
    expect(await row(original.id)).toMatchObject({
      lookup_id: rotated.prefix.slice(3),
      secret_hash: createHash('sha256').update(rotated.secret).digest('hex'),
      revoked_at: null,
    })

    const old = await shop.app.inject({ url: '/exports/orders.csv', headers: key(original.secret) })
    expect(old.statusCode).toBe(401)
    expect(old.json()).toEqual({ error: 'Token inválido o expirado' })
    expect((await shop.app.inject({ url: '/exports/orders.csv', headers: key(rotated.secret) })).statusCode).toBe(200)
  })

  it('404 for an unknown key, 409 for a revoked one, 422 for a bad id or a body; nothing changes', async () => {
    const unknown = await shop.app.inject({ method: 'POST', url: '/api-keys/999999/rotate', headers: bearer(shop.admin) })
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toEqual({ error: 'Clave de API no encontrada' })

    const revoked = await createKey()
    await shop.app.inject({ method: 'DELETE', url: `/api-keys/${revoked.id}`, headers: bearer(shop.admin) })
    const before = await row(revoked.id)
    const refused = await shop.app.inject({ method: 'POST', url: `/api-keys/${revoked.id}/rotate`, headers: bearer(shop.admin) })
    expect(refused.statusCode).toBe(409)
    expect(refused.json()).toEqual({ error: 'La clave de API está revocada' })
    expect(await row(revoked.id)).toEqual(before)

    const badId = await shop.app.inject({ method: 'POST', url: '/api-keys/abc/rotate', headers: bearer(shop.admin) })
    expect(badId.statusCode).toBe(422)
    expect(badId.json()).toEqual({ error: 'id must be an integer number' })

    const live = await createKey()
    const withBody = await shop.app.inject({ method: 'POST', url: `/api-keys/${live.id}/rotate`, headers: bearer(shop.admin), payload: { secret: 'x' } })
    expect(withBody.statusCode).toBe(422)
    expect(withBody.json()).toEqual({ error: 'property secret should not exist' })
    expect((await row(live.id))?.lookup_id).toBe(live.prefix.slice(3))
  })
})

describe('DELETE /api-keys/:id', () => {
  it('revokes the key at once and keeps its row; revoking again keeps the first time', async () => {
    const revoked = await createKey({ name: 'Old ERP' })
    expect((await shop.app.inject({ url: '/products?status=draft', headers: key(revoked.secret) })).statusCode).toBe(200)
    const response = await shop.app.inject({ method: 'DELETE', url: `/api-keys/${revoked.id}`, headers: bearer(shop.admin) })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ message: 'Clave de API revocada' })
    const stored = await row(revoked.id)
    expect(stored?.revoked_at).toMatch(ISO)

    const used = await shop.app.inject({ url: '/products?status=draft', headers: key(revoked.secret) })
    expect(used.statusCode).toBe(401)
    expect(used.json()).toEqual({ error: 'Token inválido o expirado' })

    const listed = await shop.app.inject({ url: '/api-keys?limit=1000', headers: bearer(shop.admin) })
    expect((listed.json() as Key[]).find((k) => k.id === revoked.id)).toMatchObject({ name: 'Old ERP', revokedAt: stored?.revoked_at })

    const again = await shop.app.inject({ method: 'DELETE', url: `/api-keys/${revoked.id}`, headers: bearer(shop.admin) })
    expect(again.statusCode).toBe(200)
    expect(again.json()).toEqual({ message: 'Clave de API revocada' })
    expect(await row(revoked.id)).toEqual(stored)
  })

  it('404 for an unknown key, 422 for a bad id', async () => {
    const unknown = await shop.app.inject({ method: 'DELETE', url: '/api-keys/999999', headers: bearer(shop.admin) })
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toEqual({ error: 'Clave de API no encontrada' })
    const badId = await shop.app.inject({ method: 'DELETE', url: '/api-keys/1.5', headers: bearer(shop.admin) })
    expect(badId.statusCode).toBe(422)
    expect(badId.json()).toEqual({ error: 'id must be an integer number' })
  })
})
