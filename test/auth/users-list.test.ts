import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'

// GET /auth/users is paged like the other lists: X-Total-Count and Link. Before, it sent neither, and the
// dashboard asked for one row more than a page to guess whether there was a next one.

const shop = useTestApp()
let ids: number[] = []

// Seven users in all: the set-up's admin and customer, and five more.
beforeAll(async () => {
  for (let i = 0; i < 5; i++) await makeUser(shop.app, 'customer', `Customer ${i}`)
  const rows = await shop.app.db.selectFrom('users').select('id').orderBy('id').execute()
  ids = rows.map((row) => row.id)
})

const page = (query: string) => shop.app.inject({ method: 'GET', url: `/auth/users?${query}`, headers: bearer(shop.admin) })
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
