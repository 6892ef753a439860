import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { adminFromVariables } from '../modules/users/admin-account.js'
import type { Config } from './index.js'
import { DURATION, type Reader } from './read.js'

/** A production JWT_SECRET uses at least this many different characters (a random base64 one of 32 has ~25). */
const MIN_SECRET_CHARACTERS = 12

/**
 * Log-in: the JWT's secret and lifetime, the first admin (its rules are the users module's), and the auth
 * rate limit. An empty `jwtSecret` outside production means "generated": see `devJwtSecret`.
 */
export function readAuth(read: Reader, { nodeEnv }: Pick<Config, 'nodeEnv'>): Pick<Config, 'jwtSecret' | 'jwtExpiresIn' | 'admin' | 'authRateLimit'> {
  const rawExpiresIn = read.string('JWT_EXPIRES_IN') ?? '1d'
  if (!DURATION.test(rawExpiresIn) || !/[1-9]/.test(rawExpiresIn)) {
    read.problem(`JWT_EXPIRES_IN must be a duration such as 1d, 12h, 3600 or 30m (got "${rawExpiresIn}")`)
  }
  // A bare number is seconds, as in most JWT libraries (fast-jwt itself would read milliseconds).
  const jwtExpiresIn = /^\d+$/.test(rawExpiresIn) ? `${rawExpiresIn}s` : rawExpiresIn

  const jwtSecret = read.string('JWT_SECRET') ?? ''
  if (jwtSecret !== '' && jwtSecret.length < 32) {
    read.problem('JWT_SECRET must be at least 32 characters long')
  } else if (jwtSecret === '' && nodeEnv === 'production') {
    read.problem('JWT_SECRET is required when NODE_ENV=production (at least 32 random characters)')
  } else if (nodeEnv === 'production' && new Set(jwtSecret).size < MIN_SECRET_CHARACTERS) {
    // 32 characters of one or two kinds ("aaaa…", "abab…") are guessable however long they are.
    read.problem(`JWT_SECRET is too weak for production: fewer than ${MIN_SECRET_CHARACTERS} different characters (use e.g. openssl rand -base64 48)`)
  }

  const admin = adminFromVariables({ email: read.string('ADMIN_EMAIL'), password: read.raw('ADMIN_PASSWORD'), name: read.string('ADMIN_NAME') })
  if ('problem' in admin) read.problem(admin.problem)

  return {
    jwtSecret,
    jwtExpiresIn,
    admin: 'admin' in admin ? admin.admin : null,
    authRateLimit: Object.freeze({
      max: read.integer('AUTH_RATE_LIMIT_MAX', 10, 1, 1_000_000),
      windowMs: read.integer('AUTH_RATE_LIMIT_WINDOW_MS', 900_000, 1000, 86_400_000 * 7),
    }),
  }
}

/** Outside production a secret is generated once and kept in DATA_DIR, so restarts keep tokens valid. */
export function devJwtSecret(dataDir: string): string {
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
