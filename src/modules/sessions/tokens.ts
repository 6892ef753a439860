import { createHash, createHmac, randomBytes } from 'node:crypto'

/** An opaque token for a client (a refresh token, a reset link's): 32 random bytes, base64url. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url')
}

/**
 * What the database keeps of a token: its SHA-256, hex. The tokens are 256 random bits, so a fast hash
 * is enough (no password-style stretching); a stolen table cannot be replayed.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** The form of every refresh token the service hands out: 32 bytes, base64url (43 characters). */
const REFRESH_TOKEN_FORM = /^[A-Za-z0-9_-]{43}$/

/** Whether a string can be one of our refresh tokens; anything else is refused unhashed, without a query. */
export function isRefreshTokenForm(token: string): boolean {
  return REFRESH_TOKEN_FORM.test(token)
}

/**
 * The key refresh tokens' successors are derived with: an HMAC of a fixed label under the JWT secret, so the
 * secret itself signs nothing but access tokens, and every instance (sharing JWT_SECRET) derives the same.
 */
export function successorKey(jwtSecret: string): Buffer {
  return createHmac('sha256', jwtSecret).update('shop-api/refresh-token-successor/v1').digest()
}

/**
 * The refresh token that replaces `token` when it is spent: HMAC-SHA-256 of it under `key`, base64url (the
 * form of a random one). Derived rather than stored, so a duplicate refresh of `token` can be answered the
 * same successor, while the database still keeps only its SHA-256; without the key, a spent token says
 * nothing of its successor.
 */
export function successorToken(key: Buffer, token: string): string {
  return createHmac('sha256', key).update(token).digest('base64url')
}
