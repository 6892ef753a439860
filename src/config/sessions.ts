import type { Config } from './index.js'
import { durationMs, type Reader } from './read.js'

/** Sessions and password reset (src/modules/sessions). */
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

/** The longest REFRESH_REUSE_GRACE: past a few minutes, a copied refresh token would be a working one. */
const MAX_REFRESH_REUSE_GRACE_MS = 300_000

export function readSessions(read: Reader, { publicUrl }: Pick<Config, 'publicUrl'>): Pick<Config, 'sessions'> {
  const refreshTokenTtlMs = read.duration('REFRESH_TOKEN_TTL', '30d')
  const resetTokenTtlMs = read.duration('RESET_TOKEN_TTL', '1h')
  const refreshReuseGraceMs = readRefreshReuseGrace(read)
  const shopUrl = read.httpUrl('SHOP_URL', publicUrl)
  return { sessions: Object.freeze({ refreshTokenTtlMs, refreshReuseGraceMs, resetTokenTtlMs, shopUrl }) }
}

/** REFRESH_REUSE_GRACE: a duration in JWT_EXPIRES_IN's forms, `10s` by default, 0 (off) to 5 minutes. */
function readRefreshReuseGrace(read: Reader): number {
  const raw = read.string('REFRESH_REUSE_GRACE')
  if (raw === undefined) return 10_000
  const ms = durationMs(raw)
  if (ms === undefined || ms > MAX_REFRESH_REUSE_GRACE_MS) {
    read.problem(`REFRESH_REUSE_GRACE must be a duration of at most 5 minutes such as 10s, 30s or 2m, or 0 to turn it off (got "${raw}")`)
    return 10_000
  }
  return ms
}
