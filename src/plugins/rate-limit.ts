import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { AppError, messages } from '../shared/errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook shared by register and login: one counter per client for both. */
    authRateLimit: onRequestHookHandler
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
    redis = new Redis(options.config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: false })
    const client = redis
    // Without a listener ioredis reports connection errors as unhandled; here they are logged and the limit fails open.
    client.on('error', (error: Error) => app.log.warn({ err: error }, 'rate-limit Redis unavailable'))
    app.addHook('onClose', async () => {
      await client.quit().catch(() => client.disconnect())
    })
  }

  await app.register(rateLimit, {
    global: false,
    ...(redis ? { redis, nameSpace: 'shop-api:auth-rate-limit:' } : {}),
    // Fail open if Redis is unreachable: logging in must not depend on the limiter's store.
    skipOnError: true,
  })

  const check = app.createRateLimit({
    max,
    timeWindow: windowMs,
    keyGenerator: (request: FastifyRequest) => request.ip,
  })

  app.decorate('authRateLimit', async (request: FastifyRequest, reply: FastifyReply) => {
    const result = await check(request)
    if (result.isAllowed) return
    const ttl = Math.max(0, result.ttl)
    reply.header('RateLimit-Limit', result.max)
    reply.header('RateLimit-Remaining', result.remaining)
    reply.header('RateLimit-Reset', Math.ceil((Date.now() + ttl) / 1000))
    if (result.isExceeded) {
      reply.header('Retry-After', Math.max(1, result.ttlInSeconds))
      throw new AppError(429, messages.tooManyAttempts)
    }
  })
}

export default fp(rateLimitPlugin, { name: 'auth-rate-limit' })
