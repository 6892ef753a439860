import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { type AddressInfo, createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import S3rver from 's3rver'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { multipart, pngPart } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { createLoggedApp, freePort, freezableRelay, type LogLine, silentServer, timed, unacceptingPort } from '../helpers/outage.js'
import { s3Env } from '../helpers/s3.js'

// The s3 image host with a store that is silent (accepts connections, never answers), down (nothing
// listens), and back: every call is bounded by S3_CONNECT/SOCKET/REQUEST_TIMEOUT_MS and S3_MAX_ATTEMPTS,
// and an upload that fails leaves no row and no spool file behind.

const directory = mkdtempSync(join(tmpdir(), 'shop-s3rver-'))
let s3rver: S3rver
let s3Port: number
beforeAll(async () => {
  s3rver = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: 'shop-images', configs: [] }] })
  s3Port = ((await s3rver.run()) as { port: number }).port
})
afterAll(async () => {
  await s3rver?.close()
  rmSync(directory, { recursive: true, force: true })
})

let closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of closers.reverse()) await close()
  closers = []
})

/** s3rver's settings with the calls going to `endpoint` (a silent or closed port), images read from s3rver. */
function s3EnvAt(endpoint: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...s3Env(endpoint, { publicUrl: `http://127.0.0.1:${s3Port}/shop-images` }), ...extra }
}

async function loggedApp(env: Record<string, string>) {
  const t = await createLoggedApp(env)
  closers.push(t.close)
  const admin = await makeUser(t.app, 'admin')
  const send = async (method: 'POST' | 'PUT', url: string, fields: Record<string, string>) => {
    const form = await multipart(fields, [pngPart()])
    return timed(() => t.app.inject({ method, url, headers: { ...form.headers, ...bearer(admin) }, payload: form.payload }), 15_000)
  }
  return { ...t, admin, send }
}

const uploadFailures = (lines: LogLine[]) => lines.filter((l) => l.msg === 'image upload failed')

/** A relay to s3rver that can stop passing anything on, as a store that hangs does. */
async function freezableStore(port: number) {
  const relay = await freezableRelay(port)
  closers.push(relay.close)
  return { endpoint: `http://127.0.0.1:${relay.port}`, freeze: relay.freeze }
}

describe('s3 image host: a silent store', () => {
  it('an upload answers the upload-failure 500 within S3_SOCKET_TIMEOUT_MS and writes nothing', async () => {
    const silent = await silentServer()
    closers.push(silent.close)
    const t = await loggedApp(s3EnvAt(`http://127.0.0.1:${silent.port}`, { S3_SOCKET_TIMEOUT_MS: '500' }))
    const res = await t.send('POST', '/products', { name: 'Colgado', price: '1' })
    expect(res.value.statusCode).toBe(500)
    expect(res.value.json()).toEqual({ error: 'Error al subir la imagen al servicio de alojamiento' })
    // One attempt (a streamed body is not retried) of half a second, give or take a loaded machine.
    expect(res.ms).toBeGreaterThanOrEqual(450)
    expect(res.ms).toBeLessThan(3000)
    expect(silent.connections()).toBe(1)
    expect(uploadFailures(t.lines)).toHaveLength(1)
    expect((uploadFailures(t.lines)[0]?.err as { message: string }).message).toMatch(/timed out after 500 ms of inactivity/)
    expect(await t.app.db.selectFrom('products').select('id').execute()).toEqual([])
    expect(readdirSync(t.config.uploadTmpDir)).toEqual([])
  })

  it('S3_REQUEST_TIMEOUT_MS bounds a whole call even when the socket is never silent for long', async () => {
    // A store that trickles a byte every 100 ms and never finishes its answer.
    const sockets = new Set<Socket>()
    const trickler = createServer((socket) => {
      sockets.add(socket)
      socket.on('error', () => undefined)
      socket.resume()
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n')
      const timer = setInterval(() => socket.write('1\r\n \r\n'), 100)
      socket.on('close', () => clearInterval(timer))
    })
    await new Promise<void>((resolve) => trickler.listen(0, '127.0.0.1', resolve))
    closers.push(async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => trickler.close(resolve))
    })
    const port = (trickler.address() as AddressInfo).port
    const t = await loggedApp(s3EnvAt(`http://127.0.0.1:${port}`, { S3_SOCKET_TIMEOUT_MS: '5000', S3_REQUEST_TIMEOUT_MS: '800' }))
    const res = await t.send('POST', '/products', { name: 'Goteo', price: '1' })
    expect(res.value.statusCode).toBe(500)
    expect(res.value.json()).toEqual({ error: 'Error al subir la imagen al servicio de alojamiento' })
    expect(res.ms).toBeLessThan(4000)
    expect(await t.app.db.selectFrom('products').select('id').execute()).toEqual([])
  })

  it('a replaced image on a silent store: 500, the product keeps its old image', async () => {
    const relay = await freezableStore(s3Port)
    const t = await loggedApp(s3EnvAt(relay.endpoint, { S3_SOCKET_TIMEOUT_MS: '500' }))
    const created = await t.send('POST', '/products', { name: 'Antes', price: '1' })
    expect(created.value.statusCode).toBe(201)
    const before = created.value.json()
    relay.freeze(true)
    const updated = await t.send('PUT', `/products/${before.id}`, { name: 'Después' })
    expect(updated.value.statusCode).toBe(500)
    expect(updated.value.json()).toEqual({ error: 'Error al subir la imagen al servicio de alojamiento' })
    expect(updated.ms).toBeLessThan(3000)
    const row = await t.app.db.selectFrom('products').select(['name', 'image_url']).where('id', '=', before.id).executeTakeFirstOrThrow()
    expect(row).toEqual({ name: 'Antes', image_url: before.imageUrl })
    expect(readdirSync(t.config.uploadTmpDir)).toEqual([])

    // Back: the next upload works, with nothing to restart.
    relay.freeze(false)
    const again = await t.send('PUT', `/products/${before.id}`, { name: 'Después' })
    expect(again.value.statusCode).toBe(200)
    expect((await fetch(again.value.json().imageUrl)).status).toBe(200)
  })

  it('a delete while the store hangs answers within S3_MAX_ATTEMPTS x S3_SOCKET_TIMEOUT_MS; the row is gone, the object logged', async () => {
    const relay = await freezableStore(s3Port)
    const t = await loggedApp(s3EnvAt(relay.endpoint, { S3_SOCKET_TIMEOUT_MS: '400', S3_MAX_ATTEMPTS: '2' }))
    const created = (await t.send('POST', '/products', { name: 'Borrar', price: '1' })).value.json()
    relay.freeze(true)
    const res = await timed(() => t.app.inject({ method: 'DELETE', url: `/products/${created.id}`, headers: bearer(t.admin) }), 15_000)
    expect(res.value.statusCode).toBe(200)
    expect(res.value.json()).toEqual({ message: 'Producto eliminado correctamente' })
    // Two attempts of 0.4 s and the SDK's short back-off between them.
    expect(res.ms).toBeGreaterThanOrEqual(750)
    expect(res.ms).toBeLessThan(4000)
    expect(await t.app.db.selectFrom('products').select('id').execute()).toEqual([])
    const warned = t.lines.filter((l) => l.msg === 'could not delete image from the image host')
    expect(warned).toHaveLength(1)
    // The orphan object is still there, for images:sweep to find.
    expect((await fetch(created.imageUrl)).status).toBe(200)
  })
})

describe('s3 image host: a store that is down', () => {
  it('an upload answers the upload-failure 500 at once and writes nothing', async () => {
    const port = await freePort()
    const t = await loggedApp(s3EnvAt(`http://127.0.0.1:${port}`))
    const res = await t.send('POST', '/products', { name: 'Caído', price: '1' })
    expect(res.value.statusCode).toBe(500)
    expect(res.value.json()).toEqual({ error: 'Error al subir la imagen al servicio de alojamiento' })
    expect(res.ms).toBeLessThan(2000)
    expect(await t.app.db.selectFrom('products').select('id').execute()).toEqual([])
    expect(readdirSync(t.config.uploadTmpDir)).toEqual([])
  })

  it('S3_CONNECT_TIMEOUT_MS bounds a connection that is never accepted', async () => {
    const stuck = await unacceptingPort()
    closers.push(async () => stuck.close())
    const t = await loggedApp(s3EnvAt(`http://127.0.0.1:${stuck.port}`, { S3_CONNECT_TIMEOUT_MS: '300', S3_MAX_ATTEMPTS: '1' }))
    const res = await t.send('POST', '/products', { name: 'Inalcanzable', price: '1' })
    expect(res.value.statusCode).toBe(500)
    expect(res.value.json()).toEqual({ error: 'Error al subir la imagen al servicio de alojamiento' })
    expect(res.ms).toBeGreaterThanOrEqual(250)
    expect(res.ms).toBeLessThan(3000)
    expect((uploadFailures(t.lines)[0]?.err as { message: string }).message).toMatch(
      /did not establish a connection with the server within the configured timeout of 300 ms/,
    )
    expect(await t.app.db.selectFrom('products').select('id').execute()).toEqual([])
  })
})
