import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import S3rver from 's3rver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ImageKeyTakenError } from '../../src/modules/images/image-key-taken.js'
import { createS3ImageHost } from '../../src/modules/images/s3-image-host.js'
import { createTestApp, testConfig, useTestApp } from '../helpers/app.js'
import { failingHost, type FilePart, multipart, PNG, pngPart, sendProductForm } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { s3Env } from '../helpers/s3.js'

// A real S3-protocol server on 127.0.0.1 with a random port and a temporary directory: no mock of the SDK.
const directory = mkdtempSync(join(tmpdir(), 'shop-s3rver-'))
let server: S3rver
let endpoint: string

/** s3rver's settings for `bucket` (the region set, as a real S3 needs one). */
function bucketEnv(bucket = 'shop-images'): Record<string, string> {
  return { ...s3Env(endpoint, { bucket }), S3_REGION: 'us-east-1' }
}

/** The test app's environment: s3rver's, filled in once it listens (the hook below runs before useTestApp's). */
const env: Record<string, string> = {}
beforeAll(async () => {
  server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: 'shop-images', configs: [] }] })
  const address = (await server.run()) as { port: number }
  endpoint = `http://127.0.0.1:${address.port}`
  Object.assign(env, bucketEnv())
})
afterAll(async () => {
  await server?.close()
  rmSync(directory, { recursive: true, force: true })
})
const t = useTestApp(env)

/** The s3 driver's configuration as loadConfig makes it (default timeouts), on `at`, with URLs on s3rver itself. */
function driverConfig(at: string) {
  const storage = testConfig({ ...bucketEnv(), S3_ENDPOINT: at }).storage
  if (storage.driver !== 's3') throw new Error('s3 expected')
  return storage
}

async function send(method: 'POST' | 'PUT', url: string, fields: Record<string, string>, files = [pngPart()], app = t.app) {
  return sendProductForm(app, { method, url, user: t.admin, fields, files })
}

describe('s3 image host against s3rver', () => {
  it('create stores the image under products/ and imageUrl is S3_PUBLIC_URL + key', async () => {
    const res = await send('POST', '/products', { name: 'Nube', price: '3.50' })
    expect(res.statusCode).toBe(201)
    const url: string = res.json().imageUrl
    expect(url).toMatch(new RegExp(`^${endpoint}/shop-images/products/\\d{13,}-photo\\.png$`))
    const object = await fetch(url)
    expect(object.status).toBe(200)
    expect(object.headers.get('content-type')).toBe('image/png')
    expect(Buffer.from(await object.arrayBuffer())).toEqual(PNG)
    // The service does not serve files itself with the s3 host.
    expect((await t.app.inject({ method: 'GET', url: new URL(url).pathname.replace('/shop-images', '/uploads') })).statusCode).toBe(404)
  })

  it('update replaces the object and deletes the old one; delete removes it', async () => {
    const created = await send('POST', '/products', { name: 'Viejo', price: '1' })
    const oldUrl: string = created.json().imageUrl
    const updated = await send('PUT', `/products/${created.json().id}`, { name: 'Nuevo' }, [pngPart('nuevo.png')])
    expect(updated.statusCode).toBe(200)
    const newUrl: string = updated.json().imageUrl
    expect(newUrl).toMatch(/-nuevo\.png$/)
    expect((await fetch(oldUrl)).status).toBe(404)
    expect((await fetch(newUrl)).status).toBe(200)
    const del = await t.app.inject({ method: 'DELETE', url: `/products/${created.json().id}`, headers: bearer(t.admin) })
    expect(del.statusCode).toBe(200)
    expect((await fetch(newUrl)).status).toBe(404)
  })

  it('stores a 5 MiB image streamed with its length', async () => {
    const data = Buffer.alloc(5 * 1024 * 1024, 7)
    const res = await send('POST', '/products', { name: 'Grande', price: '1' }, [{ filename: 'big.jpg', type: 'image/jpeg', data }])
    expect(res.statusCode).toBe(201)
    const object = await fetch(res.json().imageUrl)
    expect(object.headers.get('content-type')).toBe('image/jpeg')
    expect((await object.arrayBuffer()).byteLength).toBe(data.length)
  })

  it('a failing store (unknown bucket) is the upload-failure 500 and writes no row', async () => {
    const broken = await createTestApp(bucketEnv('no-such-bucket'))
    try {
      const user = await makeUser(broken.app, 'admin')
      const res = await sendProductForm(broken.app, { user, fields: { name: 'X', price: '1' } })
      expect(res.statusCode).toBe(500)
      expect(res.json()).toEqual({ error: 'Error al subir la imagen al servicio de alojamiento' })
      expect(await broken.app.db.selectFrom('products').select('id').execute()).toEqual([])
    } finally {
      await broken.close()
    }
  })

  it('a batch of images goes to the bucket; a batch whose second file fails leaves no object of it', async () => {
    const created = await send('POST', '/products', { name: 'Lote', price: '1' })
    const id = created.json().id as number
    const upload = async (app: typeof t.app, user: { token: string }, files: FilePart[]) => {
      const form = await multipart({}, files)
      return app.inject({ method: 'POST', url: `/products/${id}/images`, headers: { ...form.headers, ...bearer(user) }, payload: form.payload })
    }
    const added = await upload(t.app, t.admin, [pngPart('a.png', 'images'), pngPart('b.png', 'images')])
    expect(added.statusCode).toBe(201)
    const urls = (added.json() as { url: string }[]).map((image) => image.url)
    expect(urls.slice(1)).toEqual([expect.stringMatching(new RegExp(`^${endpoint}/shop-images/products/\\d{13,}-a\\.png$`)), expect.stringMatching(/-b\.png$/)])
    for (const url of urls) expect((await fetch(url)).status).toBe(200)

    // The same bucket, through a host that fails on the second store of the batch: the first object is removed.
    const s3 = createS3ImageHost(driverConfig(endpoint))
    const host = failingHost(s3)
    const objects = async () => {
      const keys: string[] = []
      for await (const object of s3.list('products/')) keys.push(object.key)
      return keys.sort()
    }
    const before = await objects()
    const flaky = await createTestApp(bucketEnv(), { imageHost: host })
    try {
      const user = await makeUser(flaky.app, 'admin')
      const product = await sendProductForm(flaky.app, { user, fields: { name: 'Otro', price: '1' } })
      expect(product.statusCode).toBe(201)
      const withProduct = await objects()
      host.afterStore = async () => {
        host.failStore = true
      }
      const form = await multipart({}, [pngPart('c.png', 'images'), pngPart('d.png', 'images'), pngPart('e.png', 'images')])
      const res = await flaky.app.inject({
        method: 'POST',
        url: `/products/${product.json().id}/images`,
        headers: { ...form.headers, ...bearer(user) },
        payload: form.payload,
      })
      expect([res.statusCode, res.json()]).toEqual([500, { error: 'Error al subir la imagen al servicio de alojamiento' }])
      expect(host.stored.filter((key) => key.endsWith('-c.png'))).toHaveLength(1)
      expect(await objects()).toEqual(withProduct)
      expect(withProduct).toHaveLength(before.length + 1)
      expect(await flaky.app.db.selectFrom('product_images').select('id').where('product_id', '=', product.json().id).execute()).toHaveLength(1)
    } finally {
      await flaky.close()
    }
  })

  it('the driver alone: store, public URL, delete (deleting a missing key is fine)', async () => {
    const host = createS3ImageHost(driverConfig(endpoint))
    await host.store('products/1-direct.gif', Readable.from([PNG]), 'image/gif', PNG.length)
    expect(host.publicUrl('products/1-direct.gif')).toBe(`${endpoint}/shop-images/products/1-direct.gif`)
    expect((await fetch(host.publicUrl('products/1-direct.gif'))).status).toBe(200)
    await host.delete('products/1-direct.gif')
    expect((await fetch(host.publicUrl('products/1-direct.gif'))).status).toBe(404)
    await expect(host.delete('products/never-there.png')).resolves.toBeUndefined()
  })
})

describe('conditional writes: an existing key is never overwritten', () => {
  // s3rver ignores If-None-Match on PUT; AWS S3, MinIO and R2 answer 412 when the key exists. This
  // proxy in front of s3rver does what they do, so the driver is tested against that answer.
  let proxy: Server
  let proxyEndpoint: string
  const conditionalPuts: string[] = []

  beforeAll(async () => {
    proxy = createServer((req, res) => {
      const forward = () => {
        const upstream = request(`${endpoint}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        })
        req.pipe(upstream)
      }
      if (req.method !== 'PUT' || req.headers['if-none-match'] !== '*') return forward()
      conditionalPuts.push(req.url ?? '')
      void fetch(`${endpoint}${req.url}`, { method: 'HEAD' }).then((head) => {
        if (head.status !== 200) return forward()
        req.resume()
        res.writeHead(412, { 'content-type': 'application/xml' })
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>',
        )
      })
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    proxyEndpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((resolve) => proxy?.close(resolve))
  })

  it('the driver sends If-None-Match: * and turns the 412 into ImageKeyTakenError, keeping the first image', async () => {
    const host = createS3ImageHost(driverConfig(proxyEndpoint))
    await host.store('products/2-twice.png', Readable.from([PNG]), 'image/png', PNG.length)
    const other = Buffer.alloc(64, 1)
    await expect(host.store('products/2-twice.png', Readable.from([other]), 'image/png', other.length)).rejects.toBeInstanceOf(ImageKeyTakenError)
    expect(conditionalPuts.filter((url) => url.startsWith('/shop-images/products/2-twice.png'))).toHaveLength(2)
    const object = await fetch(host.publicUrl('products/2-twice.png'))
    expect(Buffer.from(await object.arrayBuffer())).toEqual(PNG)
    await host.delete('products/2-twice.png')
  })

  it('the service stores an upload whose key is taken under a fresh key', async () => {
    const host = createS3ImageHost(driverConfig(proxyEndpoint))
    // Another instance took the first key this service picks: its first store is refused.
    const taken: string[] = []
    const racing = {
      ...host,
      async store(key: string, body: Readable, contentType: string, size?: number) {
        if (taken.length === 0) {
          taken.push(key)
          await host.store(key, Readable.from([Buffer.from('the other instance')]), 'image/png')
        }
        return host.store(key, body, contentType, size)
      },
    }
    const app = await createTestApp(bucketEnv(), { imageHost: racing })
    try {
      const user = await makeUser(app.app, 'admin')
      const res = await sendProductForm(app.app, { user, fields: { name: 'Carrera', price: '2' }, files: [pngPart('carrera.png')] })
      expect(res.statusCode).toBe(201)
      const url: string = res.json().imageUrl
      expect(url).not.toBe(host.publicUrl(taken[0] as string))
      expect(Buffer.from(await (await fetch(url)).arrayBuffer())).toEqual(PNG)
      expect(await (await fetch(host.publicUrl(taken[0] as string))).text()).toBe('the other instance')
    } finally {
      await app.close()
    }
  })
})
