import { mkdtempSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'

const dataDir = () => mkdtempSync(join(tmpdir(), 'shop-config-'))

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ DATA_DIR: dataDir(), ...env })
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
  return []
}

describe('configuration', () => {
  it('has working defaults: SQLite in the data folder, port 3000, 10 attempts per 15 minutes, local images', () => {
    const dir = dataDir()
    const config = loadConfig({ DATA_DIR: dir })
    expect(config).toMatchObject({
      nodeEnv: 'development',
      port: 3000,
      host: '0.0.0.0',
      publicUrl: 'http://localhost:3000',
      databaseUrl: `sqlite:${join(dir, 'shop.db')}`,
      jwtExpiresIn: '1d',
      admin: null,
      authRateLimit: { max: 10, windowMs: 900000 },
      redisUrl: null,
      trustProxy: false,
      logLevel: 'info',
      corsOrigin: null,
      storage: { driver: 'local', uploadDir: join(dir, 'uploads') },
    })
    expect(Object.isFrozen(config)).toBe(true)
  })

  it('CATALOG_CACHE_MAX_BYTES: 64 MiB by default, 0 turns the cache off, anything but a byte count is refused', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).catalogCacheMaxBytes).toBe(67108864)
    expect(loadConfig({ DATA_DIR: dataDir(), CATALOG_CACHE_MAX_BYTES: '0' }).catalogCacheMaxBytes).toBe(0)
    expect(problemsOf({ CATALOG_CACHE_MAX_BYTES: '64MB' })).toEqual(['CATALOG_CACHE_MAX_BYTES must be an integer between 0 and 17179869184 (got "64MB")'])
  })

  it('IMPORT_MAX_ROWS and IMPORT_MAX_BYTES: 10000 rows and 20 MiB by default; anything but a count stops the start-up with one line', () => {
    expect(loadConfig({ DATA_DIR: dataDir() })).toMatchObject({ importMaxRows: 10000, importMaxBytes: 20971520 })
    expect(loadConfig({ DATA_DIR: dataDir(), IMPORT_MAX_ROWS: '500', IMPORT_MAX_BYTES: '1048576' })).toMatchObject({
      importMaxRows: 500,
      importMaxBytes: 1048576,
    })
    expect(problemsOf({ IMPORT_MAX_ROWS: '0' })).toEqual(['IMPORT_MAX_ROWS must be an integer between 1 and 1000000 (got "0")'])
    expect(problemsOf({ IMPORT_MAX_BYTES: '20MB' })).toEqual(['IMPORT_MAX_BYTES must be an integer between 1 and 1073741824 (got "20MB")'])
  })

  it('PRICES_INCLUDE_TAX: true by default, true/false/1/0 in any case; anything else stops the start-up with one line', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).pricesIncludeTax).toBe(true)
    for (const no of ['false', 'FALSE', '0']) expect(loadConfig({ DATA_DIR: dataDir(), PRICES_INCLUDE_TAX: no }).pricesIncludeTax, no).toBe(false)
    for (const yes of ['true', 'True', '1']) expect(loadConfig({ DATA_DIR: dataDir(), PRICES_INCLUDE_TAX: yes }).pricesIncludeTax, yes).toBe(true)
    expect(problemsOf({ PRICES_INCLUDE_TAX: 'yes' })).toEqual(['PRICES_INCLUDE_TAX must be true or false (got "yes")'])
  })

  it('SHOP_COUNTRY: ES by default; an ISO 3166-1 alpha-2 code in upper case, anything else stops the start-up with one line', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).shopCountry).toBe('ES')
    expect(loadConfig({ DATA_DIR: dataDir(), SHOP_COUNTRY: ' PT ' }).shopCountry).toBe('PT')
    for (const bad of ['es', 'XX', 'ESP', 'Spain']) {
      expect(problemsOf({ SHOP_COUNTRY: bad })).toEqual([`SHOP_COUNTRY must be an ISO 3166-1 alpha-2 country code in upper case, such as ES (got "${bad}")`])
    }
  })

  it('SHOP_TIMEZONE: UTC by default; an IANA time zone, anything else stops the start-up with one line', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).shopTimezone).toBe('UTC')
    expect(loadConfig({ DATA_DIR: dataDir(), SHOP_TIMEZONE: ' Europe/Madrid ' }).shopTimezone).toBe('Europe/Madrid')
    expect(loadConfig({ DATA_DIR: dataDir(), SHOP_TIMEZONE: 'Atlantic/Canary' }).shopTimezone).toBe('Atlantic/Canary')
    for (const bad of ['Europe/Atlantis', 'CEST+2', 'Madrid']) {
      expect(problemsOf({ SHOP_TIMEZONE: bad })).toEqual([`SHOP_TIMEZONE must be an IANA time zone such as Europe/Madrid or UTC (got "${bad}")`])
    }
  })

  it('WITHDRAWAL_DAYS (14, never fewer) and RETURN_DAYS (30): whole days; anything else stops the start-up with one line', () => {
    const config = loadConfig({ DATA_DIR: dataDir() })
    expect([config.withdrawalDays, config.returnDays]).toEqual([14, 30])
    const longer = loadConfig({ DATA_DIR: dataDir(), WITHDRAWAL_DAYS: '30', RETURN_DAYS: '100' })
    expect([longer.withdrawalDays, longer.returnDays]).toEqual([30, 100])
    expect(problemsOf({ WITHDRAWAL_DAYS: '13' })).toEqual(['WITHDRAWAL_DAYS must be an integer between 14 and 3650 (got "13")'])
    expect(problemsOf({ WITHDRAWAL_DAYS: '14d' })).toEqual(['WITHDRAWAL_DAYS must be an integer between 14 and 3650 (got "14d")'])
    expect(problemsOf({ RETURN_DAYS: '0' })).toEqual(['RETURN_DAYS must be an integer between 1 and 3650 (got "0")'])
    expect(problemsOf({ RETURN_DAYS: '-1' })).toEqual(['RETURN_DAYS must be an integer between 1 and 3650 (got "-1")'])
  })

  it('JWT_EXPIRES_IN: a bare number is seconds; zero or a word is refused', () => {
    expect(loadConfig({ NODE_ENV: 'test', DATA_DIR: dataDir(), JWT_EXPIRES_IN: '3600' }).jwtExpiresIn).toBe('3600s')
    expect(loadConfig({ NODE_ENV: 'test', DATA_DIR: dataDir(), JWT_EXPIRES_IN: '12h' }).jwtExpiresIn).toBe('12h')
    expect(problemsOf({ JWT_EXPIRES_IN: '0' })).toEqual(['JWT_EXPIRES_IN must be a duration such as 1d, 12h, 3600 or 30m (got "0")'])
    expect(problemsOf({ JWT_EXPIRES_IN: 'forever' })).toHaveLength(1)
  })

  it('reports every bad variable on its own line', () => {
    const problems = problemsOf({
      PORT: 'eighty',
      DATABASE_URL: 'mysql://x',
      AUTH_RATE_LIMIT_MAX: '-1',
      LOG_LEVEL: 'loud',
      REDIS_URL: 'localhost:6379',
      JWT_SECRET: 'short',
      STORAGE_DRIVER: 'ftp',
    })
    expect(problems).toHaveLength(7)
    expect(problems[0]).toBe('PORT must be an integer between 0 and 65535 (got "eighty")')
    expect(problems.join('\n')).toContain('DATABASE_URL')
    expect(problems.join('\n')).toContain('AUTH_RATE_LIMIT_MAX')
    expect(problems.join('\n')).toContain('JWT_SECRET must be at least 32 characters long')
    const message = new ConfigError(problems).message.split('\n')
    expect(message).toHaveLength(8)
  })

  it('refuses to start in production without a strong JWT_SECRET', () => {
    expect(problemsOf({ NODE_ENV: 'production' })).toEqual(['JWT_SECRET is required when NODE_ENV=production (at least 32 random characters)'])
    expect(problemsOf({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(31) })).toEqual(['JWT_SECRET must be at least 32 characters long'])
    expect(problemsOf({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32) })).toEqual([
      'JWT_SECRET is too weak for production: fewer than 12 different characters (use e.g. openssl rand -base64 48)',
    ])
    expect(problemsOf({ NODE_ENV: 'production', JWT_SECRET: 'ab'.repeat(40) })).toHaveLength(1)
    expect(problemsOf({ NODE_ENV: 'production', JWT_SECRET: 'kQ9vX2mLp7RtZ4wB8nYc3HdF6gJs1aEu' })).toEqual([])
    // Outside production a simple secret is accepted (tests, local runs).
    expect(problemsOf({ NODE_ENV: 'development', JWT_SECRET: 'x'.repeat(32) })).toEqual([])
  })

  it('outside production generates a secret once and keeps it in the data folder', () => {
    const dir = dataDir()
    const first = loadConfig({ DATA_DIR: dir })
    const second = loadConfig({ DATA_DIR: dir })
    expect(first.jwtSecret.length).toBeGreaterThanOrEqual(32)
    expect(second.jwtSecret).toBe(first.jwtSecret)
    expect(readFileSync(join(dir, '.jwt-secret'), 'utf8').trim()).toBe(first.jwtSecret)
    expect(statSync(join(dir, '.jwt-secret')).mode & 0o777).toBe(0o600)
    expect(loadConfig({ DATA_DIR: dataDir() }).jwtSecret).not.toBe(first.jwtSecret)
  })

  it('takes the admin bootstrap from ADMIN_EMAIL and ADMIN_PASSWORD, lower-casing the e-mail', () => {
    expect(loadConfig({ DATA_DIR: dataDir(), ADMIN_EMAIL: 'Boss@Shop.test', ADMIN_PASSWORD: 'secret1' }).admin).toEqual({
      email: 'boss@shop.test',
      password: 'secret1',
      name: 'Admin',
    })
    expect(problemsOf({ ADMIN_EMAIL: 'boss@shop.test' })).toEqual(['ADMIN_PASSWORD must be at least 6 characters when ADMIN_EMAIL is set'])
    expect(problemsOf({ ADMIN_PASSWORD: 'secret1' })).toEqual(['ADMIN_EMAIL must be a valid e-mail address when ADMIN_PASSWORD is set'])
  })

  it('reads TRUST_PROXY as a boolean, a hop count or addresses', () => {
    expect(loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: 'true' }).trustProxy).toBe(true)
    expect(loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: '2' }).trustProxy).toBe(2)
    expect(loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: '10.0.0.0/8,127.0.0.1' }).trustProxy).toBe('10.0.0.0/8,127.0.0.1')
    expect(problemsOf({ TRUST_PROXY: 'maybe' })).toHaveLength(1)
  })

  it('turns traces on with the standard OpenTelemetry variables, and only with an endpoint', () => {
    const tracing = (env: Record<string, string>) => loadConfig({ DATA_DIR: dataDir(), ...env }).tracing
    expect(tracing({})).toBeNull()
    expect(tracing({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeNull()
    // A collector's base address: traces go to its /v1/traces, in protobuf unless said otherwise.
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318/' })).toEqual({ url: 'http://jaeger:4318/v1/traces', protocol: 'http/protobuf' })
    // The traces' own address is used as it is, and wins; so does the traces' own protocol.
    expect(
      tracing({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otel.example.com/ingest',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      }),
    ).toEqual({ url: 'https://otel.example.com/ingest', protocol: 'http/json' })
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318', OTEL_SDK_DISABLED: 'true' })).toBeNull()
    expect(problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'jaeger:4318' })).toEqual([
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http(s) URL (got "jaeger:4318")',
    ])
    expect(problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toEqual([
      `OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (got "grpc"; for gRPC, use the collector's OTLP/HTTP port, 4318)`,
    ])
    expect(problemsOf({ OTEL_SDK_DISABLED: 'yes' })).toHaveLength(1)
  })

  it('needs the bucket and public URL for the s3 image host', () => {
    expect(problemsOf({ STORAGE_DRIVER: 's3' })).toEqual([
      'S3_BUCKET is required when STORAGE_DRIVER=s3',
      'S3_PUBLIC_URL must be an absolute http(s) URL when STORAGE_DRIVER=s3',
    ])
  })
})

// The bounded waits toward Redis and S3, and where uploads are spooled.
const S3 = { STORAGE_DRIVER: 's3', S3_BUCKET: 'b', S3_PUBLIC_URL: 'https://cdn.example.com' }

describe('configuration of dependency timeouts and the upload spool', () => {
  it('defaults: Redis 1 s to connect and 200 ms a command; S3 3 s to connect, 5 s of silence, 30 s a call, 2 attempts; spool in <DATA_DIR>/tmp', () => {
    const dir = dataDir()
    const config = loadConfig({ DATA_DIR: dir, ...S3 })
    expect(config.redisTimeouts).toEqual({ connectMs: 1000, commandMs: 200 })
    expect(config.storage).toMatchObject({ connectTimeoutMs: 3000, socketTimeoutMs: 5000, requestTimeoutMs: 30_000, maxAttempts: 2 })
    expect(config.uploadTmpDir).toBe(join(dir, 'tmp'))
    expect(Object.isFrozen(config.redisTimeouts)).toBe(true)
  })

  it('reads each variable', () => {
    const config = loadConfig({
      DATA_DIR: dataDir(),
      ...S3,
      REDIS_CONNECT_TIMEOUT_MS: '2500',
      REDIS_COMMAND_TIMEOUT_MS: '50',
      S3_CONNECT_TIMEOUT_MS: '1000',
      S3_SOCKET_TIMEOUT_MS: '2000',
      S3_REQUEST_TIMEOUT_MS: '60000',
      S3_MAX_ATTEMPTS: '4',
      UPLOAD_TMP_DIR: '/var/tmp/shop',
    })
    expect(config.redisTimeouts).toEqual({ connectMs: 2500, commandMs: 50 })
    expect(config.storage).toMatchObject({ connectTimeoutMs: 1000, socketTimeoutMs: 2000, requestTimeoutMs: 60_000, maxAttempts: 4 })
    expect(config.uploadTmpDir).toBe('/var/tmp/shop')
  })

  it('one line per bad value', () => {
    expect(
      problemsOf({
        ...S3,
        REDIS_CONNECT_TIMEOUT_MS: 'soon',
        REDIS_COMMAND_TIMEOUT_MS: '0',
        S3_CONNECT_TIMEOUT_MS: '-1',
        S3_SOCKET_TIMEOUT_MS: '1.5',
        S3_REQUEST_TIMEOUT_MS: '999999999',
        S3_MAX_ATTEMPTS: '0',
      }),
    ).toEqual([
      'REDIS_CONNECT_TIMEOUT_MS must be an integer between 10 and 60000 (got "soon")',
      'REDIS_COMMAND_TIMEOUT_MS must be an integer between 10 and 60000 (got "0")',
      'S3_CONNECT_TIMEOUT_MS must be an integer between 10 and 120000 (got "-1")',
      'S3_SOCKET_TIMEOUT_MS must be an integer between 10 and 600000 (got "1.5")',
      'S3_REQUEST_TIMEOUT_MS must be an integer between 10 and 600000 (got "999999999")',
      'S3_MAX_ATTEMPTS must be an integer between 1 and 10 (got "0")',
    ])
  })
})

// Every variable that is a switch: true/false/1/0 in any case; anything else stops the start-up with one line.
describe('boolean variables', () => {
  const switches = {
    S3_FORCE_PATH_STYLE: (env: Record<string, string>) => {
      const storage = loadConfig({ DATA_DIR: dataDir(), ...S3, ...env }).storage
      return storage.driver === 's3' && storage.forcePathStyle
    },
    WEBHOOKS_ALLOW_PRIVATE: (env: Record<string, string>) => loadConfig({ DATA_DIR: dataDir(), ...env }).webhooksAllowPrivate,
    METRICS_ENABLED: (env: Record<string, string>) => loadConfig({ DATA_DIR: dataDir(), ...env }).metrics.enabled,
    // OTEL_SDK_DISABLED=true turns traces off even with an endpoint.
    OTEL_SDK_DISABLED: (env: Record<string, string>) =>
      loadConfig({ DATA_DIR: dataDir(), OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', ...env }).tracing === null,
  }

  it.each(Object.entries(switches))('%s: true/false/1/0 in any case, false when unset', (name, read) => {
    expect(read({})).toBe(false)
    for (const yes of ['true', 'TRUE', 'True', '1', ' true ']) expect(read({ [name]: yes }), yes).toBe(true)
    for (const no of ['false', 'FALSE', 'False', '0', '']) expect(read({ [name]: no }), no).toBe(false)
  })

  it.each(Object.keys(switches))('%s: anything else (yes, on, 2, tru) stops the start-up with one line naming it', (name) => {
    const extra = name === 'S3_FORCE_PATH_STYLE' ? S3 : {}
    for (const bad of ['yes', 'no', 'on', 'off', '2', 'tru', 'enabled']) {
      expect(problemsOf({ ...extra, [name]: bad })).toEqual([`${name} must be true or false (got "${bad}")`])
    }
  })

  it('TRUST_PROXY reads true and false in any case too; a number stays a hop count', () => {
    expect(loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: 'TRUE' }).trustProxy).toBe(true)
    expect(loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: 'False' }).trustProxy).toBe(false)
    expect(loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: '1' }).trustProxy).toBe(1)
    expect(problemsOf({ TRUST_PROXY: 'yes' })).toEqual(['TRUST_PROXY must be true, false, a hop count or a list of addresses (got "yes")'])
  })
})

// src/config/: the parsing helpers in one module, and one module per section, each usable on its own.
describe('the configuration in pieces', () => {
  it('the reader: integers, booleans, durations and URLs, one line per bad value, never a throw', async () => {
    const { createReader } = await import('../src/config/read.js')
    const read = createReader({
      N: ' 42 ',
      BAD_N: '4x',
      B: 'On',
      D: '90m',
      BAD_D: 'soon',
      U: 'https://shop.example.com/',
      BAD_U: 'shop.example.com',
      BLANK: '  ',
    })
    expect(read.string('N')).toBe('42')
    expect(read.string('BLANK')).toBeUndefined()
    expect(read.integer('N', 1, 0, 100)).toBe(42)
    expect(read.integer('BAD_N', 7, 0, 100)).toBe(7)
    expect(read.integer('MISSING', 7, 0, 100)).toBe(7)
    expect(read.boolean('B', false)).toBe(false)
    expect(read.boolean('MISSING', true)).toBe(true)
    expect(read.duration('D', '1h')).toBe(5_400_000)
    expect(read.duration('BAD_D', '1h')).toBe(3_600_000)
    expect(read.httpUrl('U', 'http://localhost')).toBe('https://shop.example.com')
    expect(read.httpUrl('MISSING', 'http://localhost:3000/')).toBe('http://localhost:3000')
    read.httpUrl('BAD_U', 'http://localhost')
    expect(read.problems).toEqual([
      'BAD_N must be an integer between 0 and 100 (got "4x")',
      'B must be true or false (got "On")',
      'BAD_D must be a duration of at least one second such as 30d, 12h, 3600 or 30m (got "soon")',
      'BAD_U must be an absolute http(s) URL (got "shop.example.com")',
    ])
  })

  it('a section reads its own variables, without the rest of the configuration', async () => {
    const { createReader } = await import('../src/config/read.js')
    const { readStorage } = await import('../src/config/storage.js')
    const read = createReader({ STORAGE_DRIVER: 's3', S3_BUCKET: 'b', S3_PUBLIC_URL: 'https://cdn.example.com/', S3_FORCE_PATH_STYLE: '1' })
    expect(readStorage(read, { dataDir: '/srv/shop' })).toMatchObject({
      storage: { driver: 's3', bucket: 'b', publicUrl: 'https://cdn.example.com', forcePathStyle: true, uploadDir: '/srv/shop/uploads' },
      uploadTmpDir: '/srv/shop/tmp',
    })
    expect(read.problems).toEqual([])
  })
})

// ADMIN_*: the users module's own rules for an account, in the users module (src/modules/users/admin-account.ts).
describe('the first admin (ADMIN_EMAIL, ADMIN_PASSWORD, ADMIN_NAME)', () => {
  it('is checked by the users module: the API rules for an account, one line naming the variable', async () => {
    const { adminFromVariables } = await import('../src/modules/users/admin-account.js')
    expect(adminFromVariables({})).toEqual({ admin: null })
    expect(adminFromVariables({ password: '' })).toEqual({ admin: null })
    expect(adminFromVariables({ email: 'Boss@Shop.test', password: 'secret1' })).toEqual({
      admin: { email: 'boss@shop.test', password: 'secret1', name: 'Admin' },
    })
    expect(adminFromVariables({ email: 'boss@shop.test', password: 'secret1', name: 'Boss' })).toEqual({
      admin: { email: 'boss@shop.test', password: 'secret1', name: 'Boss' },
    })
    expect(adminFromVariables({ email: 'boss@shop.test' })).toEqual({ problem: 'ADMIN_PASSWORD must be at least 6 characters when ADMIN_EMAIL is set' })
    expect(adminFromVariables({ email: 'boss@shop.test', password: 'x'.repeat(129) })).toEqual({ problem: 'ADMIN_PASSWORD must be at most 128 characters' })
    expect(adminFromVariables({ password: 'secret1' })).toEqual({ problem: 'ADMIN_EMAIL must be a valid e-mail address when ADMIN_PASSWORD is set' })
    expect(adminFromVariables({ email: 'boss@shop.test', password: 'secret1', name: 'x'.repeat(101) })).toEqual({
      problem: 'ADMIN_NAME must be 1 to 100 characters',
    })
  })

  it('loadConfig takes its answer as it is', () => {
    expect(problemsOf({ ADMIN_EMAIL: 'boss@shop.test', ADMIN_PASSWORD: 'secret1', ADMIN_NAME: 'x'.repeat(101) })).toEqual([
      'ADMIN_NAME must be 1 to 100 characters',
    ])
  })
})
