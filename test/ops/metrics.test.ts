import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { messages } from '../../src/shared/errors.js'
import { createTestApp, dialect, testConfig, type TestApp, buildTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, FACTORY_PASSWORD, makeUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'

// A test app of its own for each test: the counters start at zero.
const open: TestApp[] = []
afterEach(async () => {
  for (const t of open.splice(0)) await t.close()
})

/** A started test app with the product cache on (whatever the project), so that hits and misses happen. */
async function appWith(env: Record<string, string>): Promise<TestApp> {
  const t = await buildTestApp(env, { catalogCache: true })
  open.push(t)
  await t.app.ready()
  return t
}

interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/**
 * Parses the Prometheus text exposition format (version 0.0.4) strictly: every line is a comment, a HELP or
 * TYPE line, or a sample `name{label="value",…} number`; every sample's family has HELP and TYPE.
 */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = []
  const typed = new Map<string, string>()
  const helped = new Set<string>()
  for (const line of text.split('\n')) {
    if (line === '') continue
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (meta) {
      if (meta[1] === 'TYPE') {
        expect(['counter', 'gauge', 'histogram', 'summary', 'untyped'], line).toContain(meta[3])
        typed.set(meta[2] as string, meta[3] as string)
      } else helped.add(meta[2] as string)
      continue
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\})? (-?[0-9.e+-]+|[Nn]a[Nn]|\+Inf|-Inf)( \d+)?$/.exec(
      line,
    )
    expect(sample, `not a sample line: ${line}`).not.toBeNull()
    const labels: Record<string, string> = {}
    for (const m of (sample?.[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[m[1] as string] = m[2] as string
    const name = sample?.[1] as string
    const family = [...typed.keys()].find((f) => name === f || (/_(bucket|sum|count|total|created)$/.test(name) && name.startsWith(`${f}_`))) ?? name
    expect(typed.has(family), `no TYPE for ${name}`).toBe(true)
    expect(helped.has(family), `no HELP for ${name}`).toBe(true)
    samples.push({ name, labels, value: Number(sample?.[3]) })
  }
  return samples
}

/** The value of the one sample with that name and those labels (0 when there is none). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  expect(found.length, `${name} ${JSON.stringify(labels)}`).toBeLessThanOrEqual(1)
  return found[0]?.value ?? 0
}

async function scrape(t: TestApp): Promise<Sample[]> {
  const res = await t.app.inject({ url: '/metrics' })
  expect(res.statusCode).toBe(200)
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/)
  return parseExposition(res.body)
}

describe('GET /metrics, off (the default)', () => {
  it('is a 404 like any unknown path, and adds no metric hook', async () => {
    const t = await createTestApp()
    open.push(t)
    expect(t.config.metrics).toEqual({ enabled: false, port: null })
    const res = await t.app.inject({ url: '/metrics' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: messages.routeNotFound })
    expect(t.app.metricsServer).toBeUndefined()
    expect(t.app.printRoutes()).not.toContain('metrics')
  })
})

describe('GET /metrics, METRICS_ENABLED=true', () => {
  it('answers the exposition format with Node figures, not in the OpenAPI document', async () => {
    const t = await appWith({ METRICS_ENABLED: 'true' })
    const samples = await scrape(t)
    expect(valueOf(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0)
    expect(samples.some((s) => s.name === 'nodejs_heap_size_used_bytes')).toBe(true)
    expect(valueOf(samples, 'shop_orders_placed_total')).toBe(0)
    expect(valueOf(samples, 'shop_orders_revenue_total', { currency: 'EUR' })).toBe(0)
    const doc = (await t.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, unknown> }
    expect(Object.keys(doc.paths)).not.toContain('/metrics')
  })

  it('counts requests by route pattern and status, never by raw URL', async () => {
    const t = await appWith({ METRICS_ENABLED: 'true' })
    const product = await makeProduct(t.app)
    expect((await t.app.inject({ url: `/products/${product.id}?junk=1` })).statusCode).toBe(200)
    expect((await t.app.inject({ url: '/products/999999' })).statusCode).toBe(404)
    expect((await t.app.inject({ url: '/no/such/path/12345' })).statusCode).toBe(404)
    expect((await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'x' } })).statusCode).toBe(422)
    const samples = await scrape(t)
    const item = { method: 'GET', route: '/products/:id' }
    expect(valueOf(samples, 'http_requests_total', { ...item, status_code: '200' })).toBe(1)
    expect(valueOf(samples, 'http_requests_total', { ...item, status_code: '404' })).toBe(1)
    expect(valueOf(samples, 'http_requests_total', { method: 'GET', route: '(unmatched)', status_code: '404' })).toBe(1)
    expect(valueOf(samples, 'http_requests_total', { method: 'POST', route: '/auth/login', status_code: '422' })).toBe(1)
    expect(valueOf(samples, 'http_request_duration_seconds_count', { ...item, status_code: '200' })).toBe(1)
    expect(valueOf(samples, 'http_request_duration_seconds_bucket', { ...item, status_code: '200', le: '+Inf' })).toBe(1)
    expect(valueOf(samples, 'http_request_duration_seconds_sum', { ...item, status_code: '200' })).toBeGreaterThan(0)
    // No route label is a raw URL: only the patterns of the requests above.
    const routes = new Set(samples.filter((s) => s.name === 'http_requests_total').map((s) => s.labels.route))
    expect([...routes].sort()).toEqual(['(unmatched)', '/auth/login', '/products/:id'])
  })

  it('counts product cache hits and misses, inside Fastify and before it (frontDoor)', async () => {
    const t = await appWith({ METRICS_ENABLED: 'true' })
    const product = await makeProduct(t.app, { name: 'Lamp' })
    const url = `/products/${product.id}`
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (t.app.server.address() as AddressInfo).port
    // A miss (read from the database, stored), a hit inside Fastify (inject), a hit before Fastify (a real
    // socket). The cache may be emptied in between by something outside the test (on PostgreSQL, the change
    // feed's listener reconnecting under load empties it): then the three reads are made again.
    let reads = 0
    let rounds = 0
    let hits = t.app.catalogCache.hits()
    await vi.waitFor(
      async () => {
        rounds += 1
        const before = t.app.catalogCache.hits()
        expect((await t.app.inject({ url })).statusCode).toBe(200)
        expect((await t.app.inject({ url })).statusCode).toBe(200)
        const res = await fetch(`http://127.0.0.1:${port}${url}`, { signal: AbortSignal.timeout(5000) })
        expect(res.status).toBe(200)
        expect(((await res.json()) as { name: string }).name).toBe('Lamp')
        reads += 3
        hits = t.app.catalogCache.hits()
        expect({ hits: hits.total - before.total, beforeFastify: hits.beforeFastify - before.beforeFastify }).toEqual({ hits: 2, beforeFastify: 1 })
      },
      { timeout: 4000, interval: 20 },
    )

    const samples = await scrape(t)
    expect(valueOf(samples, 'shop_catalog_cache_hits_total')).toBe(hits.total)
    const misses = valueOf(samples, 'shop_catalog_cache_misses_total')
    if (rounds === 1) {
      expect(hits).toEqual({ total: 2, beforeFastify: 1 })
      expect(misses).toBe(1)
    } else {
      expect(misses).toBeGreaterThanOrEqual(1)
      expect(hits.total + misses).toBeLessThanOrEqual(reads)
    }
    // Every read is a request of the route, those answered before Fastify included.
    expect(valueOf(samples, 'http_requests_total', { method: 'GET', route: '/products/:id', status_code: '200' })).toBe(reads)
    expect(valueOf(samples, 'http_request_duration_seconds_count', { method: 'GET', route: '/products/:id', status_code: '200' })).toBe(reads)
  })

  it('counts an order placed and its revenue once the order is committed; a replayed key adds nothing', async () => {
    const t = await appWith({ METRICS_ENABLED: 'true' })
    const customer = await makeUser(t.app)
    const product = await makeProduct(t.app, { priceCents: 1250, stock: 10 })
    await fillCart(t.app, customer.id, [{ productId: product.id, quantity: 3 }])
    const placed = await t.app.inject({ method: 'POST', url: '/orders', headers: { ...bearer(customer), 'idempotency-key': 'metrics-1' } })
    expect(placed.statusCode).toBe(201)
    expect(placed.json()).toMatchObject({ total: 37.5, status: 'pending' })
    const again = await t.app.inject({ method: 'POST', url: '/orders', headers: { ...bearer(customer), 'idempotency-key': 'metrics-1' } })
    expect(again.statusCode).toBe(200)
    // An order refused (empty cart) is not counted.
    expect((await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(customer) })).statusCode).toBe(400)

    const samples = await scrape(t)
    expect(valueOf(samples, 'shop_orders_placed_total')).toBe(1)
    expect(valueOf(samples, 'shop_orders_revenue_total', { currency: 'EUR' })).toBeCloseTo(37.5, 6)
    const rows = await t.app.db.selectFrom('orders').select(['id']).execute()
    expect(rows).toHaveLength(1)
  })

  it('counts the auth rate limit refusals (429) by route', async () => {
    const t = await appWith({ METRICS_ENABLED: 'true', AUTH_RATE_LIMIT_MAX: '2' })
    const user = await makeUser(t.app)
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      const res = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: FACTORY_PASSWORD } })
      statuses.push(res.statusCode)
      if (res.statusCode === 429) expect(res.json()).toEqual({ error: messages.tooManyAttempts })
    }
    expect(statuses).toEqual([200, 200, 429, 429])
    const samples = await scrape(t)
    expect(valueOf(samples, 'shop_auth_rate_limited_total', { route: '/auth/login' })).toBe(2)
    expect(valueOf(samples, 'http_requests_total', { method: 'POST', route: '/auth/login', status_code: '429' })).toBe(2)
    expect(valueOf(samples, 'http_requests_total', { method: 'POST', route: '/auth/login', status_code: '200' })).toBe(2)
  })

  it('reports the PostgreSQL pools (total, idle, waiting), the long reads’ apart; SQLite has no pool and no such metric', async () => {
    const t = await appWith({ METRICS_ENABLED: 'true' })
    await t.app.inject({ url: '/ready' })
    const samples = await scrape(t)
    const pool = samples.filter((s) => s.name === 'shop_db_pool_connections')
    const readPool = samples.filter((s) => s.name === 'shop_db_read_pool_connections')
    if (dialect === 'sqlite') {
      expect(pool).toEqual([])
      expect(readPool).toEqual([])
      return
    }
    expect(pool.map((s) => s.labels.state).sort()).toEqual(['idle', 'total', 'waiting'])
    expect(valueOf(samples, 'shop_db_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1)
    expect(valueOf(samples, 'shop_db_pool_connections', { state: 'waiting' })).toBe(0)
    // The long reads' pool: opened by the first facets request.
    expect(valueOf(samples, 'shop_db_read_pool_connections', { state: 'total' })).toBe(0)
    expect((await t.app.inject({ url: '/products/facets' })).statusCode).toBe(200)
    const after = await scrape(t)
    expect(valueOf(after, 'shop_db_read_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1)
    expect(valueOf(after, 'shop_db_read_pool_connections', { state: 'waiting' })).toBe(0)
  })
})

describe('METRICS_PORT: a server of its own', () => {
  it('serves /metrics there only; the main port answers 404', async () => {
    const t = await appWith({ METRICS_ENABLED: 'true', METRICS_PORT: '0' })
    const server = t.app.metricsServer
    expect(server?.listening).toBe(true)
    const port = (server?.address() as AddressInfo).port
    expect((await t.app.inject({ url: '/products' })).statusCode).toBe(200)

    const main = await t.app.inject({ url: '/metrics' })
    expect(main.statusCode).toBe(404)
    expect(main.json()).toEqual({ error: messages.routeNotFound })

    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    const samples = parseExposition(await res.text())
    expect(valueOf(samples, 'http_requests_total', { method: 'GET', route: '/products', status_code: '200' })).toBe(1)
    // The scrape on the main port was an unmatched 404 there, counted as such.
    expect(valueOf(samples, 'http_requests_total', { method: 'GET', route: '(unmatched)', status_code: '404' })).toBe(1)

    const other = await fetch(`http://127.0.0.1:${port}/products`, { signal: AbortSignal.timeout(5000) })
    expect(other.status).toBe(404)
    expect(await other.json()).toEqual({ error: messages.routeNotFound })
    const problem = await fetch(`http://127.0.0.1:${port}/products`, { headers: { accept: 'application/problem+json' }, signal: AbortSignal.timeout(5000) })
    expect([problem.status, problem.headers.get('content-type')]).toEqual([404, 'application/problem+json; charset=utf-8'])
    expect(await problem.json()).toMatchObject({ status: 404, code: 'route_not_found', detail: messages.routeNotFound })

    open.splice(open.indexOf(t), 1)
    await t.close()
    expect(server?.listening).toBe(false)
  })

  it('a METRICS_PORT already taken stops the start-up, with the reason', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as AddressInfo).port
    const t = await buildTestApp({ METRICS_ENABLED: 'true', METRICS_PORT: String(port), HOST: '127.0.0.1' })
    try {
      await expect(t.app.ready()).rejects.toMatchObject({ code: 'EADDRINUSE' })
    } finally {
      // Closing an app whose start failed may fail too; the database and the folder go all the same.
      await t.close().catch(() => {})
      await new Promise((resolve) => taken.close(resolve))
    }
  })

  it('refuses a METRICS_PORT that is the main port, or not a port', () => {
    expect(() => testConfig({ METRICS_ENABLED: 'true', PORT: '3000', METRICS_PORT: '3000' })).toThrow('METRICS_PORT must differ from PORT (both 3000)')
    expect(() => testConfig({ METRICS_PORT: 'x' })).toThrow('METRICS_PORT must be an integer between 0 and 65535 (got "x")')
    expect(() => testConfig({ METRICS_ENABLED: 'yes' })).toThrow('METRICS_ENABLED must be true or false (got "yes")')
  })
})
