import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import type { Topic } from './change-feed.js'

/**
 * Which in-memory caches a write empties is declared by each route, not guessed from its URL:
 *
 *   app.post('/products', { config: { invalidates: ['catalog'] }, ... })
 *
 * Every route that is not a read (GET, HEAD, OPTIONS) must say what it changes, `[]` for nothing
 * cached; a route without the declaration stops the service at start-up (and every test run), so a
 * new writer cannot silently leave the caches stale. After a declaring route has answered, each
 * topic is published on the change feed before the response leaves: this instance's caches are
 * emptied at once (the writer sees its write on its very next read) and, on PostgreSQL, other
 * instances are told.
 *
 * Writes made outside a route (jobs, scripts run inside the service) publish the topic themselves,
 * after their commit: `app.changeFeed.publish('catalog')`.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The change-feed topics a call of this route changes; required on every route that is not a read. */
    invalidates?: readonly Topic[]
  }
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Why a route cannot be registered, or undefined when its declaration is in order. */
export function declarationProblem(route: Pick<RouteOptions, 'method' | 'url' | 'config'>): string | undefined {
  const methods = Array.isArray(route.method) ? route.method : [route.method]
  if (methods.every((method) => READS.has(method))) return undefined
  const declared = (route.config as { invalidates?: unknown } | undefined)?.invalidates
  if (!Array.isArray(declared)) {
    return `${methods.join(',')} ${route.url}: a route that writes must declare config.invalidates, the change-feed topics it changes ([] for none; see docs/catalog.md)`
  }
  return undefined
}

async function invalidationPlugin(app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', (route) => {
    const problem = declarationProblem(route)
    if (problem !== undefined) throw new Error(problem)
    const topics = route.config?.invalidates
    if (!topics || topics.length === 0) return
    const publish = (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
      // A 4xx is a refusal that changed nothing (no failed check leaves a row behind), and publishing
      // it would let anyone empty every instance's cache with unauthenticated requests. A 5xx may
      // come after part of a write, so it publishes.
      const status = reply.statusCode
      if (status < 400 || status >= 500) for (const topic of topics) app.changeFeed.publish(topic)
      done(null, payload)
    }
    const own = route.onSend
    route.onSend = [...(own === undefined ? [] : Array.isArray(own) ? own : [own]), publish]
  })
}

export default fp(invalidationPlugin, { name: 'invalidation', dependencies: ['change-feed'] })
