import { mkdirSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createLocalImageHost } from '../../src/modules/images/local-image-host.js'
import { sweepOrphanImages, sweepReport } from '../../src/modules/images/image-sweep.js'
import { createTestApp, type TestApp } from '../helpers/app.js'
import { failingHost, multipart, pngPart, storedImages } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'

// images:sweep with the local image host (the s3 host against s3rver: image-sweep.s3.test.ts).

let t: TestApp
let admin: TestUser
beforeEach(async () => {
  t = await createTestApp()
  admin = await makeUser(t.app, 'admin')
})
afterEach(async () => {
  await t?.close()
})

const HOUR = 3600_000
const uploadDir = () => (t.config.storage.driver === 'local' ? t.config.storage.uploadDir : '')

/** A file in the upload folder, last modified `hoursAgo` hours ago: what an interrupted upload leaves. */
function leftover(name: string, hoursAgo: number, folder = 'products'): string {
  mkdirSync(join(uploadDir(), folder), { recursive: true })
  const path = join(uploadDir(), folder, name)
  writeFileSync(path, 'partial image')
  const when = new Date(Date.now() - hoursAgo * HOUR)
  utimesSync(path, when, when)
  return `${folder}/${name}`
}

async function createProduct(name: string) {
  const form = await multipart({ name, price: '1' }, [pngPart()])
  const res = await t.app.inject({ method: 'POST', url: '/products', headers: { ...form.headers, ...bearer(admin) }, payload: form.payload })
  expect(res.statusCode).toBe(201)
  return res.json() as { id: number; imageUrl: string }
}

const host = () => createLocalImageHost(uploadDir(), t.config.publicUrl)
const imageKeys = async () => (await t.app.db.selectFrom('products').select('image_key').execute()).map((r) => r.image_key).sort()

describe('images:sweep, local image host', () => {
  it('lists the images no product names and older than the grace period, and removes nothing', async () => {
    await createProduct('Uno')
    await createProduct('Dos')
    const old = leftover('1700000000000-crashed.png', 2)
    leftover('1700000000001-in-flight.png', 0.1)
    leftover('notes.txt', 5, 'elsewhere')
    const before = storedImages(t.config)

    const result = await sweepOrphanImages(t.app.db, host(), { delete: false, graceMs: HOUR })
    expect(result.orphans.map((o) => o.key)).toEqual([old])
    expect(result.orphans[0]?.size).toBe('partial image'.length)
    expect(result).toMatchObject({ recent: 1, referenced: 2, deleted: [], failed: [] })
    expect(storedImages(t.config)).toEqual(before)
    expect(sweepReport(result, { delete: false, graceMs: HOUR })).toEqual([
      expect.stringMatching(/^products\/1700000000000-crashed\.png\t\d{4}-\d\d-\d\dT[\d:.]+Z\t13 bytes$/),
      '1 orphan image(s), 13 bytes, older than 60 minute(s); 2 named by a product; 1 younger orphan(s) left alone',
      'Nothing removed: run again with --delete to remove them',
    ])
  })

  it('--delete removes the orphans only: every product keeps its image', async () => {
    const kept = await createProduct('Uno')
    const old = leftover('1700000000000-crashed.png', 2)
    const young = leftover('1700000000001-in-flight.png', 0.1)
    const result = await sweepOrphanImages(t.app.db, host(), { delete: true, graceMs: HOUR })
    expect(result.deleted).toEqual([old])
    expect(storedImages(t.config)).toEqual([...(await imageKeys()), young].sort())
    expect(storedImages(t.config)).not.toContain(old)
    expect((await t.app.inject({ url: new URL(kept.imageUrl).pathname })).statusCode).toBe(200)
  })

  it('every image of a product is named, not only its main one', async () => {
    const product = await createProduct('Uno')
    const form = await multipart({}, [pngPart('a.png', 'images'), pngPart('b.png', 'images')])
    const added = await t.app.inject({
      method: 'POST',
      url: `/products/${product.id}/images`,
      headers: { ...form.headers, ...bearer(admin) },
      payload: form.payload,
    })
    expect(added.statusCode).toBe(201)
    const old = leftover('1700000000000-crashed.png', 2)
    // Every stored image made to look old: only the leftover is an orphan.
    for (const key of storedImages(t.config)) utimesSync(join(uploadDir(), key), new Date(Date.now() - 2 * HOUR), new Date(Date.now() - 2 * HOUR))
    const result = await sweepOrphanImages(t.app.db, host(), { delete: true, graceMs: HOUR })
    expect(result).toMatchObject({ referenced: 3, recent: 0, deleted: [old], failed: [] })
    expect(storedImages(t.config)).toHaveLength(3)
  })

  it('finds the image a product delete could not remove while the host was down', async () => {
    const flaky = failingHost(host())
    const app = await createTestApp({}, { imageHost: flaky })
    try {
      const user = await makeUser(app.app, 'admin')
      const form = await multipart({ name: 'Huérfano', price: '1' }, [pngPart()])
      const created = (await app.app.inject({ method: 'POST', url: '/products', headers: { ...form.headers, ...bearer(user) }, payload: form.payload })).json()
      flaky.failDelete = true
      expect((await app.app.inject({ method: 'DELETE', url: `/products/${created.id}`, headers: bearer(user) })).statusCode).toBe(200)
      const orphan = flaky.deleted[0] as string
      // The host is back; an hour later the sweep finds the image and removes it.
      flaky.failDelete = false
      const later = new Date(Date.now() + 2 * HOUR)
      const listed = await sweepOrphanImages(app.app.db, flaky, { delete: false, graceMs: HOUR, now: later })
      expect(listed.orphans.map((o) => o.key)).toEqual([orphan])
      const swept = await sweepOrphanImages(app.app.db, flaky, { delete: true, graceMs: HOUR, now: later })
      expect(swept.deleted).toEqual([orphan])
      expect((await sweepOrphanImages(app.app.db, flaky, { delete: false, graceMs: 0, now: later })).orphans).toEqual([])
    } finally {
      await app.close()
    }
  })

  it('reports each removal that fails, and keeps going', async () => {
    const a = leftover('1700000000000-a.png', 2)
    const b = leftover('1700000000001-b.png', 2)
    const flaky = failingHost(host())
    flaky.failDelete = true
    const result = await sweepOrphanImages(t.app.db, flaky, { delete: true, graceMs: HOUR })
    expect(result.deleted).toEqual([])
    expect(result.failed.map((f) => f.key).sort()).toEqual([a, b])
    expect(storedImages(t.config)).toEqual([a, b])
  })

  it('an empty or missing upload folder is nothing to sweep', async () => {
    const result = await sweepOrphanImages(t.app.db, host(), { delete: true, graceMs: 0 })
    expect(result).toEqual({ orphans: [], recent: 0, referenced: 0, deleted: [], failed: [] })
  })
})
