import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import S3rver from 's3rver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { connectDatabase } from '../../src/db/connect.js'
import type { Config } from '../../src/config.js'
import { createImageHost, type ImageHost } from '../../src/modules/images/image-host.js'
import { createS3Client, createS3ImageHost } from '../../src/modules/images/s3-image-host.js'
import { sweepOrphanImages } from '../../src/modules/images/image-sweep.js'
import { testConfig } from '../helpers/app.js'
import { multipart, PNG, pngPart } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { s3Env } from '../helpers/s3.js'

// images:sweep with the s3 image host against s3rver, through the function and through the CLI
// (`npm run cli -- images:sweep`), on a SQLite file that both the test's app and the CLI open.

const run = promisify(execFile)
const directory = mkdtempSync(join(tmpdir(), 'shop-s3rver-'))
const dataDir = mkdtempSync(join(tmpdir(), 'shop-sweep-'))
let server: S3rver
let env: Record<string, string>
let app: FastifyInstance
let images: ImageHost
let s3Storage: Extract<Config['storage'], { driver: 's3' }>
let admin: TestUser

beforeAll(async () => {
  server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: 'shop-images', configs: [] }] })
  const endpoint = `http://127.0.0.1:${((await server.run()) as { port: number }).port}`
  env = {
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    DATABASE_URL: `sqlite:${join(dataDir, 'shop.db')}`,
    JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-000',
    ...s3Env(endpoint),
  }
  const config = testConfig(env, dataDir)
  app = await buildApp(config, { database: connectDatabase(config.databaseUrl), logger: false })
  await app.ready()
  images = createImageHost(config)
  if (config.storage.driver !== 's3') throw new Error('s3 expected')
  s3Storage = config.storage
  admin = await makeUser(app, 'admin')
})
afterAll(async () => {
  await app?.close()
  await server?.close()
  rmSync(directory, { recursive: true, force: true })
  rmSync(dataDir, { recursive: true, force: true })
})

async function createProduct(name: string): Promise<{ id: number; imageUrl: string }> {
  const form = await multipart({ name, price: '1' }, [pngPart()])
  const res = await app.inject({ method: 'POST', url: '/products', headers: { ...form.headers, ...bearer(admin) }, payload: form.payload })
  expect(res.statusCode).toBe(201)
  return res.json()
}

/** `npm run cli -- images:sweep …`, as an operator runs it (tsx, the project's .env ignored: env given here). */
async function sweepCli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'images:sweep', ...args], {
      env: { PATH: process.env.PATH, ...env },
      timeout: 60_000,
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

const status = async (url: string) => (await fetch(url)).status

describe('images:sweep against s3rver', () => {
  it('lists the objects no product names; a young one is left for its upload to finish', async () => {
    const named = await createProduct('Con imagen')
    // An upload whose row was never written: the object is there, no product names it.
    await images.store('products/1700000000000-interrupted.png', Readable.from([PNG]), 'image/png', PNG.length)
    // Another folder of the same bucket is not the service's to sweep.
    await images.store('exports/1700000000000-report.png', Readable.from([PNG]), 'image/png', PNG.length)

    // Just written: inside the default hour of grace.
    const now = await sweepOrphanImages(app.db, images, { delete: false, graceMs: 3600_000 })
    expect(now.orphans).toEqual([])
    expect(now.recent).toBe(1)

    const later = await sweepOrphanImages(app.db, images, { delete: false, graceMs: 3600_000, now: new Date(Date.now() + 2 * 3600_000) })
    expect(later.orphans.map((o) => o.key)).toEqual(['products/1700000000000-interrupted.png'])
    expect(later.orphans[0]?.size).toBe(PNG.length)
    expect(later.referenced).toBe(1)
    expect(await status(images.publicUrl('products/1700000000000-interrupted.png'))).toBe(200)
    expect(await status(named.imageUrl)).toBe(200)
  })

  it('pages through a listing longer than one page', async () => {
    // Pages of 10 keys instead of S3's 1,000, so that 25 keys take three pages.
    const paged = createS3ImageHost(s3Storage, createS3Client(s3Storage), 10)
    const keys = Array.from({ length: 25 }, (_, i) => `products/1600000000000-page-${String(i).padStart(2, '0')}.png`)
    await Promise.all(keys.map((key) => paged.store(key, Readable.from([Buffer.from('x')]), 'image/png', 1)))
    const listed: string[] = []
    for await (const object of paged.list('products/')) listed.push(object.key)
    expect(listed.filter((key) => key.includes('-page-')).sort()).toEqual(keys)
    expect(new Set(listed).size).toBe(listed.length)
    const swept = await sweepOrphanImages(app.db, paged, { delete: true, graceMs: 0 })
    expect(swept.deleted).toEqual(expect.arrayContaining(keys))
    expect(swept.failed).toEqual([])
    const left: string[] = []
    for await (const object of paged.list('products/')) left.push(object.key)
    expect(left.filter((key) => key.includes('-page-'))).toEqual([])
  })

  it('the CLI lists by default, removes with --delete, and never touches a named image (slow: runs the CLI three times)', async () => {
    const named = await createProduct('Sigue')
    await images.store('products/1700000000001-orphan.png', Readable.from([PNG]), 'image/png', PNG.length)
    await images.store('exports/1700000000001-report.png', Readable.from([PNG]), 'image/png', PNG.length)
    const orphanUrl = images.publicUrl('products/1700000000001-orphan.png')

    // Default grace: the orphan was written a moment ago, so it is only counted.
    const cautious = await sweepCli()
    expect(cautious.code).toBe(0)
    expect(cautious.stdout).toMatch(/^0 orphan image\(s\), 0 bytes, older than 60 minute\(s\); \d+ named by a product; 1 younger orphan\(s\) left alone$/m)

    const listed = await sweepCli('--grace-minutes', '0')
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain(`products/1700000000001-orphan.png\t`)
    expect(listed.stdout).toContain('Nothing removed: run again with --delete to remove them')
    expect(await status(orphanUrl)).toBe(200)

    const removed = await sweepCli('--delete', '--grace-minutes', '0')
    expect(removed.code).toBe(0)
    expect(removed.stdout).toMatch(/^Removed (\d+) of \1$/m)
    expect(await status(orphanUrl)).toBe(404)
    expect(await status(named.imageUrl)).toBe(200)
    expect(await status(images.publicUrl('exports/1700000000001-report.png'))).toBe(200)

    expect((await sweepCli('--grace-minutes', '0')).stdout).toMatch(/^0 orphan image\(s\)/m)
  })

  it('the CLI refuses a bad option with its usage', async () => {
    const bad = await sweepCli('--grace-minutes', 'soon')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--grace-minutes must be a whole number of minutes')
    const unknown = await sweepCli('--force')
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("Unknown option '--force'")
  })
})
