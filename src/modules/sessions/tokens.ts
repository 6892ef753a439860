import { createHash, randomBytes } from 'node:crypto'

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
