import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client'
import type { Config } from '../config.js'
import type { DatabaseHandle } from '../db/connect.js'
import { rawErrorAnswer, rawErrors } from './errors.js'
import type { ResponseCache } from './catalog-cache.js'
import { RequestStats } from './request-metrics.js'

/**
 * Prometheus metrics (`GET /metrics`, text exposition format), off unless METRICS_ENABLED=true. Off, this
 * plugin adds nothing: no hook, no route (`/metrics` is a 404 like any unknown path). On, a request costs one
 * record of plain numbers (request-metrics.ts), in an onResponse hook; the product cache's answers given
 * before Fastify (catalog-cache.ts `frontDoor`) report themselves through `ResponseCache.observe`. Everything
 * else is read when Prometheus scrapes: the cache's own hit and miss counts, the database pool, Node's figures.
 *
 * With METRICS_PORT the exposition is served by a small server of its own on that port (same HOST), and not
 * by the main one: the port can then be kept off the public network.
 */

declare module 'fastify' {
  interface FastifyInstance {
    /** The separate metrics server, when METRICS_PORT is set (listening once the app is ready). */
    metricsServer?: Server
  }
}

export interface MetricsOptions {
  config: Config
  handle: DatabaseHandle
  cache: ResponseCache
}

/** Requests that matched no route share one label value: a made-up URL must not make a new series. */
const UNMATCHED = '(unmatched)'
/** Seconds; the API answers most reads in milliseconds, so the low end is finer than prom-client's default. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

async function metricsPlugin(app: FastifyInstance, options: MetricsOptions): Promise<void> {
  const { config, handle, cache } = options
  if (!config.metrics.enabled) return

  // A registry per app (not prom-client's global one): two apps in one process (tests) never share series.
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const registers = [registry]

  // Requests by method, route pattern and status: their count and a histogram of their durations.
  const requests = new RequestStats(DURATION_BUCKETS)
  requests.register(registry, {
    counter: 'http_requests_total',
    counterHelp: 'HTTP requests answered, by route pattern and status',
    histogram: 'http_request_duration_seconds',
    histogramHelp: 'Time to answer an HTTP request, by route pattern and status',
  })
  const rateLimited = new Counter({
    name: 'shop_auth_rate_limited_total',
    help: 'Register and login attempts refused with 429 by the auth rate limit',
    labelNames: ['route'] as const,
    registers,
  })
  const ordersPlaced = new Counter({
    name: 'shop_orders_placed_total',
    help: 'Orders placed (committed; a replayed Idempotency-Key is not counted)',
    registers,
  })
  const revenue = new Counter({
    name: 'shop_orders_revenue_total',
    help: 'Sum of the totals of the orders placed, in the shop currency (not reduced by cancellations)',
    labelNames: ['currency'] as const,
    registers,
  })
  const currency = config.payments.currency
  revenue.inc({ currency }, 0)

  // The cache counts its own hits and misses (plain number increments); they are copied at scrape time.
  new Counter({
    name: 'shop_catalog_cache_hits_total',
    help: 'Product reads answered from the product read cache',
    registers,
    collect() {
      this.reset()
      this.inc(cache.hits)
    },
  })
  new Counter({
    name: 'shop_catalog_cache_misses_total',
    help: 'Cacheable product reads the cache did not hold (they went to the database)',
    registers,
    collect() {
      this.reset()
      this.inc(cache.misses)
    },
  })
  // PostgreSQL's pools: the orders' and everything's, and the long reads' (the facets).
  const pools = [
    { pool: handle.pool, name: 'shop_db_pool_connections', what: 'PostgreSQL pool' },
    { pool: handle.readPool, name: 'shop_db_read_pool_connections', what: 'PostgreSQL pool of the long reads (the facets)' },
  ]
  for (const { pool, name, what } of pools) {
    if (pool === undefined) continue
    new Gauge({
      name,
      help: `${what}: connections open (total), of which idle, and queries waiting for one`,
      labelNames: ['state'] as const,
      registers,
      collect() {
        this.set({ state: 'total' }, pool.totalCount)
        this.set({ state: 'idle' }, pool.idleCount)
        this.set({ state: 'waiting' }, pool.waitingCount)
      },
    })
  }

  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const status = reply.statusCode
    const route = request.routeOptions.url ?? UNMATCHED
    requests.record(request.method, route, status, reply.elapsedTime / 1000)
    if (status === 429) rateLimited.inc({ route })
    done()
  })
  cache.observe = (route, ms) => requests.record('GET', route, 200, ms / 1000)
  app.addHook('onClose', async () => {
    cache.observe = undefined
  })

  // An order counts once its transaction has committed: POST /orders answers 201 only then (a replay is a 200).
  app.addHook('onRoute', (route) => {
    if (route.method !== 'POST' || route.url !== '/orders') return
    const count = async (_request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      if (reply.statusCode === 201) {
        ordersPlaced.inc()
        const total = (payload as { total?: unknown } | null)?.total
        if (typeof total === 'number' && Number.isFinite(total)) revenue.inc({ currency }, total)
      }
      return payload
    }
    route.preSerialization = [...(route.preSerialization === undefined ? [] : [route.preSerialization].flat()), count]
  })

  const exposition = async () => registry.metrics()

  if (config.metrics.port === null) {
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => reply.type(registry.contentType).send(await exposition()))
    return
  }

  const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, socketTimeoutMs } = config.http
  const server = createServer(
    { headersTimeout: headersTimeoutMs, requestTimeout: requestTimeoutMs, keepAliveTimeout: keepAliveTimeoutMs },
    (request, response) => {
      const path = (request.url ?? '').split('?')[0]
      if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
        const { contentType, body } = rawErrorAnswer(request.headers.accept, rawErrors.routeNotFound)
        response.writeHead(404, { 'content-type': contentType, vary: 'Accept' })
        response.end(body)
        return
      }
      exposition().then(
        (text) => {
          response.writeHead(200, { 'content-type': registry.contentType })
          response.end(request.method === 'HEAD' ? undefined : text)
        },
        (error: unknown) => {
          app.log.error({ err: error }, 'metrics: could not collect')
          const { contentType, body } = rawErrorAnswer(request.headers.accept, rawErrors.internal)
          response.writeHead(500, { 'content-type': contentType, vary: 'Accept' })
          response.end(body)
        },
      )
    },
  )
  server.setTimeout(socketTimeoutMs)
  app.decorate('metricsServer', server)
  app.addHook('onReady', async () => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(config.metrics.port ?? 0, config.host, () => {
        server.off('error', reject)
        app.log.info({ port: (server.address() as AddressInfo).port }, 'metrics: listening')
        resolve()
      })
    })
  })
  app.addHook('onClose', async () => {
    if (!server.listening) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
}

export default fp(metricsPlugin, { name: 'metrics' })
