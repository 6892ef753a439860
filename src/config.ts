import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { accountProblem } from './modules/users/users.schemas.js'

/** Everything the service reads from its environment, validated once at boot. */
export interface Config {
  readonly nodeEnv: 'development' | 'production' | 'test'
  readonly port: number
  readonly host: string
  readonly publicUrl: string
  readonly dataDir: string
  readonly databaseUrl: string
  readonly jwtSecret: string
  readonly jwtExpiresIn: string
  readonly admin: { readonly email: string; readonly password: string; readonly name: string } | null
  readonly authRateLimit: { readonly max: number; readonly windowMs: number }
  readonly redisUrl: string | null
  /** Bounded waits toward Redis (the auth rate limit fails open, so these bound what an outage costs a login). */
  readonly redisTimeouts: { readonly connectMs: number; readonly commandMs: number }
  readonly trustProxy: boolean | number | string
  readonly logLevel: string
  readonly corsOrigin: string | null
  /** Memory the product read cache may hold, every byte of its entries counted; 0 turns it off. */
  readonly catalogCacheMaxBytes: number
  readonly storage: StorageConfig
  readonly http: HttpTimeouts
  /** Bounded waits toward PostgreSQL (unused on SQLite). */
  readonly postgres: { readonly connectTimeoutMs: number; readonly statementTimeoutMs: number; readonly startupTimeoutMs: number }
  /** Where an uploaded image is spooled while it streams in, before it reaches the image host. */
  readonly uploadTmpDir: string
  readonly payments: PaymentsConfig
  /**
   * A product with this much stock or less is "low on stock": on the admin dashboard (GET /admin/api/stats), and
   * stock.low fires when a change takes its stock from above this to at or below it (src/modules/outbox).
   */
  readonly lowStockThreshold: number
  /** Prometheus metrics (plugins/metrics.ts): off unless METRICS_ENABLED=true; with a port, on a server of their own. */
  readonly metrics: { readonly enabled: boolean; readonly port: number | null }
  /**
   * OpenTelemetry traces (src/tracing.ts), sent over OTLP/HTTP to `url` when OTEL_EXPORTER_OTLP_ENDPOINT (or
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Null otherwise: then nothing of OpenTelemetry is loaded.
   */
  readonly tracing: { readonly url: string; readonly protocol: TracingProtocol } | null
  /** Sessions and password reset (src/modules/sessions). */
  readonly sessions: SessionsConfig
  readonly mail: MailConfig
  /**
   * WEBHOOKS_ALLOW_PRIVATE=true lets webhook URLs reach loopback, private, link-local and other non-public
   * addresses (tests, an internal network); off, such URLs are refused at creation and at each delivery.
   */
  readonly webhooksAllowPrivate: boolean
}

export interface SessionsConfig {
  /** Each refresh token is valid this long from its own issue. */
  readonly refreshTokenTtlMs: number
  /**
   * A spent refresh token presented again this soon after its rotation is a duplicate (tabs refreshing at
   * once) and gets the same successor pair; later, it is a theft. 0: every second presentation is a theft.
   */
  readonly refreshReuseGraceMs: number
  /** A password-reset link is valid this long. */
  readonly resetTokenTtlMs: number
  /** The storefront's address, without a trailing slash: reset links point there. */
  readonly shopUrl: string
}

/** E-mail (src/modules/outbox/mail): SMTP when `smtpUrl` is set, else .eml files under DATA_DIR/mail. */
export interface MailConfig {
  /** smtp://[user:pass@]host:port (plain or STARTTLS) or smtps://…; null writes .eml files instead. */
  readonly smtpUrl: string | null
  readonly from: string
  /** Who gets the admins' e-mails (new order, low stock); empty: nobody. */
  readonly adminNotify: readonly string[]
  /** Bounded waits toward the SMTP server: connecting, its greeting, and silence on the socket. */
  readonly timeoutMs: number
}

/** Payments (src/modules/payments): `manual` by default, `stripe` when STRIPE_SECRET_KEY is set. */
export interface PaymentsConfig {
  readonly provider: 'manual' | 'stripe'
  /** The shop's one currency, ISO 4217 in upper case. */
  readonly currency: string
  /** A pending order still unpaid this long after its creation is cancelled; 0 turns it off. */
  readonly orderPaymentTtlMs: number
  readonly stripe: {
    readonly secretKey: string
    readonly publishableKey: string | null
    readonly webhookSecret: string | null
    /** Where the SDK sends its calls; null is Stripe itself. */
    readonly apiUrl: string | null
  } | null
}

export type StorageConfig =
  | { readonly driver: 'local'; readonly uploadDir: string }
  | {
      readonly driver: 's3'
      /** The local image host's folder: files left there since `copy-images --to s3` are redirected to the bucket. */
      readonly uploadDir: string
      readonly bucket: string
      readonly region: string
      readonly endpoint: string | null
      readonly accessKeyId: string | null
      readonly secretAccessKey: string | null
      readonly publicUrl: string
      readonly forcePathStyle: boolean
      /** Bounded waits toward the store: connect and silence on the socket per attempt, a whole call (all attempts). */
      readonly connectTimeoutMs: number
      readonly socketTimeoutMs: number
      readonly requestTimeoutMs: number
      /** Attempts per call; an upload (a streamed body) is never retried by the SDK. */
      readonly maxAttempts: number
    }

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
  }
}

type Env = Record<string, string | undefined>

/** A production JWT_SECRET uses at least this many different characters (a random base64 one of 32 has ~25). */
const MIN_SECRET_CHARACTERS = 12
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
const DURATION = /^\d+(ms|s|m|h|d|w|y)?$|^\d+\s?(seconds?|minutes?|hours?|days?|weeks?)$/

/**
 * Reads the configuration from `env`; collects every problem and throws one ConfigError
 * listing them, one line per bad variable.
 */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = []
  const value = (name: string): string | undefined => {
    const v = env[name]
    return v === undefined || v.trim() === '' ? undefined : v.trim()
  }
  /** A duration written as JWT_EXPIRES_IN is (30d, 12h, 90m, 3600: a bare number is seconds), in milliseconds. */
  const duration = (name: string, fallback: string): number => {
    const raw = value(name) ?? fallback
    const ms = durationMs(raw)
    if (ms === undefined || ms < 1000) {
      problems.push(`${name} must be a duration of at least one second such as 30d, 12h, 3600 or 30m (got "${raw}")`)
      return durationMs(fallback) as number
    }
    return ms
  }
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = value(name)
    if (raw === undefined) return fallback
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be an integer between ${min} and ${max} (got "${raw}")`)
      return fallback
    }
    return Number(raw)
  }

  const nodeEnvRaw = value('NODE_ENV') ?? 'development'
  if (!['development', 'production', 'test'].includes(nodeEnvRaw)) {
    problems.push(`NODE_ENV must be development, production or test (got "${nodeEnvRaw}")`)
  }
  const nodeEnv = (['production', 'test'].includes(nodeEnvRaw) ? nodeEnvRaw : 'development') as Config['nodeEnv']

  const port = integer('PORT', 3000, 0, 65535)
  const host = value('HOST') ?? '0.0.0.0'
  const dataDir = resolve(value('DATA_DIR') ?? './data')

  let publicUrl = value('PUBLIC_URL') ?? `http://localhost:${port}`
  if (!/^https?:\/\/[^/\s]+/.test(publicUrl)) {
    problems.push(`PUBLIC_URL must be an absolute http(s) URL (got "${publicUrl}")`)
  }
  publicUrl = publicUrl.replace(/\/+$/, '')

  const databaseUrl = value('DATABASE_URL') ?? `sqlite:${join(dataDir, 'shop.db')}`
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    problems.push('DATABASE_URL must start with sqlite: or postgres:// (got another scheme)')
  }

  const rawExpiresIn = value('JWT_EXPIRES_IN') ?? '1d'
  if (!DURATION.test(rawExpiresIn) || !/[1-9]/.test(rawExpiresIn)) {
    problems.push(`JWT_EXPIRES_IN must be a duration such as 1d, 12h, 3600 or 30m (got "${rawExpiresIn}")`)
  }
  // A bare number is seconds, as in most JWT libraries (fast-jwt itself would read milliseconds).
  const jwtExpiresIn = /^\d+$/.test(rawExpiresIn) ? `${rawExpiresIn}s` : rawExpiresIn

  let jwtSecret = value('JWT_SECRET') ?? ''
  if (jwtSecret !== '' && jwtSecret.length < 32) {
    problems.push('JWT_SECRET must be at least 32 characters long')
  } else if (jwtSecret === '' && nodeEnv === 'production') {
    problems.push('JWT_SECRET is required when NODE_ENV=production (at least 32 random characters)')
  } else if (nodeEnv === 'production' && new Set(jwtSecret).size < MIN_SECRET_CHARACTERS) {
    // 32 characters of one or two kinds ("aaaa…", "abab…") are guessable however long they are.
    problems.push(`JWT_SECRET is too weak for production: fewer than ${MIN_SECRET_CHARACTERS} different characters (use e.g. openssl rand -base64 48)`)
  }

  const adminEmail = value('ADMIN_EMAIL')
  const adminPassword = env.ADMIN_PASSWORD
  let admin: Config['admin'] = null
  if (adminEmail !== undefined || (adminPassword !== undefined && adminPassword !== '')) {
    // The API's own rules for an account: an admin the log-in form would refuse could never log in.
    const candidate = { email: adminEmail ?? '', password: adminPassword ?? '', name: value('ADMIN_NAME') ?? 'Admin' }
    const problem = accountProblem(candidate)
    if (problem?.field === 'email') {
      problems.push('ADMIN_EMAIL must be a valid e-mail address when ADMIN_PASSWORD is set')
    } else if (problem?.field === 'password') {
      problems.push(
        candidate.password.length < 6
          ? 'ADMIN_PASSWORD must be at least 6 characters when ADMIN_EMAIL is set'
          : 'ADMIN_PASSWORD must be at most 128 characters',
      )
    } else if (problem?.field === 'name') {
      problems.push('ADMIN_NAME must be 1 to 100 characters')
    } else {
      admin = { ...candidate, email: candidate.email.toLowerCase() }
    }
  }

  const authRateLimit = {
    max: integer('AUTH_RATE_LIMIT_MAX', 10, 1, 1_000_000),
    windowMs: integer('AUTH_RATE_LIMIT_WINDOW_MS', 900_000, 1000, 86_400_000 * 7),
  }

  const redisUrl = value('REDIS_URL') ?? null
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    problems.push('REDIS_URL must start with redis:// or rediss://')
  }
  // Redis answers in well under a millisecond; a command that takes 200 ms is an outage, not load.
  const redisTimeouts = {
    connectMs: integer('REDIS_CONNECT_TIMEOUT_MS', 1000, 10, 60_000),
    commandMs: integer('REDIS_COMMAND_TIMEOUT_MS', 200, 10, 60_000),
  }

  const trustProxy = parseTrustProxy(value('TRUST_PROXY'), problems)

  const logLevel = value('LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${logLevel}")`)
  }

  const storage = parseStorage(env, value, integer, dataDir, problems)
  const http = parseHttpTimeouts(integer, problems)

  const catalogCacheMaxBytes = integer('CATALOG_CACHE_MAX_BYTES', 64 * 1024 * 1024, 0, 16 * 1024 * 1024 * 1024)

  // PostgreSQL: every wait is bounded (src/db/connect.ts); 0 turns the statement timeout off (a long migration).
  const postgres = {
    connectTimeoutMs: integer('PG_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    statementTimeoutMs: integer('PG_STATEMENT_TIMEOUT_MS', 5000, 0, 86_400_000),
    startupTimeoutMs: integer('PG_STARTUP_TIMEOUT_MS', 30_000, 0, 3_600_000),
  }

  // Under DATA_DIR rather than os.tmpdir(): /tmp is often a small RAM disk (containers, systemd's
  // PrivateTmp), and DATA_DIR is the volume the operator sized and watches (docs/catalog.md).
  const uploadTmpDir = resolve(value('UPLOAD_TMP_DIR') ?? join(dataDir, 'tmp'))

  const payments = parsePayments(value, problems)
  const mail = parseMail(value, integer, publicUrl, problems)

  const webhooksAllowPrivateRaw = value('WEBHOOKS_ALLOW_PRIVATE') ?? 'false'
  if (!['true', 'false'].includes(webhooksAllowPrivateRaw)) problems.push(`WEBHOOKS_ALLOW_PRIVATE must be true or false (got "${webhooksAllowPrivateRaw}")`)

  const lowStockThreshold = integer('LOW_STOCK_THRESHOLD', 5, 0, 2_147_483_647)
  const metricsEnabled = value('METRICS_ENABLED') ?? 'false'
  if (metricsEnabled !== 'true' && metricsEnabled !== 'false') problems.push(`METRICS_ENABLED must be true or false (got "${metricsEnabled}")`)
  // 0 picks a free port (tests); unset serves /metrics on the main port.
  const metricsPort = value('METRICS_PORT') === undefined ? null : integer('METRICS_PORT', 0, 0, 65535)
  if (metricsPort !== null && metricsPort !== 0 && metricsPort === port) problems.push(`METRICS_PORT must differ from PORT (both ${port})`)
  const tracing = tracingConfig(value, problems)
  const refreshTokenTtlMs = duration('REFRESH_TOKEN_TTL', '30d')
  const resetTokenTtlMs = duration('RESET_TOKEN_TTL', '1h')
  const refreshReuseGraceMs = refreshReuseGrace(value('REFRESH_REUSE_GRACE'), problems)
  let shopUrl = value('SHOP_URL') ?? publicUrl
  if (!/^https?:\/\/[^/\s]+/.test(shopUrl)) problems.push(`SHOP_URL must be an absolute http(s) URL (got "${shopUrl}")`)
  shopUrl = shopUrl.replace(/\/+$/, '')

  if (problems.length > 0) throw new ConfigError(problems)

  if (jwtSecret === '') jwtSecret = readOrCreateDevSecret(dataDir)

  return Object.freeze({
    nodeEnv,
    port,
    host,
    publicUrl,
    dataDir,
    databaseUrl,
    jwtSecret,
    jwtExpiresIn,
    admin,
    authRateLimit: Object.freeze(authRateLimit),
    redisUrl,
    redisTimeouts: Object.freeze(redisTimeouts),
    trustProxy,
    logLevel,
    corsOrigin: value('CORS_ORIGIN') ?? null,
    catalogCacheMaxBytes,
    storage: Object.freeze(storage),
    http: Object.freeze(http),
    postgres: Object.freeze(postgres),
    uploadTmpDir,
    payments,
    lowStockThreshold,
    metrics: Object.freeze({ enabled: metricsEnabled === 'true', port: metricsPort }),
    tracing,
    sessions: Object.freeze({ refreshTokenTtlMs, refreshReuseGraceMs, resetTokenTtlMs, shopUrl }),
    webhooksAllowPrivate: webhooksAllowPrivateRaw === 'true',
    mail,
  })
}

// ---- sessions (src/modules/sessions) ----

/** The longest REFRESH_REUSE_GRACE: past a few minutes, a copied refresh token would be a working one. */
const MAX_REFRESH_REUSE_GRACE_MS = 300_000

/** REFRESH_REUSE_GRACE: a duration in JWT_EXPIRES_IN's forms, `10s` by default, 0 (off) to 5 minutes. */
function refreshReuseGrace(raw: string | undefined, problems: string[]): number {
  if (raw === undefined) return 10_000
  const ms = durationMs(raw)
  if (ms === undefined || ms > MAX_REFRESH_REUSE_GRACE_MS) {
    problems.push(`REFRESH_REUSE_GRACE must be a duration of at most 5 minutes such as 10s, 30s or 2m, or 0 to turn it off (got "${raw}")`)
    return 10_000
  }
  return ms
}

// ---- traces (src/tracing.ts) ----

export type TracingProtocol = 'http/protobuf' | 'http/json'

/**
 * The OpenTelemetry variables the service itself reads, with their standard meanings: the traces' address is
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or OTEL_EXPORTER_OTLP_ENDPOINT (a collector's base address) plus
 * /v1/traces; the protocol is http/protobuf unless said otherwise; OTEL_SDK_DISABLED=true turns traces off.
 * The SDK reads the rest itself (service name, headers, sampler, batching).
 */
function tracingConfig(value: (name: string) => string | undefined, problems: string[]): Config['tracing'] {
  const traces = value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const base = value('OTEL_EXPORTER_OTLP_ENDPOINT')
  const disabled = value('OTEL_SDK_DISABLED') ?? 'false'
  if (disabled !== 'true' && disabled !== 'false') problems.push(`OTEL_SDK_DISABLED must be true or false (got "${disabled}")`)
  const protocol = value('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? value('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf'
  if (disabled === 'true' || (traces === undefined && base === undefined)) return null
  const url = traces ?? `${(base as string).replace(/\/+$/, '')}/v1/traces`
  if (!/^https?:\/\/[^/\s]+/.test(url)) {
    problems.push(
      `${traces === undefined ? 'OTEL_EXPORTER_OTLP_ENDPOINT' : 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'} must be an absolute http(s) URL (got "${traces ?? base}")`,
    )
  }
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    problems.push(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (got "${protocol}"; for gRPC, use the collector's OTLP/HTTP port, 4318)`)
  }
  return Object.freeze({ url, protocol: protocol === 'http/json' ? 'http/json' : 'http/protobuf' })
}

// ---- e-mail (src/modules/outbox/mail) ----

const EMAIL = /^[^\s@<>,]+@[^\s@<>,]+\.[^\s@<>,]+$/

function parseMail(
  value: (name: string) => string | undefined,
  integer: (name: string, fallback: number, min: number, max: number) => number,
  publicUrl: string,
  problems: string[],
): MailConfig {
  const smtpUrl = value('SMTP_URL') ?? null
  if (smtpUrl !== null) {
    let parsed: URL | undefined
    try {
      parsed = new URL(smtpUrl)
    } catch {
      parsed = undefined
    }
    // The URL itself may hold a password: never echoed.
    if (!parsed || !['smtp:', 'smtps:'].includes(parsed.protocol) || parsed.hostname === '') {
      problems.push('SMTP_URL must be smtp://[user:pass@]host:port or smtps://[user:pass@]host:port')
    }
  }
  let host = 'localhost'
  try {
    host = new URL(publicUrl).hostname || host
  } catch {
    // PUBLIC_URL's own problem is reported above.
  }
  const given = value('MAIL_FROM')
  // The default takes PUBLIC_URL's host as it is (localhost in development); a given one must be an address.
  const from = given ?? `no-reply@${host}`
  const address = /<([^<>]+)>\s*$/.exec(from)?.[1] ?? from
  if (given !== undefined && !/^[^\s@<>,]+@[^\s@<>,]+$/.test(address.trim()))
    problems.push(`MAIL_FROM must be an e-mail address, optionally with a name: Tienda <no-reply@example.com> (got "${from}")`)
  const adminNotify = (value('ADMIN_NOTIFY_EMAIL') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  const bad = adminNotify.filter((entry) => !EMAIL.test(entry))
  if (bad.length > 0) problems.push(`ADMIN_NOTIFY_EMAIL must be e-mail addresses separated by commas (got "${bad.join(', ')}")`)
  return Object.freeze({
    smtpUrl,
    from,
    adminNotify: Object.freeze(adminNotify.map((entry) => entry.toLowerCase())),
    timeoutMs: integer('SMTP_TIMEOUT_MS', 10_000, 100, 300_000),
  })
}

const DURATION_UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  second: 1000,
  m: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  w: 604_800_000,
  week: 604_800_000,
  y: 31_557_600_000,
}

/** Milliseconds of a duration in JWT_EXPIRES_IN's forms (a bare number is seconds), or undefined. */
export function durationMs(raw: string): number | undefined {
  if (!DURATION.test(raw)) return undefined
  const match = /^(\d+)\s?([a-z]*)$/.exec(raw)
  if (!match) return undefined
  // "days" is "day", "ms" stays "ms"; no unit is seconds.
  const unit = match[2] === '' ? 's' : match[2] === 'ms' ? 'ms' : match[2]!.replace(/s$/, '') || 's'
  const factor = DURATION_UNIT_MS[unit]
  return factor === undefined ? undefined : Number(match[1]) * factor
}

// ---- payments (src/modules/payments) ----

const TTL = /^(\d+)(ms|s|m|h|d)?$/
const TTL_UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

function parsePayments(value: (name: string) => string | undefined, problems: string[]): PaymentsConfig {
  const secretKey = value('STRIPE_SECRET_KEY')
  if (secretKey !== undefined && !/^(sk|rk)_(test|live)_\S+$/.test(secretKey)) {
    problems.push('STRIPE_SECRET_KEY must be a Stripe secret key (sk_test_…, sk_live_… or a restricted rk_… key)')
  }
  const publishableKey = value('STRIPE_PUBLISHABLE_KEY') ?? null
  if (publishableKey !== null && !/^pk_(test|live)_\S+$/.test(publishableKey)) {
    problems.push('STRIPE_PUBLISHABLE_KEY must be a Stripe publishable key (pk_test_… or pk_live_…)')
  }
  const webhookSecret = value('STRIPE_WEBHOOK_SECRET') ?? null
  if (webhookSecret !== null && !/^whsec_\S+$/.test(webhookSecret)) problems.push('STRIPE_WEBHOOK_SECRET must be a webhook signing secret (whsec_…)')
  const apiUrl = value('STRIPE_API_URL') ?? null
  if (apiUrl !== null && !/^https?:\/\/[^/\s:]+(:\d{1,5})?\/?$/.test(apiUrl)) {
    problems.push(`STRIPE_API_URL must be an http(s) URL with a host and an optional port, no path (got "${apiUrl}")`)
  }
  const currency = value('SHOP_CURRENCY') ?? 'EUR'
  if (!/^[A-Z]{3}$/.test(currency)) problems.push(`SHOP_CURRENCY must be a three-letter ISO 4217 code in upper case, such as EUR (got "${currency}")`)

  const provider = secretKey !== undefined ? 'stripe' : 'manual'
  // With Stripe an unpaid order gives its stock back after an hour; with manual payments (bank transfer, cash on
  // delivery) the shop waits for the admin, so it is off unless set.
  let orderPaymentTtlMs = provider === 'stripe' ? 3_600_000 : 0
  const rawTtl = value('ORDER_PAYMENT_TTL')
  if (rawTtl !== undefined) {
    const match = TTL.exec(rawTtl)
    if (!match) problems.push(`ORDER_PAYMENT_TTL must be a duration such as 90s, 30m or 1h, or 0 to turn it off (got "${rawTtl}")`)
    // A bare number is seconds, as JWT_EXPIRES_IN.
    else orderPaymentTtlMs = Number(match[1]) * TTL_UNIT_MS[match[2] ?? 's']!
  }
  return Object.freeze({
    provider,
    currency,
    orderPaymentTtlMs,
    stripe: secretKey === undefined ? null : Object.freeze({ secretKey, publishableKey, webhookSecret, apiUrl }),
  })
}

function parseTrustProxy(raw: string | undefined, problems: string[]): Config['trustProxy'] {
  if (raw === undefined || raw === 'false') return false
  if (raw === 'true') return true
  if (/^\d+$/.test(raw)) return Number(raw)
  if (/^[0-9a-fA-F:.,/\s]+$/.test(raw) || /^(loopback|linklocal|uniquelocal)/.test(raw)) return raw
  problems.push(`TRUST_PROXY must be true, false, a hop count or a list of addresses (got "${raw}")`)
  return false
}

function parseStorage(
  env: Env,
  value: (name: string) => string | undefined,
  integer: (name: string, fallback: number, min: number, max: number) => number,
  dataDir: string,
  problems: string[],
): StorageConfig {
  const driver = value('STORAGE_DRIVER') ?? 'local'
  const dir = value('UPLOAD_DIR') ?? join(dataDir, 'uploads')
  const uploadDir = isAbsolute(dir) ? dir : resolve(dir)
  if (driver === 'local') return { driver: 'local', uploadDir }
  if (driver !== 's3') {
    problems.push(`STORAGE_DRIVER must be local or s3 (got "${driver}")`)
    return { driver: 'local', uploadDir: join(dataDir, 'uploads') }
  }
  const bucket = value('S3_BUCKET')
  const publicUrl = value('S3_PUBLIC_URL')
  if (bucket === undefined) problems.push('S3_BUCKET is required when STORAGE_DRIVER=s3')
  if (publicUrl === undefined || !/^https?:\/\//.test(publicUrl)) {
    problems.push('S3_PUBLIC_URL must be an absolute http(s) URL when STORAGE_DRIVER=s3')
  }
  const endpoint = value('S3_ENDPOINT') ?? null
  if (endpoint !== null && !/^https?:\/\//.test(endpoint)) problems.push('S3_ENDPOINT must be an http(s) URL')
  return {
    driver: 's3',
    uploadDir,
    bucket: bucket ?? '',
    region: value('S3_REGION') ?? 'us-east-1',
    endpoint,
    accessKeyId: value('S3_ACCESS_KEY_ID') ?? null,
    secretAccessKey: env.S3_SECRET_ACCESS_KEY ?? null,
    publicUrl: (publicUrl ?? '').replace(/\/+$/, ''),
    forcePathStyle: (value('S3_FORCE_PATH_STYLE') ?? 'false') === 'true',
    // A store answers within a second; five silent seconds mean it hangs. A whole call may take longer
    // (5 MiB over a slow link), up to 30 s. Two attempts keep a delete on a hung store near 10 s.
    connectTimeoutMs: integer('S3_CONNECT_TIMEOUT_MS', 3000, 10, 120_000),
    socketTimeoutMs: integer('S3_SOCKET_TIMEOUT_MS', 5000, 10, 600_000),
    requestTimeoutMs: integer('S3_REQUEST_TIMEOUT_MS', 30_000, 10, 600_000),
    maxAttempts: integer('S3_MAX_ATTEMPTS', 2, 1, 10),
  }
}

/** Outside production a secret is generated once and kept, so restarts keep tokens valid. */
function readOrCreateDevSecret(dataDir: string): string {
  const file = join(dataDir, '.jwt-secret')
  if (existsSync(file)) {
    const stored = readFileSync(file, 'utf8').trim()
    if (stored.length >= 32) return stored
  }
  mkdirSync(dataDir, { recursive: true })
  const secret = randomBytes(48).toString('base64url')
  writeFileSync(file, `${secret}\n`, { mode: 0o600 })
  return secret
}

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

function parseHttpTimeouts(integer: (name: string, fallback: number, min: number, max: number) => number, problems: string[]): HttpTimeouts {
  const hour = 3_600_000
  const timeouts = {
    headersTimeoutMs: integer('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, hour),
    // A 5 MiB image over a 1 Mbit/s uplink takes about 42 s.
    requestTimeoutMs: integer('HTTP_REQUEST_TIMEOUT_MS', 60_000, 100, hour),
    // Longer than the 60 s idle timeout of common load balancers, so they close first (Fastify's default).
    keepAliveTimeoutMs: integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, hour),
    socketTimeoutMs: integer('HTTP_SOCKET_TIMEOUT_MS', 30_000, 100, hour),
  }
  // Node refuses a server whose headers may take longer than the whole request.
  if (timeouts.headersTimeoutMs > timeouts.requestTimeoutMs) {
    problems.push(`HTTP_HEADERS_TIMEOUT_MS must not be greater than HTTP_REQUEST_TIMEOUT_MS (${timeouts.headersTimeoutMs} > ${timeouts.requestTimeoutMs})`)
  }
  return timeouts
}
