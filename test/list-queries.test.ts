import { describe, expect, it } from 'vitest'
import { useTestApp } from './helpers/app.js'
import { bearer } from './helpers/factories.js'

// The lists refuse a query parameter they do not define (422 `property <name> should not exist`, the bodies'
// wording), where they used to drop it unread: `GET /orders?userId=2` answered every order of the shop, and
// `GET /products?category=3` (for `categoryId`) every product, as if the filter had applied.

const t = useTestApp()

/** Each list, with a query it understands, and who may call it. */
const lists: Array<[path: string, known: string, caller: 'anyone' | 'customer' | 'admin']> = [
  ['/products', 'limit=5&offset=0&categoryId=1&q=lamp&minPrice=1&maxPrice=9&sort=name', 'anyone'],
  ['/categories', '', 'anyone'],
  ['/shipping-methods', 'country=ES&all=false', 'anyone'],
  ['/orders', 'limit=5&offset=0&status=pending', 'customer'],
  ['/auth/users', 'limit=5&offset=0', 'admin'],
  ['/webhooks', '', 'admin'],
  ['/webhooks/1/deliveries', 'limit=5&offset=0&status=failed', 'admin'],
  ['/admin/api/stats', 'days=7', 'admin'],
]

function get(url: string, caller: 'anyone' | 'customer' | 'admin') {
  const user = caller === 'admin' ? t.admin : caller === 'customer' ? t.customer : undefined
  return t.app.inject({ method: 'GET', url, headers: user ? bearer(user) : {} })
}

describe('unknown query parameters on the lists', () => {
  it.each(lists)('%s answers its own parameters, and refuses any other with 422', async (path, known, caller) => {
    // The deliveries of webhook 1 do not exist: only validation, which comes first, is under test there.
    const fine = await get(`${path}?${known}`, caller)
    expect(fine.statusCode, fine.body).toBe(path === '/webhooks/1/deliveries' ? 404 : 200)

    for (const [query, name] of [
      ['junk=1', 'junk'],
      [`${known}&page=2`, 'page'],
      ['userId=2', 'userId'],
      ['a=1&b=2', 'a'],
      ['LIMIT=5', 'LIMIT'],
    ] as const) {
      if (path === '/orders' && name === 'userId') continue
      const res = await get(`${path}?${query}`, caller)
      expect([res.statusCode, res.json()], `${path}?${query}`).toEqual([422, { error: `property ${name} should not exist` }])
    }
  })

  it('reports a bad value of a known parameter before an unknown one, and checks who calls first', async () => {
    const bad = await get('/products?junk=1&limit=abc', 'anyone')
    expect([bad.statusCode, bad.json()]).toEqual([422, { error: 'limit must be an integer number' }])
    const anonymous = await get('/auth/users?junk=1', 'anyone')
    expect(anonymous.statusCode).toBe(401)
    const notAdmin = await get('/auth/users?junk=1', 'customer')
    expect(notAdmin.statusCode).toBe(403)
  })

  it('leaves the routes of one item alone: they read no query string', async () => {
    const res = await get('/categories/1?junk=1', 'anyone')
    expect(res.statusCode).toBe(404)
  })
})
