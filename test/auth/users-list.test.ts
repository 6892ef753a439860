import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../helpers/app.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'

// GET /auth/users is paged like the other lists: X-Total-Count and Link. Before, it sent neither, and the
// dashboard asked for one row more than a page to guess whether there was a next one.

let t: TestApp
let admin: TestUser
let ids: number[] = []

beforeAll(async () => {
  t = await createTestApp()
  admin = await makeUser(t.app, 'admin')
  for (let i = 0; i < 6; i++) await makeUser(t.app, 'customer', `Customer ${i}`)
  const rows = await t.app.db.selectFrom('users').select('id').orderBy('id').execute()
  ids = rows.map((row) => row.id)
})
afterAll(async () => {
  await t.close()
})

const page = (query: string) => t.app.inject({ method: 'GET', url: `/auth/users?${query}`, headers: bearer(admin) })
const listed = (body: string) => (JSON.parse(body) as { id: number }[]).map((user) => user.id)

describe('GET /auth/users paging', () => {
  it('counts every user (X-Total-Count) and links the next and previous pages', async () => {
    expect(ids).toHaveLength(7)
    const first = await page('limit=3')
    expect(first.statusCode).toBe(200)
    expect(listed(first.body)).toEqual(ids.slice(0, 3))
    expect(first.headers['x-total-count']).toBe('7')
    expect(first.headers.link).toBe('<http://shop.test/auth/users?limit=3&offset=3>; rel="next"')

    const middle = await page('limit=3&offset=3')
    expect(listed(middle.body)).toEqual(ids.slice(3, 6))
    expect(middle.headers.link).toBe('<http://shop.test/auth/users?limit=3&offset=6>; rel="next", <http://shop.test/auth/users?limit=3&offset=0>; rel="prev"')

    const last = await page('limit=3&offset=6')
    expect(listed(last.body)).toEqual(ids.slice(6))
    expect(last.headers['x-total-count']).toBe('7')
    expect(last.headers.link).toBe('<http://shop.test/auth/users?limit=3&offset=3>; rel="prev"')
  })

  it('sends no Link for a single page, and the count past the end too', async () => {
    const all = await page('')
    expect(listed(all.body)).toEqual(ids)
    expect([all.headers['x-total-count'], all.headers.link]).toEqual(['7', undefined])
    const past = await page('limit=5&offset=50')
    expect([past.json(), past.headers['x-total-count']]).toEqual([[], '7'])
    expect(past.headers.link).toBe('<http://shop.test/auth/users?limit=5&offset=2>; rel="prev"')
  })
})
