import { describe, expect, it } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'

const shop = useTestApp()

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const home = { fullName: 'Ana Pérez', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' }

function call(user: TestUser | undefined, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  return shop.app.inject({ method, url, headers: user ? bearer(user) : {}, ...(payload === undefined ? {} : { payload }) })
}

async function addressCount(userId: number): Promise<number> {
  const rows = await shop.app.db.selectFrom('addresses').select('id').where('user_id', '=', userId).execute()
  return rows.length
}

describe('POST /addresses', () => {
  it('creates the caller’s address: 201, optional fields null', async () => {
    const user = await makeUser(shop.app)
    const res = await call(user, 'POST', '/addresses', home)
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.any(Number),
      userId: user.id,
      ...home,
      line2: null,
      region: null,
      phone: null,
      createdAt: expect.stringMatching(ISO),
      updatedAt: body.createdAt,
    })
    const list = await call(user, 'GET', '/addresses')
    expect(list.statusCode).toBe(200)
    expect(list.json()).toEqual([body])
  })

  it('keeps every optional field given', async () => {
    const user = await makeUser(shop.app)
    const full = { ...home, line2: '3º B', region: 'Madrid', phone: '+34 600 000 000' }
    const res = await call(user, 'POST', '/addresses', full)
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject(full)
  })

  it.each([
    ['fullName', { ...home, fullName: undefined }, 'fullName should not be empty'],
    ['line1', { ...home, line1: undefined }, 'line1 should not be empty'],
    ['city', { ...home, city: '' }, 'city should not be empty'],
    ['postalCode', { ...home, postalCode: undefined }, 'postalCode should not be empty'],
    ['country', { ...home, country: undefined }, 'country should not be empty'],
    ['lower-case country', { ...home, country: 'es' }, messages.invalidCountry],
    ['alpha-3 country', { ...home, country: 'ESP' }, messages.invalidCountry],
    ['unassigned country', { ...home, country: 'ZZ' }, messages.invalidCountry],
    ['user-assigned country', { ...home, country: 'XK' }, messages.invalidCountry],
    ['numeric country', { ...home, country: 724 }, messages.invalidCountry],
    ['long city', { ...home, city: 'x'.repeat(101) }, 'city must be shorter than or equal to 100 characters'],
    ['control character', { ...home, line1: 'a\u0000b' }, 'line1 must not contain control characters'],
  ])('refuses a bad %s with 422 and writes nothing', async (_label, payload, message) => {
    const user = await makeUser(shop.app)
    const res = await call(user, 'POST', '/addresses', payload)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await addressCount(user.id)).toBe(0)
  })

  it('uses the exact country message', () => {
    expect(messages.invalidCountry).toBe('country must be a valid ISO 3166-1 alpha-2 code')
  })

  it('requires a token', async () => {
    expect((await call(undefined, 'POST', '/addresses', home)).json()).toEqual({ error: messages.noUser })
    expect((await call(undefined, 'GET', '/addresses')).statusCode).toBe(401)
  })
})

describe('PATCH / DELETE /addresses/:id', () => {
  it('changes the given fields only; an optional field may be cleared with null', async () => {
    const user = await makeUser(shop.app)
    const created = (await call(user, 'POST', '/addresses', { ...home, line2: 'Piso 2' })).json()
    const res = await call(user, 'PATCH', `/addresses/${created.id}`, { city: 'Sevilla', country: 'PT', line2: null })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ...created, city: 'Sevilla', country: 'PT', line2: null, updatedAt: expect.stringMatching(ISO) })
  })

  it.each([
    [{ country: 'pt' }, messages.invalidCountry],
    [{ city: null }, 'city must be a string'],
    [{}, 'body must contain at least one field'],
  ])('refuses %j with 422 and changes nothing', async (payload, message) => {
    const user = await makeUser(shop.app)
    const created = (await call(user, 'POST', '/addresses', home)).json()
    const res = await call(user, 'PATCH', `/addresses/${created.id}`, payload)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect((await call(user, 'GET', '/addresses')).json()).toEqual([created])
  })

  it('answers someone else’s or an unknown address with 404 Dirección no encontrada, and changes nothing', async () => {
    const owner = await makeUser(shop.app)
    const stranger = await makeUser(shop.app)
    const created = (await call(owner, 'POST', '/addresses', home)).json()
    for (const [method, payload] of [
      ['PATCH', { city: 'Lugo' }],
      ['DELETE', undefined],
    ] as const) {
      for (const id of [created.id, 999999]) {
        const res = await call(stranger, method, `/addresses/${id}`, payload)
        expect(res.statusCode).toBe(404)
        expect(res.json()).toEqual({ error: 'Dirección no encontrada' })
      }
    }
    expect((await call(owner, 'GET', '/addresses')).json()).toEqual([created])
    expect((await call(stranger, 'GET', '/addresses')).json()).toEqual([])
  })

  it('deletes the caller’s own address', async () => {
    const user = await makeUser(shop.app)
    const created = (await call(user, 'POST', '/addresses', home)).json()
    const res = await call(user, 'DELETE', `/addresses/${created.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: 'Dirección eliminada' })
    expect(await addressCount(user.id)).toBe(0)
  })

  it('lists only the caller’s addresses, oldest first', async () => {
    const [a, b] = [await makeUser(shop.app), await makeUser(shop.app)]
    const a1 = (await call(a, 'POST', '/addresses', home)).json()
    await call(b, 'POST', '/addresses', home)
    const a2 = (await call(a, 'POST', '/addresses', { ...home, country: 'FR' })).json()
    expect((await call(a, 'GET', '/addresses')).json().map((x: { id: number }) => x.id)).toEqual([a1.id, a2.id])
  })
})
