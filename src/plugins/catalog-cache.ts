import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/**
 * The public product reads (GET /products and GET /products/:id) answered from memory: the
 * response bytes and headers.
 *
 * Keys: a cacheable route names the URL of its answer from its validated params and query
 * (`config.catalogCacheKey`): one URL per distinct answer, whatever the order of the parameters,
 * their spelling (`limit=010`) or unknown ones (`&junk=…`, dropped by validation). A request's own
 * URL is remembered beside that key (so that the next identical request is answered before
 * Fastify, by `frontDoor`) only when every parameter in it is one the route knows: a flood of
 * made-up parameters then costs no memory at all. Every byte an entry holds is counted against
 * `CATALOG_CACHE_MAX_BYTES`: the body, each header, each key, and the objects around them.
 *
 * Correctness first:
 * - Every write that can change what they show empties the cache before its response is sent
 *   (routes declare it, see invalidation.ts), so the instance that made a write shows it on the
 *   very next read.
 * - A read that was already under way when the cache was emptied does not store its answer
 *   (a generation number tells).
 * - Other instances hear of it through the change feed (change-feed.ts: PostgreSQL LISTEN/NOTIFY,
 *   SQLite data_version); while the feed cannot hear them, the cache is bypassed.
 * - Writes that bypass the service entirely (psql, scripts) are heard the same way: PostgreSQL
 *   triggers on the catalog's tables send the NOTIFY; on SQLite, data_version sees them.
 *
 * Speed: a hit is answered by `frontDoor`, in the HTTP server's request listener, before Fastify
 * builds its request and reply, with one Map lookup of the request's URL (see there); inside
 * Fastify (`app.inject`, CORS requests) the route's onRequest hook answers it, and a URL seen for
 * the first time is answered after validation from its key's entry, without the database.
 */

/**
 * Entries older than this are read again: a safety net for a change no instance was told of (a process that died
 * between its commit and its NOTIFY). Writes made outside the service are heard as the service's own: on PostgreSQL
 * the catalog's tables have triggers that NOTIFY (migration 2026-12-08T0000-catalog-outside-writes); on SQLite
 * `data_version` moves with every commit of any other connection, the sqlite3 shell's included. Until that migration,
 * PostgreSQL's entries lived 5 s, and the misses it made cost more than the reads they answered (at 1,000 product
 * pages, ~270 misses a second: 0.42x of the bare server; 0.93x at 60 s).
 */
const ENTRY_LIFETIME_MS = 60_000
/**
 * Each entry lives a random 50–100 % of that: entries filled together (a cold cache, or right after
 * a write emptied it) then do not all expire in the same millisecond and send a burst of misses to
 * the database at once (1,000 product pages at ~0.1 ms a miss would hold every reader for ~0.1 s).
 */
function lifetime(): number {
  return ENTRY_LIFETIME_MS * (0.5 + Math.random() / 2)
}
/** Every cacheable route lives under this path: `frontDoor` looks nothing else up. */
const URL_PREFIX = '/products'

/**
 * What V8 and Node spend besides the characters and the body's bytes (64-bit Node 20, measured by
 * test/catalog/cache-memory.sqlite.test.ts, then rounded up): a string's header; a key's slot in the
 * Map (an ordered hash table at most half full after it grows) and in the entry's key list, plus the
 * copy V8 makes of a URL that reached it in pieces; the entry with its arrays, the Buffer and its own
 * ArrayBuffer (allocated outside the 8 KiB pool: a pooled slice would keep a whole slab alive,
 * uncounted).
 */
const STRING_OVERHEAD = 32
const KEY_OVERHEAD = 256
const ENTRY_OVERHEAD = 512
const LATIN1 = /^[\u0000-\u00ff]*$/

/** Heap bytes of a string: V8 stores Latin-1 text one byte a character, anything else two. */
function stringBytes(text: string): number {
  return STRING_OVERHEAD + (LATIN1.test(text) ? text.length : 2 * text.length)
}

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
  /**
   * The answer's headers, flat (name, value, name, value …) as `writeHead` takes them: first the
   * stored ones (`ownHeaders` strings, what the hook inside Fastify sets), then the length and,
   * under CORS, `Vary: Origin`.
   */
  rawHeaders: string[]
  ownHeaders: number
  /** When the entry is to be read again (see `lifetime`). */
  expiresAt: number
  /** Every byte the entry holds, its keys included. */
  bytes: number
  /** The key the route named first, then the request URLs remembered as meaning the same. */
  keys: string[]
  /** The route pattern that filled it (`/products/:id`), for the metrics of answers given by `frontDoor`. */
  route: string
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
  /** What the cache holds now: answers, keys (URLs) leading to them, and the bytes counted. */
  usage(): { entries: number; keys: number; bytes: number }
}

declare module 'fastify' {
  interface FastifyInstance {
    catalogCache: CatalogCache
  }
  interface FastifyContextConfig {
    /**
     * Makes a GET route's 200 answers cacheable. Returns the URL of the answer from the validated
     * params and query, the same for every request that gets the same answer; requested as it is,
     * that URL must get that answer again (it is looked up as a request URL too). Undefined: this request's
     * answer is not cached, nor its URL remembered (an admin's `?status=`).
     */
    catalogCacheKey?: (request: FastifyRequest) => string | undefined
  }
  interface FastifyRequest {
    /** The cache generation when this read missed the cache; undefined when it is not cacheable. */
    catalogCacheGeneration?: number
    /** This read's key, once validated, when it missed the cache. */
    catalogCacheKey?: string
    /** The request's URL, when it is worth remembering beside the key (known parameters only). */
    catalogCacheUrl?: string
  }
}

export class ResponseCache {
  /**
   * `maxBytes`: the budget, every byte of every entry counted. `cors`: CORS is configured. Requests
   * with an Origin then go through Fastify (its CORS plugin answers them), and answers from
   * `frontDoor` carry `Vary: Origin` as the plugin's do.
   */
  constructor(
    readonly maxBytes: number,
    readonly cors = false,
  ) {}

  /** Every key (the route's and the remembered URLs) to its entry, oldest first. */
  private keys = new Map<string, Entry>()
  private entryCount = 0
  bytes = 0
  /** Bumped by every invalidation; a fill started in an older generation is dropped. */
  generation = 0
  /** Whether entries may be used now (set by the plugin: enabled, other instances heard, not closing). */
  usable: () => boolean = () => false
  /** Answers given from the cache, by `frontDoor` and by the hooks (for the tests and operators). */
  hits = 0
  /** Of which by `frontDoor`. */
  frontHits = 0
  /** Cacheable reads the cache could have answered but did not hold: they went to the database. */
  misses = 0
  /**
   * Set by the metrics plugin when metrics are on: told of each answer `frontDoor` gives (the route and
   * milliseconds), which Fastify's hooks never see. Undefined otherwise: a hit then pays nothing for it.
   */
  observe: ((route: string, ms: number) => void) | undefined = undefined
  /** Set when traces are on (src/tracing.ts): the server span of an answer `frontDoor` gives. */
  traceHit: ((request: IncomingMessage, route: string, startedAt: number) => void) | undefined = undefined

  get(key: string, now: number): Entry | undefined {
    const entry = this.keys.get(key)
    if (entry && now > entry.expiresAt) {
      this.remove(entry)
      return undefined
    }
    return entry
  }

  /** Stores an answer under the key its route named (the URL of the request that filled it may follow, see `remember`). */
  set(key: string, payload: string, rawHeaders: string[], ownHeaders: number, expiresAt: number, route = ''): Entry {
    const previous = this.keys.get(key)
    if (previous) this.remove(previous)
    // Its own ArrayBuffer, exactly as long as the body: see ENTRY_OVERHEAD.
    const body = Buffer.allocUnsafeSlow(Buffer.byteLength(payload))
    body.write(payload)
    rawHeaders.push('content-length', String(body.length))
    if (this.cors) rawHeaders.push('vary', 'Origin')
    let bytes = ENTRY_OVERHEAD + body.length + KEY_OVERHEAD + stringBytes(key)
    for (let i = 0; i < rawHeaders.length; i++) bytes += 8 + stringBytes(rawHeaders[i] as string)
    const entry: Entry = { payload: body, rawHeaders, ownHeaders, expiresAt, bytes, keys: [key], route }
    this.keys.set(key, entry)
    this.entryCount += 1
    this.bytes += bytes
    this.evict()
    return entry
  }

  /** Remembers `url` as another way to ask for `entry`, at the cost of its bytes. */
  remember(url: string, entry: Entry): void {
    if (this.keys.has(url) || this.keys.get(entry.keys[0] as string) !== entry) return
    const bytes = KEY_OVERHEAD + stringBytes(url)
    entry.keys.push(url)
    entry.bytes += bytes
    this.bytes += bytes
    this.keys.set(url, entry)
    this.evict()
  }

  clear(): void {
    this.generation += 1
    this.keys.clear()
    this.entryCount = 0
    this.bytes = 0
    const waiting = this.clearWaiters
    this.clearWaiters = []
    for (const resolve of waiting) resolve()
  }

  usage(): { entries: number; keys: number; bytes: number } {
    return { entries: this.entryCount, keys: this.keys.size, bytes: this.bytes }
  }

  private clearWaiters: (() => void)[] = []

  nextClear(): Promise<void> {
    return new Promise((resolve) => this.clearWaiters.push(resolve))
  }

  /** Oldest first (a Map iterates in insertion order), a whole entry with all its keys at a time. */
  private evict(): void {
    for (const entry of this.keys.values()) {
      if (this.bytes <= this.maxBytes) break
      this.remove(entry)
    }
  }

  private remove(entry: Entry): void {
    for (const key of entry.keys) this.keys.delete(key)
    this.entryCount -= 1
    this.bytes -= entry.bytes
  }
}

type Done = (error?: Error) => void

async function catalogCachePlugin(app: FastifyInstance, options: CatalogCacheOptions): Promise<void> {
  const { cache } = options
  const enabled = (options.enabled ?? true) && cache.maxBytes > 0
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
  app.decorateRequest('catalogCacheKey', undefined)
  app.decorateRequest('catalogCacheUrl', undefined)
  app.decorate('catalogCache', {
    invalidate: () => feed.publish('catalog'),
    nextClear: () => cache.nextClear(),
    hits: () => ({ total: cache.hits, beforeFastify: cache.frontHits }),
    usage: () => cache.usage(),
  } satisfies CatalogCache)

  const answer = (reply: FastifyReply, entry: Entry) => {
    cache.hits += 1
    const headers = entry.rawHeaders
    for (let i = 0; i < entry.ownHeaders; i += 2) reply.header(headers[i] as string, headers[i + 1])
    reply.send(entry.payload)
  }

  // Only the routes that declare a key get the hooks: other requests pay nothing for the cache.
  app.addHook('onRoute', (route) => {
    const keyOf = route.config?.catalogCacheKey
    // Fastify's HEAD twin of a GET route inherits its config: HEAD goes to the database (it is rare).
    if (keyOf === undefined || route.method === 'HEAD') return
    if (route.method !== 'GET' || !route.url.startsWith(URL_PREFIX)) {
      throw new Error(`${String(route.method)} ${route.url}: only GET routes under ${URL_PREFIX} can be cached (frontDoor looks up nothing else)`)
    }
    const querySchema = (route.schema?.querystring ?? {}) as { properties?: Record<string, unknown> }
    const known = new Set(Object.keys(querySchema.properties ?? {}))

    // Before validation: a URL seen before is answered as it is.
    const byUrl = (request: FastifyRequest, reply: FastifyReply, done: Done) => {
      if (!usable()) return done()
      const entry = cache.get(request.url, Date.now())
      if (entry !== undefined) return answer(reply, entry)
      request.catalogCacheGeneration = cache.generation
      const query = request.query as Record<string, unknown>
      let knownOnly = true
      for (const name in query) {
        if (!known.has(name)) {
          knownOnly = false
          break
        }
      }
      if (knownOnly) request.catalogCacheUrl = request.url
      done()
    }
    // After validation: another URL for an answer already held is answered from it (and remembered).
    const byKey = (request: FastifyRequest, reply: FastifyReply, done: Done) => {
      if (request.catalogCacheGeneration === undefined || !usable()) return done()
      const key = keyOf(request)
      if (key === undefined) {
        request.catalogCacheGeneration = undefined
        request.catalogCacheUrl = undefined
        return done()
      }
      const entry = cache.get(key, Date.now())
      if (entry !== undefined) {
        if (request.catalogCacheUrl !== undefined) cache.remember(request.catalogCacheUrl, entry)
        return answer(reply, entry)
      }
      request.catalogCacheKey = key
      cache.misses += 1
      done()
    }
    const fill = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
      const key = request.catalogCacheKey
      if (key !== undefined && reply.statusCode === 200 && typeof payload === 'string' && request.catalogCacheGeneration === cache.generation && usable()) {
        const rawHeaders: string[] = []
        for (const [name, value] of Object.entries(reply.getHeaders())) {
          if (value !== undefined && !isPerRequestHeader(name)) rawHeaders.push(name, String(value))
        }
        const entry = cache.set(key, payload, rawHeaders, rawHeaders.length, Date.now() + lifetime(), route.url)
        const url = request.catalogCacheUrl
        if (url !== undefined && url !== key) cache.remember(url, entry)
      }
      done(null, payload)
    }
    route.onRequest = [...hooks(route.onRequest), byUrl]
    route.preHandler = [...hooks(route.preHandler), byKey]
    route.onSend = [...hooks(route.onSend), fill]
  })
}

/** A route's own hooks of one kind, as a list. */
function hooks<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

export interface FrontDoorOptions {
  /** Fastify's own request listener: everything that is not a hit goes there. */
  fastify: (request: IncomingMessage, response: ServerResponse) => void
  genReqId: (request: IncomingMessage) => string
  /** The service's logger, once the app exists. */
  log: () => (FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean }) | undefined
}

/**
 * The HTTP server's request listener: a GET whose URL is a key of the cache (a route's key, or a
 * request URL remembered beside it) is answered here, with one Map lookup of the URL as it came: the
 * stored status, headers and bytes plus its own `X-Request-Id`, without Fastify's per-request work
 * (request and reply objects, child logger, hooks), which costs more than the answer itself.
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
    const observe = cache.observe
    if (observe !== undefined) observe(entry.route, performance.now() - started)
    const traceHit = cache.traceHit
    if (traceHit !== undefined) traceHit(request, entry.route, started)
    const logger = log()
    if (logger?.isLevelEnabled?.('info')) {
      logger.info(
        {
          reqId: id,
          req: { method: 'GET', url, host: request.headers.host, remoteAddress: request.socket.remoteAddress },
          res: { statusCode: 200 },
          responseTime: performance.now() - started,
          cache: 'hit',
        },
        'request completed',
      )
    }
  }
}

export default fp(catalogCachePlugin, { name: 'catalog-cache', dependencies: ['change-feed'] })
