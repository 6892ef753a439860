import type { AdminAccount } from '../modules/users/admin-account.js'
import { readAfterSale } from './after-sale.js'
import { devJwtSecret, readAuth } from './auth.js'
import { readCatalog } from './catalog.js'
import { readCsv } from './csv.js'
import { readDatabase } from './database.js'
import { type GuestsConfig, readGuests } from './guests.js'
import { type HttpTimeouts, readHttp } from './http.js'
import { type MailConfig, readMail } from './mail.js'
import { readObservability, type TracingProtocol } from './observability.js'
import { type PaymentsConfig, readPayments } from './payments.js'
import { createReader, type Env } from './read.js'
import { readRedis } from './redis.js'
import { readService } from './service.js'
import { readSessions, type SessionsConfig } from './sessions.js'
import { readStaff } from './staff.js'
import { readStorage, type StorageConfig } from './storage.js'
import { readTaxes } from './taxes.js'
import { readWebhooks } from './webhooks.js'

export type { GuestsConfig, HttpTimeouts, MailConfig, PaymentsConfig, SessionsConfig, StorageConfig, TracingProtocol }

/**
 * Everything the service reads from its environment, validated once at boot. Each group of fields is read
 * by the section named beside it (src/config/<section>.ts), with the helpers of read.ts.
 */
export interface Config {
  // service.ts
  readonly nodeEnv: 'development' | 'production' | 'test'
  readonly dataDir: string
  // http.ts
  readonly port: number
  readonly host: string
  readonly publicUrl: string
  readonly trustProxy: boolean | number | string
  readonly corsOrigin: string | null
  readonly http: HttpTimeouts
  // database.ts
  readonly databaseUrl: string
  /** Bounded waits toward PostgreSQL (unused on SQLite). */
  readonly postgres: {
    readonly connectTimeoutMs: number
    readonly statementTimeoutMs: number
    readonly startupTimeoutMs: number
    readonly preparedStatements: boolean
  }
  // auth.ts
  readonly jwtSecret: string
  readonly jwtExpiresIn: string
  /** The first admin (ADMIN_*), by the users module's rules (src/modules/users/admin-account.ts). */
  readonly admin: AdminAccount | null
  readonly authRateLimit: { readonly max: number; readonly windowMs: number }
  // sessions.ts
  /** Sessions and password reset (src/modules/sessions). */
  readonly sessions: SessionsConfig
  // guests.ts
  /** Guest checkout: whether it is on, a guest cart's life, an order link's life. */
  readonly guests: GuestsConfig
  // redis.ts
  readonly redisUrl: string | null
  /** Bounded waits toward Redis (the auth rate limit fails open, so these bound what an outage costs a login). */
  readonly redisTimeouts: { readonly connectMs: number; readonly commandMs: number }
  // storage.ts
  readonly storage: StorageConfig
  /** Where an uploaded image is spooled while it streams in, before it reaches the image host. */
  readonly uploadTmpDir: string
  // catalog.ts
  /** Memory the product read cache may hold, every byte of its entries counted; 0 turns it off. */
  readonly catalogCacheMaxBytes: number
  /**
   * A product with this much stock or less is "low on stock": on the admin dashboard (GET /admin/api/stats), and
   * stock.low fires when a change takes its stock from above this to at or below it (src/modules/outbox).
   */
  readonly lowStockThreshold: number
  /** How many options a product may have (MAX_OPTIONS_PER_PRODUCT, 1–3). */
  readonly maxOptionsPerProduct: number
  /** How many variants a product may have (MAX_VARIANTS_PER_PRODUCT, 1–2048). */
  readonly maxVariantsPerProduct: number
  /** How many images a product may have (MAX_IMAGES_PER_PRODUCT, 1–100). */
  readonly maxImagesPerProduct: number
  // csv.ts
  /** How many records a product import may have (IMPORT_MAX_ROWS, default 10000); more: 422. */
  readonly importMaxRows: number
  /** How many bytes a product import's file may have (IMPORT_MAX_BYTES, default 20 MiB); more: 413. */
  readonly importMaxBytes: number
  // taxes.ts
  /** PRICES_INCLUDE_TAX (default true): prices and shipping are entered with tax in them (the totals module). */
  readonly pricesIncludeTax: boolean
  /** SHOP_COUNTRY (default ES): the tax country of a cart or an order without a shipping address. */
  readonly shopCountry: string
  // after-sale.ts
  /** SHOP_TIMEZONE (default UTC): the zone whose calendar days the withdrawal and return windows count in. */
  readonly shopTimezone: string
  /** WITHDRAWAL_DAYS (default 14, at least 14): days after the last delivery a customer may withdraw. */
  readonly withdrawalDays: number
  /** RETURN_DAYS (default 30): days after the last delivery a customer may ask for a return. */
  readonly returnDays: number
  // staff.ts
  /** AUDIT_LOG_RETENTION (default 365d): audit entries older than this are deleted daily; 0 keeps them forever. */
  readonly auditLogRetentionMs: number
  // payments.ts
  readonly payments: PaymentsConfig
  // mail.ts
  readonly mail: MailConfig
  // webhooks.ts
  /**
   * WEBHOOKS_ALLOW_PRIVATE=true lets webhook URLs reach loopback, private, link-local and other non-public
   * addresses (tests, an internal network); off, such URLs are refused at creation and at each delivery.
   */
  readonly webhooksAllowPrivate: boolean
  // observability.ts
  readonly logLevel: string
  /** Prometheus metrics (plugins/metrics.ts): off unless METRICS_ENABLED=true; with a port, on a server of their own. */
  readonly metrics: { readonly enabled: boolean; readonly port: number | null }
  /**
   * OpenTelemetry traces (src/tracing.ts), sent over OTLP/HTTP to `url` when OTEL_EXPORTER_OTLP_ENDPOINT (or
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Null otherwise: then nothing of OpenTelemetry is loaded.
   */
  readonly tracing: { readonly url: string; readonly protocol: TracingProtocol } | null
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
  }
}

/**
 * Reads the configuration from `env`, section by section; collects every problem and throws one
 * ConfigError listing them, one line per bad variable.
 */
export function loadConfig(env: Env = process.env): Config {
  const read = createReader(env)
  const service = readService(read)
  const http = readHttp(read)
  const auth = readAuth(read, service)
  const config = {
    ...service,
    ...http,
    ...readDatabase(read, service),
    ...auth,
    ...readRedis(read),
    ...readStorage(read, service),
    ...readPayments(read),
    ...readMail(read, http),
    ...readWebhooks(read),
    ...readCatalog(read),
    ...readCsv(read),
    ...readTaxes(read),
    ...readAfterSale(read),
    ...readObservability(read, http),
    ...readSessions(read, http),
    ...readGuests(read),
    ...readStaff(read),
  }
  if (read.problems.length > 0) throw new ConfigError(read.problems)
  // Outside production an unset JWT_SECRET is generated once (only now: a bad configuration writes nothing).
  return Object.freeze({ ...config, jwtSecret: auth.jwtSecret === '' ? devJwtSecret(service.dataDir) : auth.jwtSecret })
}
