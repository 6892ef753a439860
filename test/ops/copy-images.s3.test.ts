import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import S3rver from 's3rver'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { Config } from '../../src/config.js'
import { connectDatabase } from '../../src/db/connect.js'
import { copyImages, localImages, s3Images } from '../../src/ops/copy-images.js'
import { testConfig } from '../helpers/app.js'
import { multipart, PNG, pngPart } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { freePort } from '../helpers/outage.js'
import { s3Env as s3Settings } from '../helpers/s3.js'

// copy-images between the local folder and s3rver, on a SQLite file that the test's apps and the CLI all open:
// a shop that grew from local images to a bucket, its old image URLs redirected.

const run = promisify(execFile)
const directory = mkdtempSync(join(tmpdir(), 'shop-s3rver-'))
const dataDir = mkdtempSync(join(tmpdir(), 'shop-copy-images-'))
const databaseUrl = `sqlite:${join(dataDir, 'shop.db')}`
let server: S3rver
let localEnv: Record<string, string>
let s3Env: Record<string, string>
let endpoint: string
const handle = connectDatabase(databaseUrl)
const db = handle.db

/** s3rver's settings without STORAGE_DRIVER. */
function bucketOnly(endpoint: string): Record<string, string> {
  const { STORAGE_DRIVER: _driver, ...bucket } = s3Settings(endpoint)
  return bucket
}

beforeAll(async () => {
  server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: 'shop-images', configs: [] }] })
  endpoint = `http://127.0.0.1:${((await server.run()) as { port: number }).port}`
  localEnv = {
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-000',
    PUBLIC_URL: 'http://shop.test',
    // The bucket's settings, with the local image host still in use (copy-images moves the shop to the bucket).
    ...bucketOnly(endpoint),
  }
  s3Env = { ...localEnv, STORAGE_DRIVER: 's3' }
})
afterAll(async () => {
  await db.destroy()
  await server?.close()
  rmSync(directory, { recursive: true, force: true })
  rmSync(dataDir, { recursive: true, force: true })
})

async function withApp<T>(env: Record<string, string>, work: (app: Awaited<ReturnType<typeof buildApp>>, config: Config) => Promise<T>): Promise<T> {
  const config = testConfig(env, dataDir)
  const app = await buildApp(config, { database: connectDatabase(databaseUrl), logger: false })
  await app.ready()
  try {
    return await work(app, config)
  } finally {
    await app.close()
  }
}

/** The AWS SDK's notice about Node versions, printed once per process: not the command's output. */
const withoutNodeWarnings = (stderr: string) => stderr.replace(/\(node:\d+\) Warning:[\s\S]*?\(Use `node --trace-warnings[^\n]*\n/g, '')

async function cli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'copy-images', ...args], {
      env: { PATH: process.env.PATH, ...env },
      timeout: 60_000,
    })
    return { code: 0, stdout, stderr: withoutNodeWarnings(stderr) }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: withoutNodeWarnings(failed.stderr) }
  }
}

const products = async () =>
  (
    await sql<{
      id: number
      image_key: string
      image_url: string
      updated_at: string
    }>`select id, image_key, image_url, updated_at from products order by id`.execute(db)
  ).rows

const images = async () =>
  (
    await sql<{
      id: number
      product_id: number
      image_key: string
      url: string
    }>`select id, product_id, image_key, url from product_images order by id`.execute(db)
  ).rows

const s3Url = (key: string) => `${endpoint}/shop-images/${key}`

describe('copy-images', () => {
  /** The keys of the images, by id: the two products' main images, then the Mug's two more. */
  let keys: string[] = []

  it('--to s3 copies every image of every product, points them and the products at the bucket, reports a missing file, and a second run copies nothing', async () => {
    await withApp(localEnv, async (app) => {
      const admin = await makeUser(app, 'admin')
      for (const name of ['Mug', 'Tea']) {
        const form = await multipart({ name, price: '1' }, [pngPart()])
        const res = await app.inject({ method: 'POST', url: '/products', headers: { ...form.headers, ...bearer(admin) }, payload: form.payload })
        expect(res.statusCode).toBe(201)
      }
      const [mug] = await products()
      const form = await multipart({}, [pngPart('side.png', 'images'), pngPart('top.png', 'images')])
      const res = await app.inject({
        method: 'POST',
        url: `/products/${mug!.id}/images`,
        headers: { ...form.headers, ...bearer(admin) },
        payload: form.payload,
      })
      expect(res.statusCode).toBe(201)
    })
    const t = '2026-11-20T10:00:00.000Z'
    await sql`insert into products (name, description, price_cents, stock, image_key, image_url, created_at, updated_at)
      values ('Lost', '', 1, 1, 'products/1-lost.png', 'http://shop.test/uploads/products/1-lost.png', ${t}, ${t})`.execute(db)
    const before = await products()
    keys = (await images()).map((i) => i.image_key)
    expect(keys).toHaveLength(4)
    expect(before.map((p) => p.image_key)).toEqual([keys[0], keys[1], 'products/1-lost.png'])
    expect(before.map((p) => p.image_url)).toEqual([keys[0], keys[1], 'products/1-lost.png'].map((k) => `http://shop.test/uploads/${k}`))
    expect((await images()).map((i) => i.url)).toEqual(keys.map((k) => `http://shop.test/uploads/${k}`))

    const first = await cli(localEnv, '--to', 's3')
    expect(first.code).toBe(1)
    expect(first.stdout).toBe(
      `3 products, 5 images: 4 copied from the local folder (${join(dataDir, 'uploads')}) to s3://shop-images, 0 already there; 4 image URLs now point to s3://shop-images\n`,
    )
    expect(first.stderr).toBe('missing in the local folder (' + join(dataDir, 'uploads') + '): products/1-lost.png (its image keeps its URL)\n')

    const after = await products()
    expect(after.map((p) => p.image_url)).toEqual([s3Url(keys[0]!), s3Url(keys[1]!), 'http://shop.test/uploads/products/1-lost.png'])
    // Every image, not only the main ones.
    expect((await images()).map((i) => i.url)).toEqual(keys.map(s3Url))
    // Only the URL changed: the products were not edited.
    expect(after.map((p) => p.updated_at)).toEqual(before.map((p) => p.updated_at))
    for (const key of keys) {
      const res = await fetch(s3Url(key))
      expect(res.status).toBe(200)
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(dataDir, 'uploads', key)))).toBe(true)
      expect(res.headers.get('content-type')).toBe('image/png')
    }

    // Idempotent: everything is there already.
    const config = testConfig(s3Env, dataDir)
    if (config.storage.driver !== 's3') throw new Error('s3 expected')
    const again = await copyImages(db, localImages(config.storage.uploadDir, config.publicUrl), s3Images(config.storage))
    expect(again).toEqual({ products: 3, images: 5, copied: 0, skipped: 4, rewritten: 0, missing: ['products/1-lost.png'], failed: [] })
  })

  it('on S3 storage, an old local URL answers 301 to the bucket while its file is still in the folder', async () => {
    await withApp(s3Env, async (app) => {
      const [id] = (await products()).map((p) => p.id)
      const product = await app.inject({ method: 'GET', url: `/products/${id}` })
      expect(product.json()).toMatchObject({ imageUrl: s3Url(keys[0]!) })
      expect(product.json().images.map((i: { url: string }) => i.url)).toEqual([keys[0], keys[2], keys[3]].map((k) => s3Url(k!)))

      const name = keys[0]!.slice('products/'.length)
      const moved = await app.inject({ method: 'GET', url: `/uploads/products/${name}` })
      expect(moved.statusCode).toBe(301)
      expect(moved.headers.location).toBe(s3Url(keys[0]!))
      expect(moved.body).toBe('')
      expect((await fetch(s3Url(keys[0]!))).status).toBe(200)

      const never = await app.inject({ method: 'GET', url: '/uploads/products/1-lost.png' })
      expect([never.statusCode, never.json()]).toEqual([404, { error: 'Imagen no encontrada' }])
      // The folder removed: the old URL is gone too.
      rmSync(join(dataDir, 'uploads', keys[0]!))
      const gone = await app.inject({ method: 'GET', url: `/uploads/products/${name}` })
      expect([gone.statusCode, gone.json()]).toEqual([404, { error: 'Imagen no encontrada' }])
    })
  })

  it('--to local brings the images back from the bucket and points the products at the service', async () => {
    rmSync(join(dataDir, 'uploads'), { recursive: true, force: true })
    const back = await cli(s3Env, '--to', 'local')
    expect(back.code).toBe(1)
    expect(back.stdout).toBe(
      `3 products, 5 images: 4 copied from s3://shop-images to the local folder (${join(dataDir, 'uploads')}), 0 already there; 4 image URLs now point to the local folder (${join(dataDir, 'uploads')})\n`,
    )
    expect(back.stderr).toBe('missing in s3://shop-images: products/1-lost.png (its image keeps its URL)\n')
    expect((await products()).map((p) => p.image_url)).toEqual([keys[0], keys[1], 'products/1-lost.png'].map((k) => `http://shop.test/uploads/${k}`))
    expect((await images()).map((i) => i.url)).toEqual(keys.map((k) => `http://shop.test/uploads/${k}`))
    for (const key of keys) expect(readFileSync(join(dataDir, 'uploads', key)).equals(PNG)).toBe(true)
  })

  it('an image that cannot be stored is reported and its product keeps its URL; the next run copies it', async () => {
    const config = testConfig(s3Env, dataDir)
    if (config.storage.driver !== 's3') throw new Error('s3 expected')
    // A fresh bucket folder: the keys are not there yet.
    const bucket = { ...config.storage, bucket: 'shop-images-2', publicUrl: `${endpoint}/shop-images-2` }
    await fetch(`${endpoint}/shop-images-2`, { method: 'PUT' })
    const s3 = s3Images(bucket)
    const flaky = { ...s3, host: { ...s3.host, store: async () => Promise.reject(new Error('store unavailable')) } }
    const local = localImages(config.storage.uploadDir, config.publicUrl)
    const before = await products()
    const imagesBefore = await images()
    const failed = await copyImages(db, local, flaky)
    expect(failed).toEqual({
      products: 3,
      images: 5,
      copied: 0,
      skipped: 0,
      rewritten: 0,
      missing: ['products/1-lost.png'],
      failed: keys.map((key) => ({ key, error: 'store unavailable' })),
    })
    expect(await products()).toEqual(before)
    expect(await images()).toEqual(imagesBefore)
    const next = await copyImages(db, local, s3)
    expect(next).toMatchObject({ copied: 4, rewritten: 4, failed: [] })
    expect((await products()).map((p) => p.image_url).slice(0, 2)).toEqual(keys.slice(0, 2).map((key) => `${endpoint}/shop-images-2/${key}`))
    expect((await images()).map((i) => i.url)).toEqual(keys.map((key) => `${endpoint}/shop-images-2/${key}`))
    // Back to the service's folder for the tests that follow.
    await copyImages(db, s3, local)
  })

  it('a bucket that is not there changes nothing and says so in one line', async () => {
    const before = await products()
    const port = await freePort()
    const down = cli({ ...localEnv, S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_MAX_ATTEMPTS: '1' }, '--to', 's3')
    const result = await down
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toMatch(/^copy-images: cannot list the images already in the bucket \(.+\); nothing was changed\n$/)
    expect(await products()).toEqual(before)
  })

  it('refuses a bad --to, and --to s3 without a bucket, with exit code 2', async () => {
    const bad = await cli(localEnv, '--to', 'ftp')
    expect([bad.code, bad.stderr]).toEqual([2, 'copy-images: needs --to s3 or --to local\n'])
    const { S3_BUCKET: _bucket, ...noBucket } = localEnv
    const missing = await cli(noBucket, '--to', 's3')
    expect([missing.code, missing.stderr]).toEqual([2, 'copy-images: S3_BUCKET is required when STORAGE_DRIVER=s3\n'])
    expect(existsSync(join(dataDir, 'uploads', keys[0]!))).toBe(true)
  })
})
