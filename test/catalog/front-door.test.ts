import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { openTestDatabase, testConfig } from '../helpers/app.js'
import { createProductViaApi } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'

// Cache hits answered in the HTTP server's listener, before Fastify (plugins/catalog-cache.ts,
// frontDoor): only a real listening server goes through it (app.inject does not).

let app: FastifyInstance | undefined
let drop: (() => Promise<void>) | undefined
afterEach(async () => {
  await app?.close()
  await drop?.()
  app = undefined
  drop = undefined
})

async function start(env: Record<string, string> = {}) {
  const database = await openTestDatabase()
  drop = database.drop
  app = await buildApp(testConfig(env), { database: database.handle, logger: false, catalogCache: true })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const admin = await makeUser(app, 'admin')
  const product = await createProductViaApi(app, admin, { name: 'Front', price: '10.00', stock: '5' })
  return { base, admin, product }
}

/** Headers that differ between any two answers: the date, and the request id. */
function comparable(response: Response): Record<string, string> {
  const headers = Object.fromEntries(response.headers)
  delete headers.date
  delete headers['x-request-id']
  return headers
}

describe('cache hits before Fastify', () => {
  it('answers a repeated read with the same status, headers and bytes, and its own request id', async () => {
    const { base, product } = await start()
    for (const url of [`/products/${product.id}`, '/products?limit=5']) {
      const first = await fetch(base + url)
      const second = await fetch(base + url, { headers: { 'x-request-id': 'proxy-id-1' } })
      expect(second.status).toBe(200)
      expect(await second.text()).toBe(await first.text())
      expect(comparable(second)).toEqual(comparable(first))
      expect(second.headers.get('x-request-id')).toBe('proxy-id-1')
      expect(first.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    }
  })

  it('is a hit indeed, and the next read after a write shows the write', async () => {
    const { base, admin, product } = await start()
    const url = `${base}/products/${product.id}`
    await fetch(url)
    const hits = app!.catalogCache.hits()
    expect((await (await fetch(url)).json()).name).toBe('Front')
    expect(app!.catalogCache.hits()).toEqual({ total: hits.total + 1, beforeFastify: hits.beforeFastify + 1 })
    const update = await fetch(url, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Changed' }),
    })
    expect(update.status).toBe(200)
    expect((await (await fetch(url)).json()).name).toBe('Changed')
    const removal = await fetch(url, { method: 'DELETE', headers: bearer(admin) })
    expect(removal.status).toBe(200)
    const gone = await fetch(url)
    expect(gone.status).toBe(404)
    expect(await gone.json()).toEqual({ error: 'Producto no encontrado' })
  })

  it('leaves HEAD, and CORS requests with an Origin, to Fastify; a hit under CORS says Vary: Origin', async () => {
    const { base, product } = await start({ CORS_ORIGIN: 'https://shop.example' })
    const url = `${base}/products/${product.id}`
    await fetch(url)
    const plain = await fetch(url)
    expect(plain.status).toBe(200)
    expect(plain.headers.get('vary')).toBe('Origin')
    const hits = app!.catalogCache.hits()
    const cross = await fetch(url, { headers: { origin: 'https://shop.example' } })
    // A hit still, answered inside Fastify, where the CORS plugin adds its headers.
    expect(app!.catalogCache.hits()).toEqual({ total: hits.total + 1, beforeFastify: hits.beforeFastify })
    expect(cross.status).toBe(200)
    expect(cross.headers.get('access-control-allow-origin')).toBe('https://shop.example')
    expect(await cross.text()).toBe(await (await fetch(url)).text())
    const head = await fetch(url, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
  })
})
