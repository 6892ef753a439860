import { beforeAll, describe, expect, it } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'

// GET /orders?userId=: an admin lists one customer's orders (the dashboard's "Orders" link on a user). Before,
// the parameter was dropped unread and the answer was every order of the shop.

const t = useTestApp()
let ana: TestUser
let bo: TestUser
const placed: Record<string, number[]> = {}

async function placeOrders(user: TestUser, count: number): Promise<number[]> {
  const ids: number[] = []
  for (let i = 0; i < count; i++) {
    const product = await makeProduct(t.app, { stock: 5, priceCents: 100 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
    const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
    expect(res.statusCode).toBe(201)
    ids.push((res.json() as { id: number }).id)
  }
  return ids
}

const list = (user: TestUser, query: string) => t.app.inject({ method: 'GET', url: `/orders?${query}`, headers: bearer(user) })
const ids = (body: string) => (JSON.parse(body) as { id: number; userId: number }[]).map((order) => order.id)

beforeAll(async () => {
  ana = await makeUser(t.app, 'customer', 'Ana')
  bo = await makeUser(t.app, 'customer', 'Bo')
  placed.ana = await placeOrders(ana, 3)
  placed.bo = await placeOrders(bo, 2)
})

describe('GET /orders?userId=', () => {
  it('gives an admin that customer’s orders only, newest first, counted and paged with the filter kept', async () => {
    const res = await list(t.admin, `userId=${ana.id}&limit=2`)
    expect(res.statusCode).toBe(200)
    expect(ids(res.body)).toEqual([placed.ana![2], placed.ana![1]])
    expect(res.headers['x-total-count']).toBe('3')
    expect(res.headers.link).toBe(`<http://shop.test/orders?limit=2&offset=2&userId=${ana.id}>; rel="next"`)
    const customers = (res.json() as { customer: { id: number } }[]).map((order) => order.customer.id)
    expect(new Set(customers)).toEqual(new Set([ana.id]))

    const both = await list(t.admin, `userId=${bo.id}&status=pending`)
    expect(ids(both.body)).toEqual([...placed.bo!].reverse())
    expect(both.headers['x-total-count']).toBe('2')
  })

  it('answers an empty list for a user with no orders, or no such user', async () => {
    for (const userId of [t.admin.id, 2_000_000_000]) {
      const res = await list(t.admin, `userId=${userId}`)
      expect([res.statusCode, res.json(), res.headers['x-total-count']]).toEqual([200, [], '0'])
    }
  })

  it('lets a customer name themselves (their own orders, as without it), and refuses anyone else with 403', async () => {
    const own = await list(ana, `userId=${ana.id}`)
    expect(own.statusCode).toBe(200)
    expect(ids(own.body)).toEqual([...placed.ana!].reverse())

    const other = await list(ana, `userId=${bo.id}`)
    expect([other.statusCode, other.json()]).toEqual([403, { error: messages.requiresRoles(['admin']) }])
  })

  it('checks the value like any other parameter', async () => {
    for (const [query, error] of [
      ['userId=abc', 'userId must be an integer number'],
      ['userId=0', 'userId must not be less than 1'],
      ['userId=2147483648', 'userId must not be greater than 2147483647'],
    ]) {
      for (const [role, user] of [
        ['admin', t.admin],
        ['customer', ana],
      ] as const) {
        const res = await list(user, query!)
        expect([res.statusCode, res.json()], `${query} as ${role}`).toEqual([422, { error }])
      }
    }
  })
})
