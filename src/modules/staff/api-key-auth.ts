import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import type { AuthUser } from '../../plugins/auth.js'
import type { ChangeFeed } from '../../plugins/change-feed.js'
import { AppError } from '../../shared/errors.js'
import { findApiKeyByLookupId, touchApiKey } from './api-keys.repository.js'
import type { StaffRole } from './permissions.js'

/** `sk_`, the 12 hex characters of the lookup id, `_`, 32 random bytes in base64url (43 characters). */
const SECRET = /^sk_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$/

/** Whether a bearer token is an API key's secret (`sk_…`) rather than a person's token. */
export function isApiKeySecret(token: string): boolean {
  return token.startsWith('sk_')
}

/** SHA-256 of the whole secret, hex: all that is stored of it. */
function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/**
 * A new secret: its lookup id (how a presented secret finds its row; not secret, it is the key's `prefix`) and the
 * hash to store. The secret itself is answered once and kept nowhere.
 */
export function issueSecret(): { secret: string; lookupId: string; secretHash: string } {
  const lookupId = randomBytes(6).toString('hex')
  const secret = `sk_${lookupId}_${randomBytes(32).toString('base64url')}`
  return { secret, lookupId, secretHash: hashSecret(secret) }
}

/** `last_used_at` is written at most this often per key. */
const USE_INTERVAL_MS = 60_000
/** A key's state seen this long ago is read again: the bound for changes made outside the service, as for users. */
const STATE_LIFETIME_MS = 10_000
const MAX_KEYS = 10_000

/** What the authentication keeps of a key. */
interface KeyState {
  id: number
  name: string
  staffRole: Exclude<StaffRole, 'owner'>
  secretHash: Buffer
  /** Milliseconds; null: never expires. */
  expiresAt: number | null
  revoked: boolean
  /** Milliseconds, as last read or written by this instance. */
  lastUsedAt: number | null
}

/**
 * Keys' states by lookup id, kept as the auth plugin keeps users' credentials: read again after STATE_LIFETIME_MS,
 * bounded (oldest out first), emptied by every rotation and revocation (topic `apiKeys`, here at once and on the other
 * instances through the change feed), and a lookup started before an emptying is never stored. Unknown lookup ids are
 * not kept: a new key is read from the database on its first use.
 */
class KeyStateCache {
  private entries = new Map<string, { state: KeyState; storedAt: number }>()
  generation = 0

  get(lookupId: string, now: number): KeyState | undefined {
    const entry = this.entries.get(lookupId)
    if (entry === undefined) return undefined
    if (now - entry.storedAt > STATE_LIFETIME_MS) {
      this.entries.delete(lookupId)
      return undefined
    }
    return entry.state
  }

  set(lookupId: string, state: KeyState, now: number): void {
    this.entries.delete(lookupId)
    if (this.entries.size >= MAX_KEYS) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(lookupId, { state, storedAt: now })
  }

  clear(): void {
    this.generation += 1
    this.entries.clear()
  }
}

export interface ApiKeyAuthenticator {
  /**
   * The caller an API key's secret stands for: an admin of the key's staff role. 401 `invalidToken` for a malformed
   * secret, an unknown, revoked or expired key, or a secret that is not the key's.
   */
  authenticate(secret: string): Promise<AuthUser>
}

/** The API keys' side of the auth plugin; `cache: false` reads every key from the database on every request. */
export function createApiKeyAuthenticator(db: Kysely<Database>, feed: ChangeFeed, options: { cache: boolean }): ApiKeyAuthenticator {
  const states = new KeyStateCache()
  feed.subscribe('apiKeys', () => states.clear())

  const stateOf = async (lookupId: string): Promise<KeyState | undefined> => {
    // While another instance's revocation could go unheard (the feed is down), every use reads the row.
    const usable = options.cache && feed.live
    const now = Date.now()
    if (usable) {
      const cached = states.get(lookupId, now)
      if (cached !== undefined) return cached
    }
    const generation = states.generation
    const row = await findApiKeyByLookupId(db, lookupId)
    if (!row) return undefined
    const state: KeyState = {
      id: row.id,
      name: row.name,
      staffRole: row.staff_role,
      secretHash: Buffer.from(row.secret_hash, 'hex'),
      expiresAt: row.expires_at === null ? null : Date.parse(row.expires_at),
      revoked: row.revoked_at !== null,
      lastUsedAt: row.last_used_at === null ? null : Date.parse(row.last_used_at),
    }
    if (usable && generation === states.generation) states.set(lookupId, state, now)
    return state
  }

  /** Writes `last_used_at` when this instance last saw it a minute ago or more; most uses write nothing. */
  const recordUse = async (key: KeyState, now: number): Promise<void> => {
    if (key.lastUsedAt !== null && now - key.lastUsedAt < USE_INTERVAL_MS) return
    // Before the write: the requests arriving meanwhile on this instance do not write too.
    key.lastUsedAt = now
    await touchApiKey(db, key.id, new Date(now).toISOString(), new Date(now - USE_INTERVAL_MS).toISOString())
  }

  return {
    async authenticate(secret: string): Promise<AuthUser> {
      const lookupId = SECRET.exec(secret)?.[1]
      if (lookupId === undefined) throw new AppError(401, 'invalidToken')
      const key = await stateOf(lookupId)
      const presented = Buffer.from(hashSecret(secret), 'hex')
      // Compared in constant time: how much of a guessed secret's hash matches is not told by the answer's timing.
      const matches = key !== undefined && key.secretHash.length === presented.length && timingSafeEqual(key.secretHash, presented)
      const now = Date.now()
      if (!matches || key.revoked || (key.expiresAt !== null && key.expiresAt <= now)) throw new AppError(401, 'invalidToken')
      await recordUse(key, now)
      return { id: key.id, role: 'admin', sessionId: undefined, staffRole: key.staffRole, apiKey: { id: key.id, name: key.name } }
    },
  }
}
