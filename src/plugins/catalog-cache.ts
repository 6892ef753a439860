import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/**
 * The public product reads (GET /products and GET /products/:id) answered from memory: the
 * response bytes and headers, keyed by URL.
 *
 * Correctness first:
 * - Every write that can change what they show (any non-GET request on /products, /categories or
 *   /orders: stock moves with orders) empties the cache before its response is sent, so the
 *   instance that made a write shows it on the very next read.
 * - A read that was already under way when the cache was emptied does not store its answer
 *   (a generation number tells).
 * - Other instances hear of it through the change feed (change-feed.ts: PostgreSQL LISTEN/NOTIFY,
 *   SQLite data_version); while the feed cannot hear them, the cache is bypassed.
 * - Writes that bypass the service entirely (psql, scripts) are seen when an entry expires
 *   (PostgreSQL; on SQLite, data_version sees them too).
 *
 * Speed: a hit is answered by `frontDoor`, in the HTTP server's request listener, before Fastify
 * builds its request and reply (see there); inside Fastify (`app.inject`, CORS requests) the
 * onRequest hook below answers it.
 */

/**
 * Entries older than this are read again: the bound for writes that no instance tells about.
 * PostgreSQL: writes made outside the service (psql, scripts) send no NOTIFY, so 5 s. SQLite:
 * `data_version` moves with every commit of any other connection, the sqlite3 shell's included, so
 * the lifetime is only a safety net there: 60 s (fewer needless re-reads).
 */
const ENTRY_LIFETIME_MS = { postgres: 5_000, sqlite: 60_000 } as const
/**
 * Each entry lives a random 50–100 % of that: entries filled together (a cold cache, or right after
 * a write emptied it) then do not all expire in the same millisecond and send a burst of misses to
 * the database at once (1,000 product pages at ~0.1 ms a miss would hold every reader for ~0.1 s).
 */
function lifetime(dialect: keyof typeof ENTRY_LIFETIME_MS): number {
  return ENTRY_LIFETIME_MS[dialect] * (0.5 + Math.random() / 2)
}
const MAX_BYTES = 64 * 1024 * 1024
const CACHED_ROUTES = new Set(['/products', '/products/:id'])
const URL_PREFIX = '/products'
const WRITE_PREFIXES = ['/products', '/categories', '/orders']
/**
 * Headers that belong to one request, not to the answer: the request id, the length (Fastify
 * sets it), and CORS headers (set per request, by the caller's Origin, before this hook runs).
 */
function isPerRequestHeader(name: string): boolean {
  return name === 'x-request-id' || name === 'content-length' || name === 'vary' || name.startsWith('access-control-')
}

interface Entry {
  /** Bytes, not a string: a hit then costs no UTF-8 encoding and no length scan. */
  payload: Buffer
  headers: [string, string][]
  /** The same headers plus the length, flat (name, value, name, value …), as `writeHead` takes them. */
  rawHeaders: string[]
  /** When the entry is to be read again (see `lifetime`). */
  expiresAt: number
  bytes: number
}

export interface CatalogCacheOptions {
  /** Filled and emptied by the plugin; shared with `frontDoor`. */
  cache: ResponseCache
  /** Off in tests that want every read to reach the database. */
  enabled?: boolean
}

/** What the rest of the service (and the tests) see of the cache. */
export interface CatalogCache {
  /** Empties the cache here and, on PostgreSQL, on every other instance. */
  invalidate(): void
  /** Resolves the next time this instance's cache is emptied, whatever the cause. */
  nextClear(): Promise<void>
  /** Reads the cache has answered so far: all of them, and those answered before Fastify. */
  hits(): { total: number; beforeFastify: number }
}

declare module 'fastify' {
  interface FastifyInstance {
    catalogCache: CatalogCache
  }
  interface FastifyRequest {
    /** The cache generation when this read missed the cache; undefined when it is not cacheable. */
    catalogCacheGeneration?: number
  }
}

export class ResponseCache {
  /**
   * `cors`: CORS is configured. Requests with an Origin then go through Fastify (its CORS plugin
   * answers them), and answers from `frontDoor` carry `Vary: Origin` as the plugin's do.
   */
  constructor(readonly cors = false) {}

  private entries = new Map<string, Entry>()
  private bytes = 0
  /** Bumped by every invalidation; a fill started in an older generation is dropped. */
  generation = 0
  /** Whether entries may be used now (set by the plugin: enabled, other instances heard, not closing). */
  usable: () => boolean = () => false
  /** Answers given from the cache, by `frontDoor` and by the hook (for the tests and operators). */
  hits = 0
  /** Of which by `frontDoor`. */
  frontHits = 0

  get(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key)
    if (entry && now > entry.expiresAt) {
      this.remove(key, entry)
      return undefined
    }
    return entry
  }

  set(key: string, entry: Entry): void {
    const previous = this.entries.get(key)
    if (previous) this.remove(key, previous)
    this.entries.set(key, entry)
    this.bytes += entry.bytes
    // Oldest first (a Map iterates in insertion order).
    for (const [oldKey, old] of this.entries) {
      if (this.bytes <= MAX_BYTES) break
      this.remove(oldKey, old)
    }
  }

  clear(): void {
    this.generation += 1
    this.entries.clear()
    this.bytes = 0
    const waiting = this.clearWaiters
    this.clearWaiters = []
    for (const resolve of waiting) resolve()
  }

  private clearWaiters: (() => void)[] = []

  nextClear(): Promise<void> {
    return new Promise((resolve) => this.clearWaiters.push(resolve))
  }

  private remove(key: string, entry: Entry): void {
    this.entries.delete(key)
    this.bytes -= entry.bytes
  }
}

function isWrite(request: FastifyRequest): boolean {
  if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') return false
  const url = request.routeOptions.url
  return url !== undefined && WRITE_PREFIXES.some((prefix) => url.startsWith(prefix))
}

async function catalogCachePlugin(app: FastifyInstance, options: CatalogCacheOptions): Promise<void> {
  const { cache } = options
  const enabled = options.enabled ?? true
  const feed = app.changeFeed
  let closing = false
  // Usable only while other instances' writes are heard (see change-feed.ts), and not while closing
  // (Fastify then answers new requests 503).
  const usable = () => enabled && feed.live && !closing
  cache.usable = usable
  feed.subscribe('catalog', () => cache.clear())
  app.addHook('preClose', async () => {
    closing = true
  })

  app.decorateRequest('catalogCacheGeneration', undefined)
  app.decorate('catalogCache', {
    invalidate: () => feed.publish('catalog'),
    nextClear: () => cache.nextClear(),
    hits: () => ({ total: cache.hits, beforeFastify: cache.frontHits }),
  } satisfies CatalogCache)

  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (request.method !== 'GET' || !usable() || !request.url.startsWith(URL_PREFIX)) return done()
    // Only 200s of the cached routes are ever stored, under their exact URL: a hit needs no routing
    // check (request.routeOptions builds a new object on every access).
    const entry = cache.get(request.url, Date.now())
    if (entry !== undefined) {
      cache.hits += 1
      for (const [name, value] of entry.headers) reply.header(name, value)
      reply.send(entry.payload)
      return
    }
    if (CACHED_ROUTES.has(request.routeOptions.url ?? '')) request.catalogCacheGeneration = cache.generation
    done()
  })

  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    const generation = request.catalogCacheGeneration
    if (generation !== undefined) {
      if (reply.statusCode === 200 && typeof payload === 'string' && generation === cache.generation && usable()) {
        const headers: [string, string][] = []
        for (const [name, value] of Object.entries(reply.getHeaders())) {
          if (value !== undefined && !isPerRequestHeader(name)) headers.push([name, String(value)])
        }
        const bytes = Buffer.from(payload)
        const rawHeaders = headers.flat()
        rawHeaders.push('content-length', String(bytes.length))
        if (cache.cors) rawHeaders.push('vary', 'Origin')
        cache.set(request.url, { payload: bytes, headers, rawHeaders, expiresAt: Date.now() + lifetime(app.dialect), bytes: bytes.length + 200 })
      }
    } else if (isWrite(request)) {
      app.catalogCache.invalidate()
    }
    done(null, payload)
  })
}

export interface FrontDoorOptions {
  /** Fastify's own request listener: everything that is not a hit goes there. */
  fastify: (request: IncomingMessage, response: ServerResponse) => void
  genReqId: (request: IncomingMessage) => string
  /** The service's logger, once the app exists. */
  log: () => (FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean }) | undefined
}

/**
 * The HTTP server's request listener: a GET whose exact URL is in the cache is answered here with
 * the stored status, headers and bytes plus its own `X-Request-Id`, without Fastify's per-request
 * work (request and reply objects, child logger, hooks), which costs more than the answer itself.
 * Everything else (misses, HEAD, CORS requests with an Origin, a cache not usable) goes to Fastify
 * unchanged. At `info` a hit is logged as one "request completed" line.
 */
export function frontDoor(cache: ResponseCache, options: FrontDoorOptions) {
  const { fastify, genReqId, log } = options
  const { cors } = cache
  return (request: IncomingMessage, response: ServerResponse): void => {
    const url = request.url
    if (request.method !== 'GET' || url === undefined || !url.startsWith(URL_PREFIX) || (cors && request.headers.origin !== undefined) || !cache.usable()) {
      return fastify(request, response)
    }
    const started = performance.now()
    const entry = cache.get(url, Date.now())
    if (entry === undefined) return fastify(request, response)
    cache.hits += 1
    cache.frontHits += 1
    const id = genReqId(request)
    // One header list handed to writeHead: no per-header bookkeeping on the response.
    const headers = entry.rawHeaders.slice()
    headers.push('x-request-id', id)
    response.writeHead(200, headers)
    response.end(entry.payload)
    const logger = log()
    if (logger?.isLevelEnabled?.('info')) {
      logger.info(
        { reqId: id, req: { method: 'GET', url, host: request.headers.host, remoteAddress: request.socket.remoteAddress }, res: { statusCode: 200 }, responseTime: performance.now() - started, cache: 'hit' },
        'request completed',
      )
    }
  }
}

export default fp(catalogCachePlugin, { name: 'catalog-cache', dependencies: ['change-feed'] })
