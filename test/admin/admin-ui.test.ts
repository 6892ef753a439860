import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { ADMIN_CSP } from '../../src/plugins/admin-ui.js'
import { messages } from '../../src/shared/errors.js'
import { catalogCacheOn, openTestDatabase, testConfig } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'

const INDEX = '<!doctype html><html><head><script type="module" src="/admin/assets/index-Abc123.js"></script></head><body><div id="root"></div></body></html>'
const SCRIPT = 'console.log("dashboard")'

interface LogLine {
  level: number
  msg: string
}

/** A whole service serving the dashboard from `root`, with its log lines kept. */
async function dashboardApp(root: string) {
  const lines: LogLine[] = []
  const stream = { write: (line: string) => lines.push(JSON.parse(line) as LogLine) }
  const { handle, drop } = await openTestDatabase()
  const app = await buildApp(testConfig(), { database: handle, logger: { level: 'info', stream }, catalogCache: catalogCacheOn, adminUi: { root } })
  await app.ready()
  return {
    app,
    lines,
    close: async () => {
      await app.close()
      await drop()
    },
  }
}

const securityHeaders = {
  'content-security-policy': ADMIN_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

describe('the dashboard at /admin, built', () => {
  let dist: string
  let t: Awaited<ReturnType<typeof dashboardApp>>

  beforeAll(async () => {
    dist = mkdtempSync(join(tmpdir(), 'admin-dist-'))
    mkdirSync(join(dist, 'assets'))
    writeFileSync(join(dist, 'index.html'), INDEX)
    writeFileSync(join(dist, 'assets', 'index-Abc123.js'), SCRIPT)
    writeFileSync(join(dist, 'favicon.ico'), 'icon')
    writeFileSync(join(dist, '.env'), 'SECRET=1')
    t = await dashboardApp(dist)
  })
  afterAll(async () => {
    await t.close()
    rmSync(dist, { recursive: true, force: true })
  })

  it.each(['/admin', '/admin/', '/admin/products', '/admin/orders/12/show', '/admin/#/login'])(
    'answers index.html to %s, not cached, with the security headers',
    async (url) => {
      const res = await t.app.inject({ url })
      expect(res.statusCode).toBe(200)
      expect(res.body).toBe(INDEX)
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(res.headers['cache-control']).toBe('no-cache')
      expect(res.headers).toMatchObject(securityHeaders)
    },
  )

  it('allows scripts from its own origin only, and images from anywhere images are stored', () => {
    expect(ADMIN_CSP).toContain("script-src 'self'")
    expect(ADMIN_CSP).not.toMatch(/script-src[^;]*(unsafe|\*|https:)/)
    expect(ADMIN_CSP).toContain("img-src 'self' data: blob: https: http:")
    expect(ADMIN_CSP).toContain("frame-ancestors 'none'")
    expect(ADMIN_CSP).toContain("default-src 'self'")
  })

  it('serves a hashed asset for a year, immutable', async () => {
    const res = await t.app.inject({ url: '/admin/assets/index-Abc123.js' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe(SCRIPT)
    expect(res.headers['content-type']).toMatch(/^(application|text)\/javascript/)
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
  })

  it('serves another file of the build without the long cache', async () => {
    const res = await t.app.inject({ url: '/admin/favicon.ico' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe('icon')
    expect(res.headers['cache-control']).toBe('no-cache')
  })

  it.each(['/admin/assets/missing-Zzz999.js', '/admin/missing.css', '/admin/.env', '/admin/assets/../../package.json', '/admin/%2e%2e/%2e%2e/package.json'])(
    'answers a JSON 404 to %s',
    async (url) => {
      const res = await t.app.inject({ url })
      expect([res.statusCode, res.json()]).toEqual([404, { error: messages.routeNotFound }])
    },
  )

  it('leaves /admin/api to the API: its routes answer, and an unknown one is a JSON 404', async () => {
    const admin = await makeUser(t.app, 'admin')
    const stats = await t.app.inject({ url: '/admin/api/stats?days=2', headers: bearer(admin) })
    expect(stats.statusCode).toBe(200)
    expect(stats.json()).toMatchObject({ days: 2 })
    const anon = await t.app.inject({ url: '/admin/api/stats' })
    expect([anon.statusCode, anon.json()]).toEqual([401, { error: messages.noUser }])
    for (const url of ['/admin/api', '/admin/api/', '/admin/api/nothing', '/admin/api/nothing/here']) {
      const res = await t.app.inject({ url })
      expect([url, res.statusCode, res.json()]).toEqual([url, 404, { error: messages.routeNotFound }])
    }
  })

  it('answers HEAD like GET, and writes nothing else', async () => {
    const head = await t.app.inject({ method: 'HEAD', url: '/admin/products' })
    expect(head.statusCode).toBe(200)
    expect(head.headers['cache-control']).toBe('no-cache')
    const post = await t.app.inject({ method: 'POST', url: '/admin/products', payload: {} })
    expect([post.statusCode, post.json()]).toEqual([404, { error: messages.routeNotFound }])
  })

  it('keeps its pages out of the OpenAPI document, which has the stats endpoint', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, unknown> }
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/admin'))).toEqual(['/admin/api/stats'])
  })

  it('logs no warning when the build is there', () => {
    expect(t.lines.filter((line) => line.level === 40 && /admin/.test(line.msg))).toEqual([])
  })
})

describe('the dashboard at /admin, not built', () => {
  let dist: string
  let t: Awaited<ReturnType<typeof dashboardApp>>

  beforeAll(async () => {
    dist = mkdtempSync(join(tmpdir(), 'admin-dist-'))
    t = await dashboardApp(join(dist, 'dist'))
  })
  afterAll(async () => {
    await t.close()
    rmSync(dist, { recursive: true, force: true })
  })

  it('warns once at start', () => {
    const warnings = t.lines.filter((line) => line.level === 40 && line.msg.includes('admin dashboard is not built'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]?.msg).toContain('npm run build:admin')
  })

  it.each(['/admin', '/admin/', '/admin/products'])('answers 503 to %s, saying how to build it', async (url) => {
    const res = await t.app.inject({ url })
    expect([res.statusCode, res.json()]).toEqual([503, { error: messages.adminNotBuilt }])
    const problem = await t.app.inject({ url, headers: { accept: 'application/problem+json' } })
    expect([problem.statusCode, problem.json()]).toEqual([503, expect.objectContaining({ code: 'admin_not_built', detail: messages.adminNotBuilt })])
  })

  it('answers 404 to an asset and keeps the API', async () => {
    const asset = await t.app.inject({ url: '/admin/assets/index-Abc123.js' })
    expect([asset.statusCode, asset.json()]).toEqual([404, { error: messages.routeNotFound }])
    const admin = await makeUser(t.app, 'admin')
    const stats = await t.app.inject({ url: '/admin/api/stats', headers: bearer(admin) })
    expect(stats.statusCode).toBe(200)
  })

  it('serves a build made while the service runs, without a restart', async () => {
    mkdirSync(join(dist, 'dist'))
    writeFileSync(join(dist, 'dist', 'index.html'), INDEX)
    const res = await t.app.inject({ url: '/admin/' })
    expect([res.statusCode, res.body]).toEqual([200, INDEX])
    expect(t.lines.filter((line) => line.level === 40 && line.msg.includes('admin dashboard'))).toHaveLength(1)
  })
})
