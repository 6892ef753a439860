import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPgSchema, type PgSchema } from '../helpers/pg-schema.js'
import {
  ADMIN,
  buildInstall,
  children,
  CLIENT,
  type Collector,
  json,
  SERVER,
  type Service,
  serviceEnv,
  startCollector,
  startService,
} from '../helpers/tracing.js'

// PostgreSQL queries and Redis commands in the traces: the compiled service on a throw-away schema of the test
// server (TEST_DATABASE_URL) with the auth rate limit in Redis (TEST_REDIS_URL). CI sets both.
const databaseUrl = process.env.TEST_DATABASE_URL
const redisUrl = process.env.TEST_REDIS_URL

describe.skipIf(!databaseUrl || !redisUrl || process.platform === 'win32')('OpenTelemetry traces on PostgreSQL and Redis', () => {
  let install = ''
  let schema: PgSchema | undefined
  let collector: Collector
  let service: Service | undefined

  beforeAll(async () => {
    install = await buildInstall('shop-tracing-pg-')
    schema = await createPgSchema(databaseUrl as string, 'tracing')
    collector = await startCollector()
    const url = new URL(databaseUrl as string)
    url.searchParams.set('options', `-c search_path=${schema.name}`)
    service = await startService(
      install,
      serviceEnv(install, {
        DATABASE_URL: url.href,
        REDIS_URL: redisUrl as string,
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      }),
    )
  }, 60_000)
  afterAll(async () => {
    await service?.stop()
    for (const child of children) child.kill('SIGKILL')
    await collector?.close()
    await schema?.drop()
    if (install) rmSync(install, { recursive: true, force: true })
  })

  it("traces a request's queries and Redis commands inside the request's trace", async () => {
    const login = await json((service as Service).base, '/auth/login', { method: 'POST', body: ADMIN })
    expect(login.status).toBe(200)
    const request = await collector.waitFor((span) => span.kind === SERVER && span.attributes['http.route'] === '/auth/login', 'POST /auth/login')
    expect(request.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 200 })
    // The login reads the user (PostgreSQL) and counts the attempt in Redis (the auth rate limit).
    // The statement is Kysely's, with its parameters as placeholders: no value (an e-mail, a hash) is in a span.
    const query = await collector.waitFor(
      (span) =>
        span.traceId === request.traceId &&
        span.kind === CLIENT &&
        span.attributes['db.system.name'] === 'postgresql' &&
        /^select \* from "users" where "email" = \$1/.test(String(span.attributes['db.query.text'])),
      'the login reading the user from PostgreSQL',
    )
    expect(query.name).toMatch(/^pg\.query:SELECT/)
    const command = await collector.waitFor(
      (span) => span.traceId === request.traceId && span.kind === CLIENT && span.attributes['db.system.name'] === 'redis' && span.name === 'incr',
      'the login counted in Redis',
    )
    expect(command.attributes).toMatchObject({ 'server.address': '127.0.0.1', 'db.operation.name': 'MULTI incr' })
  })
})
