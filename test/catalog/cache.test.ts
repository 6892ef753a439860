import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/connect.js'
import { testConfig } from '../helpers/app.js'
import { multipart, pngPart } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { createSharedDatabase, type SharedDatabase } from '../helpers/shared-database.js'

// Two real instances of the service on one database (see helpers/shared-database.ts).

let shared: SharedDatabase
const handles: DatabaseHandle[] = []
let first: FastifyInstance
let second: FastifyInstance
let admin: TestUser
let customer: TestUser

async function startInstance(): Promise<FastifyInstance> {
  const handle = shared.open()
  handles.push(handle)
  const app = await buildApp(testConfig(), { database: handle, logger: false, catalogCache: true })
  await app.ready()
  return app
}

beforeAll(async () => {
  shared = await createSharedDatabase('cache')
  first = await startInstance()
  second = await startInstance()
  admin = await makeUser(first, 'admin')
  customer = await makeUser(first, 'customer')
})

afterAll(async () => {
  await first?.close()
  await second?.close()
  for (const handle of handles) await handle.db.destroy()
  await shared?.drop()
})

/** Creates a product through the API, as an admin would: the cache must see every such write. */
async function createProduct(app: FastifyInstance, fields: { name: string; price?: string; stock?: string }): Promise<{ id: number }> {
  const form = await multipart({ name: fields.name, price: fields.price ?? '10.00', stock: fields.stock ?? '10' }, [pngPart()])
  const response = await app.inject({ method: 'POST', url: '/products', headers: { ...bearer(admin), ...form.headers }, payload: form.payload })
  expect(response.statusCode).toBe(201)
  return response.json() as { id: number }
}

async function readProduct(app: FastifyInstance, id: number) {
  const response = await app.inject({ method: 'GET', url: `/products/${id}` })
  return { status: response.statusCode, body: response.json() as { name: string; price: number; stock: number } }
}

async function listedNames(app: FastifyInstance): Promise<string[]> {
  const response = await app.inject({ method: 'GET', url: '/products?limit=1000' })
  expect(response.statusCode).toBe(200)
  return (response.json() as { name: string }[]).map((p) => p.name)
}

describe('product read cache', () => {
  it('answers a repeated read with the same bytes and headers', async () => {
    await createProduct(first, { name: 'Repeated' })
    const one = await first.inject({ method: 'GET', url: '/products?limit=1000' })
    const two = await first.inject({ method: 'GET', url: '/products?limit=1000' })
    expect(two.statusCode).toBe(200)
    expect(two.body).toBe(one.body)
    expect(two.headers['content-type']).toBe(one.headers['content-type'])
    expect(two.headers['x-total-count']).toBe(one.headers['x-total-count'])
    expect(two.headers['x-request-id']).not.toBe(one.headers['x-request-id'])
  })

  it('shows a write on the very next read of the instance that made it', async () => {
    const product = await createProduct(first, { name: 'Before' })
    expect((await readProduct(first, product.id)).body.name).toBe('Before')
    expect(await listedNames(first)).toContain('Before')

    const update = await first.inject({
      method: 'PUT',
      url: `/products/${product.id}`,
      headers: bearer(admin),
      payload: { name: 'After', price: 12.5 },
    })
    expect(update.statusCode).toBe(200)
    expect((await readProduct(first, product.id)).body).toMatchObject({ name: 'After', price: 12.5 })
    expect(await listedNames(first)).toContain('After')

    // An order moves stock: the next read shows it.
    const add = await first.inject({ method: 'POST', url: '/cart/add', headers: bearer(customer), payload: { productId: product.id, quantity: 3 } })
    expect(add.statusCode).toBe(201)
    const order = await first.inject({ method: 'POST', url: '/orders', headers: bearer(customer) })
    expect(order.statusCode).toBe(201)
    expect((await readProduct(first, product.id)).body.stock).toBe(7)

    const removal = await first.inject({ method: 'DELETE', url: `/products/${product.id}`, headers: bearer(admin) })
    expect(removal.statusCode).toBe(200)
    expect((await readProduct(first, product.id)).status).toBe(404)
    expect(await listedNames(first)).not.toContain('After')
  })

  it('shows a write made on another instance once that instance hears of it', async () => {
    const product = await createProduct(first, { name: 'Elsewhere before' })
    // The second instance has both reads in its cache.
    expect((await readProduct(second, product.id)).body.name).toBe('Elsewhere before')
    expect(await listedNames(second)).toContain('Elsewhere before')
    expect((await readProduct(second, product.id)).body.name).toBe('Elsewhere before')

    const heard = second.catalogCache.nextClear()
    const update = await first.inject({
      method: 'PUT',
      url: `/products/${product.id}`,
      headers: bearer(admin),
      payload: { name: 'Elsewhere after' },
    })
    expect(update.statusCode).toBe(200)
    // PostgreSQL: the first instance's NOTIFY; SQLite: the second sees the file's data_version move.
    await heard
    expect((await readProduct(second, product.id)).body.name).toBe('Elsewhere after')
    expect(await listedNames(second)).toContain('Elsewhere after')
  })
})
