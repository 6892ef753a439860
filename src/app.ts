import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import cors from '@fastify/cors'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import type { Redis } from 'ioredis'
import type { Config } from './config.js'
import { connectDatabase, type DatabaseHandle } from './db/connect.js'
import { migrateToLatest } from './db/migrate.js'
import { configWarnings } from './config-warnings.js'
import { adminRoutes } from './modules/admin/admin.routes.js'
import { apiKeysRoutes } from './modules/staff/api-keys.routes.js'
import { addressesRoutes } from './modules/addresses/addresses.routes.js'
import { CartViewCache } from './modules/cart/cart-view-cache.js'
import { cartRoutes } from './modules/cart/cart.routes.js'
import { csvRoutes } from './modules/csv/csv.routes.js'
import { catalogRoutes } from './modules/catalog/catalog.routes.js'
import { healthRoutes } from './modules/health/health.routes.js'
import { ordersRoutes } from './modules/orders/orders.routes.js'
import { returnsRoutes } from './modules/returns/returns.routes.js'
import type { ReturnsDeps } from './modules/returns/returns.service.js'
import type { Inventory } from './modules/inventory/inventory.service.js'
import type { OrderLifecycle } from './modules/orders/order-lifecycle.js'
import { createOrdersDeps, type OrdersDeps } from './modules/orders/orders.service.js'
import auditLogPlugin from './modules/staff/audit-log.plugin.js'
import outboxPlugin, { type OutboxPluginOptions } from './modules/outbox/dispatcher.js'
import { shippingRoutes } from './modules/shipping/shipping.routes.js'
import { discountsRoutes } from './modules/discounts/discounts.routes.js'
import { taxesRoutes } from './modules/taxes/taxes.routes.js'
import { taxRatesCache } from './modules/taxes/taxes.service.js'
import paymentsPlugin, { createPaymentProvider } from './modules/payments/payments.plugin.js'
import { PaymentsService } from './modules/payments/payments.service.js'
import { refundsRoutes } from './modules/payments/refunds.routes.js'
import { RefundsService } from './modules/payments/refunds.service.js'
import webhooksPlugin from './modules/webhooks/webhooks.plugin.js'
import type { ImageHost } from './modules/images/image-host.js'
import { ensureAdmin } from './modules/users/users.service.js'
import { usersRoutes } from './modules/users/users.routes.js'
import adminUiPlugin, { type AdminUiOptions } from './plugins/admin-ui.js'
import authPlugin from './plugins/auth.js'
import catalogCachePlugin, { frontDoor, ResponseCache } from './plugins/catalog-cache.js'
import changeFeedPlugin from './plugins/change-feed.js'
import databasePlugin from './plugins/database.js'
import docsPlugin from './plugins/docs.js'
import errorsPlugin, { answerClientError, answerFrameworkError } from './plugins/errors.js'
import invalidationPlugin from './plugins/invalidation.js'
import metricsPlugin from './plugins/metrics.js'
import rateLimitPlugin from './plugins/rate-limit.js'
import type { EventSink } from './shared/event-sink.js'
import { schemaErrorFormatter, validatorCompiler } from './shared/validation.js'

/** The shop's services, built once here and handed to the modules that use them (nothing is looked up by `db`). */
export interface Services {
  events: EventSink
  inventory: Inventory
  lifecycle: OrderLifecycle
  orders: OrdersDeps
  payments: PaymentsService
  returns: ReturnsDeps
  refunds: RefundsService
}

declare module 'fastify' {
  interface FastifyInstance {
    services: Services
    /** Signed-in customers' cart views answered before Fastify while unchanged (modules/cart/cart-view-cache.ts). */
    cartViews: CartViewCache
  }
}

export interface AppOptions {
  /** An open database; by default the one named by config.databaseUrl, closed with the app. */
  database?: DatabaseHandle
  /** A Redis client for the auth rate limit; by default one for config.redisUrl when set. */
  redis?: Redis
  logger?: FastifyServerOptions['logger']
  /** Where product images go; by default the host named by config.storage (tests inject failing ones). */
  imageHost?: ImageHost
  /**
   * The product read cache (plugins/catalog-cache.ts). Off by default under NODE_ENV=test: tests
   * write rows straight into the database, behind the cache's back.
   */
  catalogCache?: boolean
  /**
   * Whether to hear other instances' changes (plugins/change-feed.ts); without it the caches that
   * depend on it stay off. On by default.
   */
  changeFeed?: boolean
  /** The admin dashboard's build to serve at /admin; admin/dist by default (tests give a directory of their own). */
  adminUi?: AdminUiOptions
  /** The outbox dispatcher's settings (tests shorten its retry schedule, or turn it off to read rows as queued). */
  outbox?: OutboxPluginOptions['options']
  /** Whether the timed jobs (payments' expiry and reconcile) run; on by default, off for the CLI. */
  jobs?: boolean
}

const REQUEST_ID = /^[\w.:-]{1,64}$/

/** A sane incoming X-Request-Id is kept (a proxy's), anything else gets a new UUID. */
function genReqId(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id']
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID()
}

/** Builds the whole service on a migrated database; used by the server, the CLI and the tests. */
/**
 * The `req` of a log line: Fastify's own fields, with an order token in the query string not written down. It is
 * given a request, or the plain `{method, url, host, remoteAddress}` the catalog cache logs a hit with.
 */
export function requestLogFields(request: FastifyRequest | { method: string; url: string; host?: string | undefined; remoteAddress?: string | undefined }) {
  if (!('headers' in request)) return { ...request, url: redactUrlToken(request.url) }
  return {
    method: request.method,
    url: redactUrlToken(request.url),
    version: request.headers['accept-version'] as string | undefined,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }
}

/** `url` with the value of its `token` query parameter replaced (an order token opens a guest's order). */
export function redactUrlToken(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/g, '$1[redacted]')
}

export async function buildApp(config: Config, options: AppOptions = {}): Promise<FastifyInstance> {
  const handle = options.database ?? connectDatabase(config.databaseUrl, { timeouts: config.postgres, preparedStatements: config.postgres.preparedStatements })
  await migrateToLatest(handle.db, handle.schema)

  // The product read cache answers its hits in the HTTP server's listener, before Fastify (plugins/catalog-cache.ts).
  const responseCache = new ResponseCache(config.catalogCacheMaxBytes, Boolean(config.corsOrigin))
  // With traces on (loaded already by server.ts), a hit answered before Fastify still gets its server span.
  if (config.tracing) responseCache.traceHit = (await import('./tracing.js')).traceCacheHit
  let log: FastifyBaseLogger | undefined
  // A signed-in customer's unchanged cart is answered there too (modules/cart/cart-view-cache.ts).
  const cartViews = new CartViewCache(handle.db, { sqlite: handle.sqlite })
  cartViews.usable = () => responseCache.usable()
  const cartDoor =
    (fastify: (request: IncomingMessage, response: ServerResponse) => void) =>
    (request: IncomingMessage, response: ServerResponse): void => {
      if (request.method !== 'GET' || request.url !== '/cart' || (responseCache.cors && request.headers.origin !== undefined)) return fastify(request, response)
      const started = performance.now()
      let reqId: string | undefined
      const answered = cartViews.answer(request, response, () => (reqId = genReqId(request)))
      const after = (yes: boolean) => {
        if (!yes) return fastify(request, response)
        responseCache.observe?.('/cart', performance.now() - started)
        responseCache.traceHit?.(request, '/cart', started)
        if ((log as { isLevelEnabled?: (level: string) => boolean } | undefined)?.isLevelEnabled?.('info')) {
          const res = { statusCode: 200 }
          log?.info(
            {
              reqId,
              req: { method: 'GET', url: '/cart', host: request.headers.host, remoteAddress: request.socket.remoteAddress },
              res,
              responseTime: performance.now() - started,
              cache: 'hit',
            },
            'request completed',
          )
        }
      }
      if (answered === true || answered === false) return after(answered)
      void answered.then(after)
    }
  const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, socketTimeoutMs } = config.http
  const app = Fastify({
    serverFactory: (fastify) => {
      const server = createServer(
        {
          // Every wait on a client is bounded (config.ts HttpTimeouts): a slow or silent client gets a 408
          // (answerClientError) or its socket closed, instead of holding it for as long as it likes.
          headersTimeout: headersTimeoutMs,
          requestTimeout: requestTimeoutMs,
          keepAliveTimeout: keepAliveTimeoutMs,
          // How often Node looks for requests past those timeouts (30 s by default, which made a 1 s timeout
          // a 31 s one): a tenth of the shorter one, between 50 ms and 1 s.
          connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(Math.min(headersTimeoutMs, requestTimeoutMs) / 10))),
        },
        frontDoor(responseCache, { fastify: cartDoor(fastify), genReqId, log: () => log }),
      )
      // No byte either way for this long while a request is open: the socket is destroyed.
      server.setTimeout(socketTimeoutMs)
      return server
    },
    // The same values, for Fastify's own bookkeeping (app.initialConfig); the server above applies them.
    connectionTimeout: socketTimeoutMs,
    keepAliveTimeout: keepAliveTimeoutMs,
    requestTimeout: requestTimeoutMs,
    clientErrorHandler: answerClientError,
    logger: options.logger ?? {
      level: config.logLevel,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.currentPassword', '*.token', '*.refreshToken'],
        censor: '[redacted]',
      },
      // Fastify's own request fields, but an order token in the query string (a guest's link) is not written down.
      serializers: { req: requestLogFields },
    },
    trustProxy: config.trustProxy as FastifyServerOptions['trustProxy'],
    bodyLimit: 1024 * 1024,
    // A path segment may be this long (an image's stored name is up to 114 characters); longer is a 414.
    // (In routerOptions: at the top level it is deprecated, warning FSTDEP022 on every start.)
    routerOptions: { maxParamLength: 256 },
    frameworkErrors: answerFrameworkError,
    requestIdHeader: false,
    genReqId,
    schemaErrorFormatter,
  })
  log = app.log
  for (const warning of configWarnings(config)) app.log.warn(warning)
  if (config.admin) await ensureAdmin(handle.db, config.admin, app.log)
  app.setValidatorCompiler(validatorCompiler)

  // Only JSON (and multipart where a module registers it): a text/plain body is a 415, not a string to validate.
  app.removeContentTypeParser('text/plain')
  // An empty JSON body is "no body" (POST /orders takes none), not a syntax error.
  const parseJson = app.getDefaultJsonParser('error', 'ignore')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined)
    return parseJson(request, body as string, done)
  })

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id)
  })

  await app.register(errorsPlugin)
  await app.register(databasePlugin, { handle, ownsDatabase: options.database === undefined })
  if (config.corsOrigin) {
    const origin = config.corsOrigin === '*' ? true : config.corsOrigin.split(',').map((o) => o.trim())
    await app.register(cors, { origin, exposedHeaders: ['X-Total-Count', 'Link', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'] })
  }
  // Tells other instances on the same database what changed, for the caches below.
  await app.register(changeFeedPlugin, { handle, enabled: options.changeFeed ?? true })
  // Every route that writes declares what it changes, or the service does not start (plugins/invalidation.ts).
  await app.register(invalidationPlugin)
  await app.register(docsPlugin)
  await app.register(authPlugin, { config })
  await app.register(rateLimitPlugin, { config, ...(options.redis ? { redis: options.redis } : {}) })

  // The outbox: e-mails and webhook deliveries, written with the change, delivered after commit.
  await app.register(outboxPlugin, { config, ...(options.outbox ? { options: options.outbox } : {}) })

  await app.register(catalogCachePlugin, { cache: responseCache, enabled: options.catalogCache ?? config.nodeEnv !== 'test' })
  // The cart views kept in memory show the catalog and the tax rates: any change to either empties them.
  app.changeFeed.subscribe('catalog', () => cartViews.clear())
  app.changeFeed.subscribe('taxes', () => cartViews.clear())
  cartViews.bearerUser = (header) => app.bearerUser(header)
  app.decorate('cartViews', cartViews)
  // Off unless METRICS_ENABLED=true (then before the routes: it counts the orders placed).
  await app.register(metricsPlugin, { config, handle, cache: responseCache })

  const services = await buildServices(app, config)
  app.decorate('services', services)

  await app.register(healthRoutes)
  await app.register(usersRoutes, { config })
  await app.register(cartRoutes, {
    cart: { guestCartTtlMs: config.guests.cartTtlMs, guestCheckout: config.guests.checkout },
    pricing: services.orders.pricing,
    views: cartViews,
    jobs: options.jobs ?? true,
  })
  await app.register(paymentsPlugin, { config, payments: services.payments, jobs: options.jobs ?? true })
  await app.register(ordersRoutes, { config, orders: services.orders })
  await app.register(returnsRoutes, { config, returns: services.returns })
  await app.register(refundsRoutes, { refunds: services.refunds })
  await app.register(addressesRoutes)
  await app.register(shippingRoutes)
  await app.register(discountsRoutes, { config })
  await app.register(taxesRoutes)
  await app.register(catalogRoutes, { config, ...(options.imageHost ? { imageHost: options.imageHost } : {}) })
  // Webhook endpoints, and their channel and events in the outbox.
  await app.register(csvRoutes, { config })
  await app.register(webhooksPlugin, { config })
  await app.register(apiKeysRoutes, { config })
  await app.register(adminRoutes, { config })
  await app.register(auditLogPlugin, { config, jobs: options.jobs ?? true })
  await app.register(adminUiPlugin, options.adminUi ?? {})

  return app
}

/**
 * The services behind the routes, each given what it needs: events go to the outbox, stock to the inventory,
 * every order status move through the lifecycle, whose hooks payments registers (docs/architecture.md).
 */
async function buildServices(app: FastifyInstance, config: Config): Promise<Services> {
  const { db } = app
  // The outbox is the event sink: e-mails and webhook deliveries are written in the change's transaction.
  const events: EventSink = app.outbox
  const provider = await createPaymentProvider(config)
  // The cart view and checkout price alike, with the rates kept in memory between changes.
  const orders = createOrdersDeps(db, { provider: provider.name, currency: config.payments.currency }, events, {
    currency: config.payments.currency,
    pricesIncludeTax: config.pricesIncludeTax,
    shopCountry: config.shopCountry,
    taxRates: taxRatesCache(app.changeFeed),
  })
  const payments = new PaymentsService({
    db,
    provider,
    config: config.payments,
    log: app.log,
    lifecycle: orders.lifecycle,
    adminEmails: config.mail.adminNotify,
    events,
  })
  const refunds = new RefundsService({
    db,
    payments,
    lifecycle: orders.lifecycle,
    inventory: orders.inventory,
    events,
    defaults: { provider: provider.name, currency: config.payments.currency },
  })
  const returns: ReturnsDeps = {
    db,
    inventory: orders.inventory,
    events,
    payments: orders.payments,
    settings: { zone: config.shopTimezone, returnDays: config.returnDays, withdrawalDays: config.withdrawalDays },
    // A receipt's refund: written in the receipt's transaction by the refunds module's rules (restocking is the
    // receipt's own); Stripe is asked once the receipt has committed.
    refunds: {
      refundReceived: async (trx, request) => {
        const { refundId, after } = await refunds.refundWithin(
          trx,
          request.orderId,
          request.idempotencyKey,
          {
            items: request.items.map((item) => ({ ...item, restock: false })),
            ...(request.shippingAmountCents === undefined ? {} : { shippingAmount: request.shippingAmountCents / 100 }),
            ...(request.amountCents === undefined ? {} : { amount: request.amountCents / 100 }),
            reason: `Devolución #${request.returnId}`,
          },
          request.actor.type === 'api_key' && request.actor.id !== null
            ? { id: request.actor.id, apiKey: { id: request.actor.id, name: request.actor.name ?? '' } }
            : { id: request.actor.id ?? 0 },
        )
        return { refundId, afterCommit: () => after(app.log) }
      },
    },
  }
  return { events, inventory: orders.inventory, lifecycle: orders.lifecycle, payments, refunds, orders, returns }
}
