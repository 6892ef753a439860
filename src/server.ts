import 'dotenv/config'
import closeWithGrace from 'close-with-grace'
import { ConfigError, loadConfig } from './config.js'
import { listenFailureLine } from './listen-errors.js'
import { routeProcessWarnings } from './process-warnings.js'

// Process warnings (deprecations, the AWS SDK's notice on Node 20) become JSON log lines, not plain text on stderr.
const warnings = routeProcessWarnings()

let config
try {
  config = loadConfig()
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message)
    process.exit(1)
  }
  throw error
}

// Traces (OTEL_EXPORTER_OTLP_ENDPOINT) start before the app is imported: their instrumentations patch Fastify,
// pg, ioredis and node:http as those load. Without the variable, nothing of OpenTelemetry is loaded at all.
const tracing = config.tracing ? await (await import('./tracing.js')).startTracing(config.tracing) : undefined
const { buildApp } = await import('./app.js')
const { connectDatabase, startupFailureLine, waitForDatabase } = await import('./db/connect.js')

// A database that is not up yet (a container starting next to this one) is waited for, for a
// bounded time; then one line says why the service cannot start, not a stack trace.
const database = connectDatabase(config.databaseUrl, { timeouts: config.postgres, preparedStatements: config.postgres.preparedStatements })
let app
try {
  await waitForDatabase(database, config.databaseUrl, config.postgres.startupTimeoutMs)
  app = await buildApp(config, { database })
} catch (error) {
  const line = startupFailureLine(error, config.databaseUrl)
  if (line === undefined) throw error
  console.error(line)
  await database.db.destroy().catch(() => {})
  process.exit(1)
}
warnings.attach(app.log)

// SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close the database.
closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'closing after an uncaught error')
  else app.log.info({ signal }, 'shutting down')
  await app.close()
  await database.db.destroy()
  await tracing?.shutdown()
})

try {
  await app.listen({ port: config.port, host: config.host })
} catch (error) {
  // A port in use (or privileged, or a HOST that is not this machine's): one line, as for a bad variable.
  const line = listenFailureLine(error, config)
  if (line === undefined) throw error
  console.error(line)
  await app.close().catch(() => {})
  await database.db.destroy().catch(() => {})
  await tracing?.shutdown().catch(() => {})
  process.exit(1)
}
if (config.tracing) app.log.info({ url: config.tracing.url, protocol: config.tracing.protocol }, 'traces are sent to the OpenTelemetry collector')
