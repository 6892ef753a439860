// OpenTelemetry traces, loaded by server.ts only when config.tracing is set (OTEL_EXPORTER_OTLP_ENDPOINT): a
// service without it imports none of this and pays nothing, at start-up or per request.
//
// What is traced: every HTTP request (instrumentation-http's server span, named and labelled with the route by
// @fastify/otel, which adds a span for Fastify's handling and one for the handler beneath it), PostgreSQL queries
// (instrumentation-pg), Redis commands (instrumentation-ioredis) and outgoing HTTP (webhook deliveries, Stripe).
// SQLite queries are not traced: better-sqlite3 has no instrumentation. Spans leave in batches, in the
// background (BatchSpanProcessor): a collector that is slow or down costs requests nothing, and the spans it
// misses are dropped once the queue is full (2,048 by default).
//
// Loading order matters: the instrumentations patch pg, ioredis, fastify and node:http as they are loaded, so
// this runs before anything imports them (server.ts imports the app only after `startTracing`), and ES modules
// go through import-in-the-middle's loader hook, limited to the modules an instrumentation asked for.
import { register } from 'node:module'
import type { IncomingMessage } from 'node:http'
import { propagation, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api'
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { registerInstrumentations } from '@opentelemetry/instrumentation'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { createAddHookMessageChannel } from 'import-in-the-middle'
import type { Config } from './config.js'

/** Paths a probe or a scraper asks every few seconds: not traced (they would drown the requests that matter). */
const UNTRACED = new Set(['/health', '/ready', '/metrics'])

/** How long shutting down waits for the last spans to leave: a collector that is down must not hold the exit. */
const SHUTDOWN_WAIT_MS = 2_000

export interface Tracing {
  /** Sends the spans still queued (for at most two seconds) and stops. */
  shutdown(): Promise<void>
}

export async function startTracing(options: NonNullable<Config['tracing']>): Promise<Tracing> {
  // ES modules are patched by import-in-the-middle's loader hook, told by the instrumentations below which
  // modules to wrap (only those: every other module loads as it would without it).
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel()
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions)

  const exporter = options.protocol === 'http/json' ? new JsonTraceExporter({ url: options.url }) : new ProtobufTraceExporter({ url: options.url })
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over the defaults (envDetector).
  const resource = resourceFromAttributes({ 'service.name': 'shop-api' }).merge(detectResources({ detectors: [envDetector] }))
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] })
  // The global tracer provider, AsyncLocalStorage for the active span, and W3C traceparent propagation.
  provider.register()

  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      // Outgoing HTTP only (Stripe, webhook deliveries). Incoming requests get their server span from
      // @fastify/otel: the HTTP instrumentation's own, started for every request before anything else, cost
      // three quarters of a cached read's throughput (docs/operations.md#traces).
      new HttpInstrumentation({ disableIncomingRequestInstrumentation: true }),
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        instrumentHooks: false,
        ignorePaths: ({ url }) => UNTRACED.has(url.split('?')[0] as string),
        // The server span is named as HTTP server spans are: method and route.
        requestHook: (span, request) => span.updateName(`${request.method} ${request.routeOptions.url ?? ''}`.trim()),
      }),
      new PgInstrumentation(),
      new IORedisInstrumentation(),
    ],
  })
  await waitForAllMessagesAcknowledged()

  return {
    shutdown: async () => {
      let timer: NodeJS.Timeout | undefined
      const waited = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_WAIT_MS)
        timer.unref()
      })
      await Promise.race([provider.shutdown().catch(() => {}), waited])
      clearTimeout(timer)
    },
  }
}

/**
 * The server span of a product read answered by the catalog cache's front door, which Fastify (and so
 * @fastify/otel) never sees: started when the read arrived (`startedAt`, in `performance.now()` time), ended now.
 */
export function traceCacheHit(request: IncomingMessage, route: string, startedAt: number): void {
  const parent = propagation.extract(ROOT_CONTEXT, request.headers)
  const span = trace.getTracer('shop-api').startSpan(
    `GET ${route}`,
    {
      kind: SpanKind.SERVER,
      startTime: performance.timeOrigin + startedAt,
      attributes: {
        'http.request.method': 'GET',
        'url.path': (request.url ?? '').split('?')[0] as string,
        'http.route': route,
        'http.response.status_code': 200,
      },
    },
    parent,
  )
  span.end()
}
