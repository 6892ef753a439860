import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import S3rver from 's3rver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createS3ImageHost } from '../../src/modules/images/s3-image-host.js'
import { createTestApp, type TestApp } from '../helpers/app.js'
import { multipart, PNG, pngPart } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'

// A real S3-protocol server on 127.0.0.1 with a random port and a temporary directory: no mock of the SDK.
const directory = mkdtempSync(join(tmpdir(), 'shop-s3rver-'))
let server: S3rver
let endpoint: string
let t: TestApp
let admin: TestUser

function s3Env(bucket = 'shop-images'): Record<string, string> {
  return {
    STORAGE_DRIVER: 's3',
    S3_BUCKET: bucket,
    S3_REGION: 'us-east-1',
    S3_ENDPOINT: endpoint,
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    S3_FORCE_PATH_STYLE: 'true',
    S3_PUBLIC_URL: `${endpoint}/${bucket}`,
  }
}

beforeAll(async () => {
  server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: 'shop-images', configs: [] }] })
  const address = (await server.run()) as { port: number }
  endpoint = `http://127.0.0.1:${address.port}`
  t = await createTestApp(s3Env())
  admin = await makeUser(t.app, 'admin')
})
afterAll(async () => {
  await t?.close()
  await server?.close()
  rmSync(directory, { recursive: true, force: true })
})

async function send(method: 'POST' | 'PUT', url: string, fields: Record<string, string>, files = [pngPart()], app = t.app) {
  const form = await multipart(fields, files)
  return app.inject({ method, url, headers: { ...form.headers, ...bearer(admin) }, payload: form.payload })
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
    const del = await t.app.inject({ method: 'DELETE', url: `/products/${created.json().id}`, headers: bearer(admin) })
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
    const broken = await createTestApp(s3Env('no-such-bucket'))
    try {
      const user = await makeUser(broken.app, 'admin')
      const form = await multipart({ name: 'X', price: '1' }, [pngPart()])
      const res = await broken.app.inject({ method: 'POST', url: '/products', headers: { ...form.headers, ...bearer(user) }, payload: form.payload })
      expect(res.statusCode).toBe(500)
      expect(res.json()).toEqual({ error: 'Error al subir la imagen al servicio de alojamiento' })
      expect(await broken.app.db.selectFrom('products').select('id').execute()).toEqual([])
    } finally {
      await broken.close()
    }
  })

  it('the driver alone: store, public URL, delete (deleting a missing key is fine)', async () => {
    const host = createS3ImageHost({
      driver: 's3',
      bucket: 'shop-images',
      region: 'us-east-1',
      endpoint,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      publicUrl: `${endpoint}/shop-images`,
      forcePathStyle: true,
    })
    await host.store('products/1-direct.gif', Readable.from([PNG]), 'image/gif', PNG.length)
    expect(host.publicUrl('products/1-direct.gif')).toBe(`${endpoint}/shop-images/products/1-direct.gif`)
    expect((await fetch(host.publicUrl('products/1-direct.gif'))).status).toBe(200)
    await host.delete('products/1-direct.gif')
    expect((await fetch(host.publicUrl('products/1-direct.gif'))).status).toBe(404)
    await expect(host.delete('products/never-there.png')).resolves.toBeUndefined()
  })
})
