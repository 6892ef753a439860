import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js'
import { dialect } from '../helpers/app.js'
import {
  ADMIN,
  buildInstall,
  children,
  CLIENT,
  cli,
  type Collector,
  json,
  type ReceivedSpan,
  SERVER,
  type Service,
  serviceEnv,
  startCollector,
  startService,
  startSilentCollector,
} from '../helpers/tracing.js'

/**
 * OpenTelemetry traces (src/tracing.ts), as an operator turns them on: the compiled service in a child process on
 * SQLite, with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a fake collector (test/helpers/tracing.ts).
 */
describe.runIf(dialect === 'sqlite' && process.platform !== 'win32')('OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  let install = ''
  const installEnv = (extra: Record<string, string> = {}) => serviceEnv(install, extra)

  beforeAll(async () => {
    // The compiled service, as `npm start` runs it, in a folder of its own with this checkout's packages.
    install = await buildInstall('shop-tracing-')
    // The demo catalog (products 1 to 12), so that product reads have something to read.
    await cli(install, installEnv(), 'migrate')
    await cli(install, installEnv(), 'seed')
  }, 60_000)
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL')
    if (install) rmSync(install, { recursive: true, force: true })
  })

  describe('with a collector', () => {
    let collector: Collector
    let receiver: WebhookReceiver
    let service: Service
    beforeAll(async () => {
      collector = await startCollector()
      receiver = await startWebhookReceiver()
      service = await startService(
        install,
        installEnv({
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          // Batches leave every 100 ms instead of every 5 s: the test reads them back sooner.
          OTEL_BSP_SCHEDULE_DELAY: '100',
          WEBHOOKS_ALLOW_PRIVATE: 'true',
        }),
      )
    }, 30_000)
    afterAll(async () => {
      await service?.stop()
      await receiver?.close()
      await collector?.close()
    })

    it('sends a server span per request, named after its route, with the method, the route and the status', async () => {
      // The first read goes through Fastify; the second is answered by the product cache before it.
      expect((await json(service.base, '/products/1')).status).toBe(200)
      expect((await json(service.base, '/products/1')).status).toBe(200)
      expect((await json(service.base, '/products/999999')).status).toBe(404)

      const isRead = (status: number) => (span: ReceivedSpan) =>
        span.kind === SERVER && span.attributes['http.route'] === '/products/:id' && span.attributes['http.response.status_code'] === status
      const found = await collector.waitFor(isRead(404), 'GET /products/:id 404')
      expect(found).toMatchObject({
        name: 'GET /products/:id',
        service: 'shop-api',
        parentSpanId: undefined,
        attributes: { 'http.request.method': 'GET', 'url.path': '/products/999999', 'http.route': '/products/:id', 'http.response.status_code': 404 },
      })
      for (let i = 0; i < 50 && collector.spans.filter(isRead(200)).length < 2; i++) await new Promise((done) => setTimeout(done, 50))
      const reads = collector.spans.filter(isRead(200))
      expect(reads).toHaveLength(2)
      for (const read of reads) expect(read.name).toBe('GET /products/:id')
      // Fastify's own span (@fastify/otel) is the server span's child, in the same trace, for the read it handled.
      const inside = collector.spans.filter((span) => span.traceId === found.traceId && span.kind !== SERVER)
      expect(inside.map((span) => span.attributes['http.route'])).toContain('/products/:id')
      expect(service.output()).not.toMatch(/error/i)
    })

    it("continues the caller's trace (traceparent), through Fastify and through the cache's front door", async () => {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
      const parent = '00f067aa0ba902b7'
      const headers = { traceparent: `00-${traceId}-${parent}-01` }
      // /products/3 read once first, so that the traced read is a cache hit; /categories always goes through Fastify.
      expect((await json(service.base, '/products/3')).status).toBe(200)
      expect((await fetch(`${service.base}/products/3`, { headers })).status).toBe(200)
      expect((await fetch(`${service.base}/categories`, { headers })).status).toBe(200)
      for (let i = 0; i < 50 && collector.spans.filter((span) => span.traceId === traceId && span.kind === SERVER).length < 2; i++) {
        await new Promise((done) => setTimeout(done, 50))
      }
      const servers = collector.spans.filter((span) => span.traceId === traceId && span.kind === SERVER)
      expect(servers.map((span) => [span.name, span.parentSpanId]).sort()).toEqual([
        ['GET /categories', parent],
        ['GET /products/:id', parent],
      ])
    })

    it('leaves probes out', async () => {
      expect((await json(service.base, '/ready')).status).toBe(200)
      expect((await json(service.base, '/categories')).status).toBe(200)
      await collector.waitFor((span) => span.kind === SERVER && span.attributes['http.route'] === '/categories', 'GET /categories')
      expect(collector.spans.filter((span) => span.attributes['url.path'] === '/health' || span.attributes['url.path'] === '/ready')).toEqual([])
    })

    it("traces a webhook delivery as an outgoing request (a client span) to the receiver's address", async () => {
      const login = await json(service.base, '/auth/login', { method: 'POST', body: ADMIN })
      const token = (login.body as { token: string }).token
      const created = await json(service.base, '/webhooks', { method: 'POST', token, body: { url: `${receiver.url}/hook`, events: ['product.updated'] } })
      expect(created.status).toBe(201)
      expect((await json(service.base, '/products/2', { method: 'PUT', token, body: { stock: 40 } })).status).toBe(200)
      await receiver.waitFor(1, 10_000)
      const delivery = await collector.waitFor(
        (span) => span.kind === CLIENT && span.attributes['server.port'] === receiver.port,
        `POST to the receiver's port ${receiver.port}`,
      )
      expect(delivery).toMatchObject({
        name: 'POST',
        attributes: { 'http.request.method': 'POST', 'server.address': '127.0.0.1', 'http.response.status_code': 204 },
      })
      // The update itself: a server span with its route and status.
      await collector.waitFor(
        (span) => span.kind === SERVER && span.attributes['http.route'] === '/products/:id' && span.attributes['http.request.method'] === 'PUT',
        'PUT /products/:id',
      )
    })
  })

  it('sends OTLP/protobuf by default', async () => {
    const collector = await startCollector()
    const service = await startService(install, installEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '100' }))
    try {
      expect((await json(service.base, '/products/3')).status).toBe(200)
      for (let i = 0; i < 60 && collector.contentTypes.length === 0; i++) await new Promise((done) => setTimeout(done, 50))
      expect(collector.contentTypes[0]).toBe('application/x-protobuf')
    } finally {
      await service.stop()
      await collector.close()
    }
  })

  it.each([
    ['down (nothing listens)', async () => ({ url: 'http://127.0.0.1:9', close: async () => {} })],
    ['silent (accepts, never answers)', startSilentCollector],
  ])('a collector that is %s costs requests nothing, and the service still stops within seconds', async (_what, start) => {
    const collector = await start()
    const service = await startService(install, installEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '50' }))
    try {
      const times: number[] = []
      for (let i = 0; i < 200; i++) {
        const started = performance.now()
        const response = await fetch(`${service.base}/products/${(i % 12) + 1}?i=${i}`)
        expect(response.status).toBe(200)
        await response.arrayBuffer()
        times.push(performance.now() - started)
      }
      times.sort((a, b) => a - b)
      // Exports happen in the background: no request waits for one (a generous bound on a shared machine).
      expect(times[Math.floor(times.length * 0.95)]).toBeLessThan(250)
    } finally {
      // Shutting down waits at most 2 s for the last spans.
      const took = await service.stop()
      expect(took).toBeLessThan(6_000)
      await collector.close()
    }
  })

  it('without the variable, nothing of OpenTelemetry is loaded', async () => {
    // A module loader hook that writes down every module the service loads (ES modules and what they import).
    const loaded = join(install, 'loaded.txt')
    writeFileSync(loaded, '')
    const hooks = join(install, 'record-hooks.mjs')
    writeFileSync(
      hooks,
      `import { appendFileSync } from 'node:fs'\n` +
        `export async function resolve(specifier, context, next) {\n` +
        `  const result = await next(specifier, context)\n` +
        `  appendFileSync(${JSON.stringify(loaded)}, result.url + '\\n')\n` +
        `  return result\n}\n`,
    )
    const register = join(install, 'record.mjs')
    writeFileSync(register, `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(hooks).href)})\n`)
    const service = await startService(install, installEnv(), ['--import', register])
    try {
      expect((await json(service.base, '/products/1')).status).toBe(200)
    } finally {
      await service.stop()
    }
    const urls = readFileSync(loaded, 'utf8').split('\n')
    // The hook saw the service load (Fastify, the app)…
    expect(urls.some((url) => url.includes('/node_modules/fastify/'))).toBe(true)
    expect(urls.some((url) => url.endsWith('/dist/app.js'))).toBe(true)
    // …and nothing of OpenTelemetry.
    expect(urls.filter((url) => /opentelemetry|in-the-middle|\/dist\/tracing\.js/.test(url))).toEqual([])
  })
})
