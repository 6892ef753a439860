import type { Config } from './index.js'
import type { Reader } from './read.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

export type TracingProtocol = 'http/protobuf' | 'http/json'

/** Logs, Prometheus metrics (plugins/metrics.ts) and OpenTelemetry traces (src/tracing.ts). */
export function readObservability(read: Reader, { port }: Pick<Config, 'port'>): Pick<Config, 'logLevel' | 'metrics' | 'tracing'> {
  const logLevel = read.string('LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) read.problem(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${logLevel}")`)
  const metricsEnabled = read.boolean('METRICS_ENABLED', false)
  // 0 picks a free port (tests); unset serves /metrics on the main port.
  const metricsPort = read.string('METRICS_PORT') === undefined ? null : read.integer('METRICS_PORT', 0, 0, 65535)
  if (metricsPort !== null && metricsPort !== 0 && metricsPort === port) read.problem(`METRICS_PORT must differ from PORT (both ${port})`)
  return { logLevel, metrics: Object.freeze({ enabled: metricsEnabled, port: metricsPort }), tracing: readTracing(read) }
}

/**
 * The OpenTelemetry variables the service itself reads, with their standard meanings: the traces' address is
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or OTEL_EXPORTER_OTLP_ENDPOINT (a collector's base address) plus
 * /v1/traces; the protocol is http/protobuf unless said otherwise; OTEL_SDK_DISABLED=true turns traces off.
 * The SDK reads the rest itself (service name, headers, sampler, batching).
 */
function readTracing(read: Reader): Config['tracing'] {
  const traces = read.string('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const base = read.string('OTEL_EXPORTER_OTLP_ENDPOINT')
  const disabled = read.boolean('OTEL_SDK_DISABLED', false)
  const protocol = read.string('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? read.string('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf'
  if (disabled || (traces === undefined && base === undefined)) return null
  const url = traces ?? `${(base as string).replace(/\/+$/, '')}/v1/traces`
  if (!/^https?:\/\/[^/\s]+/.test(url)) {
    read.problem(
      `${traces === undefined ? 'OTEL_EXPORTER_OTLP_ENDPOINT' : 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'} must be an absolute http(s) URL (got "${traces ?? base}")`,
    )
  }
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    read.problem(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (got "${protocol}"; for gRPC, use the collector's OTLP/HTTP port, 4318)`)
  }
  return Object.freeze({ url, protocol: protocol === 'http/json' ? 'http/json' : 'http/protobuf' })
}
