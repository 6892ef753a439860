import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { sql } from 'kysely'
import type pg from 'pg'
import type { DatabaseHandle } from '../db/connect.js'

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
 * - Other instances: on PostgreSQL each write also sends NOTIFY on one channel, and every instance
 *   LISTENs on a connection of its own; while that connection is down the cache is bypassed.
 *   On SQLite, `PRAGMA data_version` (it changes when another connection commits) is polled.
 * - Writes that bypass the service entirely (psql, scripts) are seen when an entry expires.
 */

/** Entries older than this are read again: the bound for writes made outside the service. */
const ENTRY_LIFETIME_MS = 5_000
const MAX_BYTES = 64 * 1024 * 1024
const SQLITE_POLL_MS = 50
const CHANNEL = 'shop_catalog_changed'
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
  storedAt: number
  bytes: number
}

export interface CatalogCacheOptions {
  handle: DatabaseHandle
  /** Off in tests that want every read to reach the database. */
  enabled?: boolean
}

/** What the rest of the service (and the tests) see of the cache. */
export interface CatalogCache {
  /** Empties the cache here and, on PostgreSQL, on every other instance. */
  invalidate(): void
  /** Resolves the next time this instance's cache is emptied, whatever the cause. */
  nextClear(): Promise<void>
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

class ResponseCache {
  private entries = new Map<string, Entry>()
  private bytes = 0
  /** Bumped by every invalidation; a fill started in an older generation is dropped. */
  generation = 0
  /** False while another instance's writes could go unnoticed (listener down). */
  usable = true

  get(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key)
    if (entry && now - entry.storedAt > ENTRY_LIFETIME_MS) {
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

/** Keeps the cache in step with other instances on PostgreSQL: LISTEN, reconnecting when lost. */
function listenForOtherInstances(app: FastifyInstance, cache: ResponseCache, connect: () => pg.Client, instanceId: string) {
  let client: pg.Client | undefined
  let closing = false
  let retry: NodeJS.Timeout | undefined
  const ignore = () => {}

  const discard = (old: pg.Client) => {
    old.removeAllListeners()
    old.on('error', ignore)
    old.end().catch(ignore)
  }

  const lost = (error: Error) => {
    cache.usable = false
    cache.clear()
    if (client) discard(client)
    client = undefined
    if (closing) return
    app.log.warn({ err: error }, 'catalog cache: change listener lost; reads bypass the cache until it is back')
    retry ??= setTimeout(() => {
      retry = undefined
      void start()
    }, 1000)
  }

  const start = async (): Promise<void> => {
    const next = connect()
    next.on('error', lost)
    next.on('end', () => lost(new Error('connection ended')))
    next.on('notification', (message) => {
      if (message.channel === CHANNEL && message.payload !== instanceId) cache.clear()
    })
    try {
      await next.connect()
      await next.query(`listen ${CHANNEL}`)
    } catch (error) {
      discard(next)
      lost(error as Error)
      return
    }
    client = next
    // Whatever changed while nobody was listening.
    cache.clear()
    cache.usable = true
  }

  // One NOTIFY in flight at a time: writes arriving meanwhile share the next one, sent after
  // they committed, so a burst of orders costs a handful of notifications, not one each.
  let sending = false
  let pending = false
  const notify = (): void => {
    if (sending) {
      pending = true
      return
    }
    const target = client
    if (!target) return
    sending = true
    pending = false
    target
      .query('select pg_notify($1, $2)', [CHANNEL, instanceId])
      .catch((error: Error) => lost(error))
      .finally(() => {
        sending = false
        if (pending) notify()
      })
  }

  return {
    start,
    notify,
    stop: async () => {
      closing = true
      clearTimeout(retry)
      const old = client
      client = undefined
      if (old) {
        old.removeAllListeners()
        old.on('error', ignore)
        await old.end().catch(ignore)
      }
    },
  }
}

async function catalogCachePlugin(app: FastifyInstance, options: CatalogCacheOptions): Promise<void> {
  const cache = new ResponseCache()
  const enabled = options.enabled ?? true
  cache.usable = enabled
  const { handle } = options
  const instanceId = `${process.pid}-${Math.random().toString(36).slice(2)}`

  let notifyOthers = () => {}
  if (enabled && handle.dialect === 'postgres') {
    // Without a connection of its own to LISTEN on, other instances' writes would go unseen.
    if (!handle.createClient) throw new Error('catalog cache on PostgreSQL needs DatabaseHandle.createClient')
    const listener = listenForOtherInstances(app, cache, handle.createClient, instanceId)
    cache.usable = false
    await listener.start()
    notifyOthers = listener.notify
    app.addHook('onClose', async () => listener.stop())
  } else if (enabled && handle.dialect === 'sqlite') {
    let lastVersion: number | undefined
    const timer = setInterval(() => {
      sql<{ data_version: number }>`pragma data_version`
        .execute(handle.db)
        .then(({ rows }) => {
          const version = rows[0]?.data_version
          if (lastVersion !== undefined && version !== lastVersion) cache.clear()
          lastVersion = version
        })
        .catch((error: unknown) => app.log.warn({ err: error }, 'catalog cache: data_version poll failed'))
    }, SQLITE_POLL_MS)
    timer.unref()
    app.addHook('onClose', async () => clearInterval(timer))
  }

  app.decorateRequest('catalogCacheGeneration', undefined)
  app.decorate('catalogCache', {
    invalidate: () => {
      cache.clear()
      notifyOthers()
    },
    nextClear: () => cache.nextClear(),
  } satisfies CatalogCache)

  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (request.method !== 'GET' || !cache.usable || !request.url.startsWith(URL_PREFIX)) return done()
    // Only 200s of the cached routes are ever stored, under their exact URL: a hit needs no routing
    // check (request.routeOptions builds a new object on every access).
    const entry = cache.get(request.url, Date.now())
    if (entry !== undefined) {
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
      if (reply.statusCode === 200 && typeof payload === 'string' && generation === cache.generation && cache.usable) {
        const headers: [string, string][] = []
        for (const [name, value] of Object.entries(reply.getHeaders())) {
          if (value !== undefined && !isPerRequestHeader(name)) headers.push([name, String(value)])
        }
        const bytes = Buffer.from(payload)
        cache.set(request.url, { payload: bytes, headers, storedAt: Date.now(), bytes: bytes.length + 200 })
      }
    } else if (isWrite(request)) {
      app.catalogCache.invalidate()
    }
    done(null, payload)
  })
}

export default fp(catalogCachePlugin, { name: 'catalog-cache' })
