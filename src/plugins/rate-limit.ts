import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis, RedisOptions } from 'ioredis'
import type { Config } from '../config.js'
import { AppError } from '../shared/errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook shared by register and login: one counter per client for both. */
    authRateLimit: onRequestHookHandler
    /** onRequest hook shared by the password-reset request and confirm: login's rule, a counter of their own. */
    passwordResetRateLimit: onRequestHookHandler
    /**
     * onRequest hook of the public routes that find a guest's order from what the guest knows (POST /orders/lookup,
     * and the withdrawal function's when it comes): login's rule, one counter of their own shared by all of them.
     */
    guestOrderRateLimit: onRequestHookHandler
  }
}

/** Every auth counter lives under this prefix, followed by the client's address: `shop-api:auth-rate-limit:<ip>`. */
export const REDIS_KEY_PREFIX = 'shop-api:auth-rate-limit:'
/** The password-reset counters: `shop-api:password-reset-rate-limit:<ip>`. */
export const RESET_REDIS_KEY_PREFIX = 'shop-api:password-reset-rate-limit:'
/** The guest-order counters (POST /orders/lookup): `shop-api:guest-order-rate-limit:<ip>`. */
export const GUEST_ORDER_REDIS_KEY_PREFIX = 'shop-api:guest-order-rate-limit:'

/** Reconnect attempts back off up to this delay, so the limit counts again within about a second of Redis returning. */
const MAX_RECONNECT_DELAY_MS = 1000

/**
 * Client options for the limiter's Redis, chosen so that an outage costs a request nothing:
 * no offline queue (while Redis is away a command fails at once instead of waiting for a
 * reconnect), a bounded connect and command, and a socket that stays silent past the command
 * timeout is dropped, so later commands fail at once too instead of each waiting out the timeout.
 */
export function redisClientOptions(timeouts: Config['redisTimeouts']): RedisOptions {
  return {
    connectTimeout: timeouts.connectMs,
    commandTimeout: timeouts.commandMs,
    socketTimeout: timeouts.commandMs,
    enableOfflineQueue: false,
    // A command caught by a disconnect fails then, it is not replayed after the reconnect.
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt: number) => Math.min(50 * 2 ** (attempt - 1), MAX_RECONNECT_DELAY_MS),
  }
}

/**
 * Whether Redis works, from the client's events and the commands' outcomes: one warning when it
 * stops (however many reconnect attempts and requests fail meanwhile), one line when it is back.
 */
class RedisAvailability {
  private state: 'unknown' | 'up' | 'down' = 'unknown'
  closing = false

  constructor(private readonly log: FastifyBaseLogger) {}

  up(): void {
    if (this.state === 'down') this.log.info('Redis is back: the auth rate limit counts again')
    this.state = 'up'
  }

  down(error: unknown): void {
    if (this.state === 'down' || this.closing) return
    this.state = 'down'
    this.log.warn({ err: error }, 'Redis is unavailable: the auth rate limit lets requests through uncounted until it is back')
  }
}

/**
 * The limiter's Redis store. The library's own builds each key from the route, which
 * `createRateLimit` leaves empty (`…:undefinedundefined-<ip>`); register and login share one
 * counter, so the key here is the prefix and the client alone. A window starts at the first
 * attempt and is not extended by later ones, as in the library's store.
 */
function redisStore(redis: Redis, availability: RedisAvailability): new () => FastifyRateLimitStore {
  return class AuthRateLimitRedisStore implements FastifyRateLimitStore {
    prefix = REDIS_KEY_PREFIX

    incr(ip: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      const key = this.prefix + ip
      redis
        .multi()
        .set(key, 0, 'PX', timeWindow, 'NX')
        .incr(key)
        .pttl(key)
        .exec()
        .then((replies) => {
          const failed = replies?.find(([error]) => error)?.[0]
          if (!replies || failed) throw failed ?? new Error('Redis transaction aborted')
          availability.up()
          callback(null, { current: Number(replies[1]?.[1]), ttl: Math.max(0, Number(replies[2]?.[1])) })
        })
        .catch((error: Error) => {
          availability.down(error)
          callback(error)
        })
    }

    // Each limiter made by createRateLimit gets a child; one given `redisKeyPrefix` counts under that prefix.
    child(params: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
      const prefix = (params as { redisKeyPrefix?: string }).redisKeyPrefix
      if (prefix === undefined) return this
      const store = new AuthRateLimitRedisStore()
      store.prefix = prefix
      return store
    }
  }
}

/**
 * The auth rate limit: counters in memory, or in Redis when REDIS_URL is set so that
 * every instance shares one limit. Headers are the IETF draft's names with the reset as a
 * Unix timestamp, which the library's own headers do not give, so they are set here.
 */
async function rateLimitPlugin(app: FastifyInstance, options: { config: Config; redis?: Redis }) {
  const { max, windowMs } = options.config.authRateLimit
  let redis = options.redis
  if (!redis && options.config.redisUrl) {
    // Loaded only when used: a shop without Redis does not pay for the client at start-up.
    const { Redis } = await import('ioredis')
    redis = new Redis(options.config.redisUrl, redisClientOptions(options.config.redisTimeouts))
  }
  let store: (new () => FastifyRateLimitStore) | undefined
  if (redis) {
    const client = redis
    const availability = new RedisAvailability(app.log)
    // An 'error' comes with each failed (re)connect attempt; a 'close' without one when Redis shuts down cleanly.
    client.on('error', (error: Error) => availability.down(error))
    client.on('close', () => availability.down(new Error('connection to Redis closed')))
    client.on('ready', () => availability.up())
    store = redisStore(client, availability)
    if (!options.redis) {
      // The first requests are counted if Redis is there: start-up waits for the first answer or failure,
      // which the connect and command timeouts bound.
      await new Promise<void>((resolve) => {
        if (client.status === 'ready') return resolve()
        const settle = () => {
          client.off('ready', settle).off('error', settle)
          resolve()
        }
        client.once('ready', settle).once('error', settle)
      })
      app.addHook('onClose', async () => {
        availability.closing = true
        await client.quit().catch(() => client.disconnect())
      })
    }
  }

  await app.register(rateLimit, {
    global: false,
    ...(store ? { store } : {}),
    // Fail open if Redis is unreachable: logging in must not depend on the limiter's store.
    skipOnError: true,
  })

  // Without a keyGenerator the library keys on the client's address, and an IPv6 client on its /64
  // network: one host can change its address within its /64 at will.
  const check = app.createRateLimit({ max, timeWindow: windowMs })
  // The same rule with a counter of its own (in memory each limiter has its own store; in Redis, its prefix).
  const checkReset = app.createRateLimit({ max, timeWindow: windowMs, redisKeyPrefix: RESET_REDIS_KEY_PREFIX } as Parameters<typeof app.createRateLimit>[0])

  const checkGuestOrder = app.createRateLimit({ max, timeWindow: windowMs, redisKeyPrefix: GUEST_ORDER_REDIS_KEY_PREFIX } as Parameters<
    typeof app.createRateLimit
  >[0])

  app.decorate('authRateLimit', limitWith(check))
  app.decorate('passwordResetRateLimit', limitWith(checkReset))
  app.decorate('guestOrderRateLimit', limitWith(checkGuestOrder))
}

/** An onRequest hook answering 429 past the limit, with the IETF draft's headers on every answer. */
function limitWith(check: ReturnType<FastifyInstance['createRateLimit']>) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const result = await check(request)
    if (result.isAllowed) return
    const ttl = Math.max(0, result.ttl)
    reply.header('RateLimit-Limit', result.max)
    reply.header('RateLimit-Remaining', result.remaining)
    reply.header('RateLimit-Reset', Math.ceil((Date.now() + ttl) / 1000))
    if (result.isExceeded) {
      reply.header('Retry-After', Math.max(1, result.ttlInSeconds))
      throw new AppError(429, 'tooManyAttempts')
    }
  }
}

export default fp(rateLimitPlugin, { name: 'auth-rate-limit' })
