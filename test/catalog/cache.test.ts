import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../helpers/app.js'
import { beforeAll, describe, expect, it } from 'vitest'
import { multipart, pngPart } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { useInstances } from '../helpers/shared-database.js'

// Two real instances of the service on one database (see helpers/shared-database.ts), the cache on whatever the
// project; the tests that build an instance of their own (to add a route or a hook first) give it its own database.
const instances = useInstances(2, 'cache', { app: { catalogCache: true } })
let first: FastifyInstance
let second: FastifyInstance
let admin: TestUser
let customer: TestUser

beforeAll(async () => {
  ;[first, second] = instances.apps as [FastifyInstance, FastifyInstance]
  admin = await makeUser(first, 'admin')
  customer = await makeUser(first, 'customer')
})

/** Creates a product through the API, as an admin would (the instances' one by default): the cache must see every such write. */
async function createProduct(app: FastifyInstance, fields: { name: string; price?: string; stock?: string }, by: TestUser = admin): Promise<{ id: number }> {
  const form = await multipart({ name: fields.name, price: fields.price ?? '10.00', stock: fields.stock ?? '10' }, [pngPart()])
  const response = await app.inject({ method: 'POST', url: '/products', headers: { ...bearer(by), ...form.headers }, payload: form.payload })
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
    const hits = first.catalogCache.hits().total
    const two = await first.inject({ method: 'GET', url: '/products?limit=1000' })
    expect(first.catalogCache.hits().total).toBe(hits + 1)
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

  it('keys a list on its validated query: parameter order and spelling share one entry; unknown parameters add nothing', async () => {
    await createProduct(first, { name: 'Keyed' })
    first.catalogCache.invalidate()
    const tidy = await first.inject({ method: 'GET', url: '/products?limit=5&sort=price_asc' })
    expect(tidy.statusCode).toBe(200)
    expect(first.catalogCache.usage()).toMatchObject({ entries: 1, keys: 2 }) // its URL is the key, plus the one it was asked by
    const hits = first.catalogCache.hits().total

    // Another order and spelling: answered from the same entry, and remembered (known parameters only).
    const reordered = await first.inject({ method: 'GET', url: '/products?sort=price_asc&limit=05' })
    expect(reordered.body).toBe(tidy.body)
    expect(reordered.headers.link).toBe(tidy.headers.link)
    expect(first.catalogCache.hits().total).toBe(hits + 1)
    expect(first.catalogCache.usage()).toMatchObject({ entries: 1, keys: 3 })

    // Unknown parameters are refused (422, docs/api.md), and nothing is remembered for them, however many.
    for (let i = 0; i < 20; i++) {
      const junk = await first.inject({ method: 'GET', url: `/products?limit=5&junk${i}=${'x'.repeat(1000)}&sort=price_asc` })
      expect(junk.statusCode).toBe(422)
    }
    expect(first.catalogCache.hits().total).toBe(hits + 1)
    expect(first.catalogCache.usage()).toMatchObject({ entries: 1, keys: 3 })

    // A product page by another spelling of its id.
    const { id } = (tidy.json() as { id: number }[])[0]!
    await first.inject({ method: 'GET', url: `/products/${id}` })
    const padded = await first.inject({ method: 'GET', url: `/products/00${id}?x=1` })
    expect(padded.statusCode).toBe(200)
    expect(first.catalogCache.hits().total).toBe(hits + 2)
    expect(first.catalogCache.usage()).toMatchObject({ entries: 2, keys: 4 })
  })

  it('is emptied by a write only when the write was done: a refused one (4xx) leaves it alone', async () => {
    const product = await createProduct(first, { name: 'Refused' })
    await readProduct(first, product.id)
    const hits = first.catalogCache.hits().total
    const anonymous = await first.inject({ method: 'DELETE', url: `/products/${product.id}` })
    expect(anonymous.statusCode).toBe(401)
    const invalid = await first.inject({ method: 'PUT', url: `/products/${product.id}`, headers: bearer(admin), payload: { price: -1 } })
    expect(invalid.statusCode).toBe(422)
    const emptyCart = await first.inject({ method: 'POST', url: '/orders', headers: bearer(customer) })
    expect(emptyCart.statusCode).toBe(400)
    expect((await readProduct(first, product.id)).body.name).toBe('Refused')
    expect(first.catalogCache.hits().total).toBe(hits + 1)
  })

  it('empties on every write a route declares, and refuses to start a writing route that declares nothing', async () => {
    const { app, close } = await buildTestApp({}, { catalogCache: true })
    try {
      // A new writer, say a bulk price change, that forgot to say what it changes: the service cannot start.
      expect(() => app.post('/admin/reprice', async () => ({}))).toThrow(
        'POST /admin/reprice: a route that writes must declare config.invalidates, the change-feed topics it changes ([] for none; see docs/catalog.md)',
      )
      // The same writer, declared: its write shows on the very next read.
      app.post('/admin/reprice', { config: { invalidates: ['catalog'] } }, async () => {
        await app.db.updateTable('products').set({ price_cents: 4200 }).execute()
        return { ok: true }
      })
      await app.ready()
      const product = await createProduct(app, { name: 'Repriced' }, await makeUser(app, 'admin'))
      expect((await readProduct(app, product.id)).body.price).toBe(10)
      expect((await readProduct(app, product.id)).body.price).toBe(10)
      expect((await app.inject({ method: 'POST', url: '/admin/reprice' })).statusCode).toBe(200)
      expect((await readProduct(app, product.id)).body.price).toBe(42)
    } finally {
      await close()
    }
  })

  it('does not store the answer of a read that was under way when the cache was emptied', async () => {
    const { app, close } = await buildTestApp({}, { catalogCache: true })
    // A product read that has its answer waits at a gate the test opens: a write lands in between.
    let gate: Promise<void> | undefined
    let reached: () => void = () => {}
    const paused = new Promise<void>((resolve) => (reached = resolve))
    app.addHook('preSerialization', async (request, _reply, payload) => {
      if (gate && request.method === 'GET' && request.url.startsWith('/products/')) {
        reached()
        await gate
      }
      return payload
    })
    try {
      await app.ready()
      const ownAdmin = await makeUser(app, 'admin')
      const product = await createProduct(app, { name: 'In flight' }, ownAdmin)
      let open: () => void = () => {}
      gate = new Promise((resolve) => (open = resolve))
      const read = app.inject({ method: 'GET', url: `/products/${product.id}` })
      await paused
      gate = undefined
      const update = await app.inject({ method: 'PUT', url: `/products/${product.id}`, headers: bearer(ownAdmin), payload: { name: 'Landed' } })
      expect(update.statusCode).toBe(200)
      open()
      // The read answers what it read; its answer is not kept.
      expect((await read).json()).toMatchObject({ name: 'In flight' })
      const hits = app.catalogCache.hits().total
      expect((await readProduct(app, product.id)).body.name).toBe('Landed')
      expect(app.catalogCache.hits().total).toBe(hits)
    } finally {
      await close()
    }
  })

  it('is off with CATALOG_CACHE_MAX_BYTES=0', async () => {
    const { app, close } = await buildTestApp({ CATALOG_CACHE_MAX_BYTES: '0' }, { catalogCache: true })
    try {
      await app.ready()
      const product = await createProduct(app, { name: 'Uncached' }, await makeUser(app, 'admin'))
      for (let i = 0; i < 3; i++) expect((await readProduct(app, product.id)).body.name).toBe('Uncached')
      expect(app.catalogCache.hits().total).toBe(0)
      expect(app.catalogCache.usage()).toEqual({ entries: 0, keys: 0, bytes: 0 })
    } finally {
      await close()
    }
  })
})
