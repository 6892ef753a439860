import type { Config } from './index.js'
import type { Reader } from './read.js'

/** How long the HTTP server waits for a client (app.ts); every wait is bounded, so a slow client cannot hold a socket. */
export interface HttpTimeouts {
  /** From the connection (or a request's first byte) to the end of its headers: 408 after. */
  readonly headersTimeoutMs: number
  /** From a request's first byte to the end of its body: 408 after. */
  readonly requestTimeoutMs: number
  /** An idle kept-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number
  /** A socket with no byte in either direction while a request is open is closed after this. */
  readonly socketTimeoutMs: number
}

/** The HTTP server: where it listens, the address clients use, the proxy in front, CORS, and its waits on clients. */
export function readHttp(read: Reader): Pick<Config, 'port' | 'host' | 'publicUrl' | 'trustProxy' | 'corsOrigin' | 'http'> {
  const port = read.integer('PORT', 3000, 0, 65535)
  return {
    port,
    host: read.string('HOST') ?? '0.0.0.0',
    publicUrl: read.httpUrl('PUBLIC_URL', `http://localhost:${port}`),
    trustProxy: readTrustProxy(read),
    corsOrigin: read.string('CORS_ORIGIN') ?? null,
    http: Object.freeze(readTimeouts(read)),
  }
}

/**
 * TRUST_PROXY: true or false (in any case), a hop count, or the proxies' addresses (Fastify's trustProxy). Not
 * read.boolean: 1 and 0 here are hop counts.
 */
function readTrustProxy(read: Reader): Config['trustProxy'] {
  const raw = read.string('TRUST_PROXY')
  if (raw === undefined || /^false$/i.test(raw)) return false
  if (/^true$/i.test(raw)) return true
  if (/^\d+$/.test(raw)) return Number(raw)
  if (/^[0-9a-fA-F:.,/\s]+$/.test(raw) || /^(loopback|linklocal|uniquelocal)/.test(raw)) return raw
  read.problem(`TRUST_PROXY must be true, false, a hop count or a list of addresses (got "${raw}")`)
  return false
}

function readTimeouts(read: Reader): HttpTimeouts {
  const hour = 3_600_000
  const timeouts = {
    headersTimeoutMs: read.integer('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, hour),
    // A 5 MiB image over a 1 Mbit/s uplink takes about 42 s.
    requestTimeoutMs: read.integer('HTTP_REQUEST_TIMEOUT_MS', 60_000, 100, hour),
    // Longer than the 60 s idle timeout of common load balancers, so they close first (Fastify's default).
    keepAliveTimeoutMs: read.integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, hour),
    socketTimeoutMs: read.integer('HTTP_SOCKET_TIMEOUT_MS', 30_000, 100, hour),
  }
  // Node refuses a server whose headers may take longer than the whole request.
  if (timeouts.headersTimeoutMs > timeouts.requestTimeoutMs) {
    read.problem(`HTTP_HEADERS_TIMEOUT_MS must not be greater than HTTP_REQUEST_TIMEOUT_MS (${timeouts.headersTimeoutMs} > ${timeouts.requestTimeoutMs})`)
  }
  return timeouts
}
