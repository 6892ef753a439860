import type { Kysely, Transaction } from 'kysely'
import type { Database, SessionsTable } from '../../db/database.js'
import { AppError } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import type { Role } from '../../plugins/auth.js'
import * as repo from './sessions.repository.js'
import { hashToken, isRefreshTokenForm, randomToken, successorToken } from './tokens.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

/**
 * A session is what one log-in starts: its refresh tokens (rotated on each use) and the access tokens
 * issued from them, which carry its id (`sid`). It lives while it is not ended (logout, logout-all, a
 * password change made elsewhere, a reset, a reused refresh token) and while the user's credentials are
 * those it was started under (a role or password change, a deleted user end it).
 */
export function sessionLives(session: { ended_at: string | null; credentials_at: string }, credentialsChangedAt: string): boolean {
  return session.ended_at === null && Date.parse(session.credentials_at) >= Date.parse(credentialsChangedAt)
}

export interface SessionTokens {
  sessionId: number
  refreshToken: string
}

const expiry = (now: string, ttlMs: number) => new Date(Date.parse(now) + ttlMs).toISOString()

/** Ended sessions are kept this long (what ended them, and when, for support), then deleted at the user's next log-in. */
export const ENDED_SESSION_RETENTION_MS = 30 * 86_400_000

/** Starts a session for a user who just logged in, under the credentials (`credentialsAt`) read for that log-in. */
export async function startSession(db: Db, userId: number, credentialsAt: string, ttlMs: number): Promise<SessionTokens> {
  const refreshToken = randomToken()
  const now = nowIso()
  const sessionId = await db.transaction().execute(async (trx) => {
    await repo.deleteStaleSessionRows(trx, userId, now, new Date(Date.parse(now) - ENDED_SESSION_RETENTION_MS).toISOString())
    const id = await repo.insertSession(trx, { user_id: userId, credentials_at: credentialsAt, created_at: now })
    await repo.insertRefreshToken(trx, { session_id: id, token_hash: hashToken(refreshToken), created_at: now, expires_at: expiry(now, ttlMs) })
    return id
  })
  return { sessionId, refreshToken }
}

export interface Refreshed extends SessionTokens {
  user: { id: number; role: Role }
  /** When the pair was issued (ms): its access token is signed as of then, so a duplicate is answered the same one. */
  issuedAt: number
}

export interface RefreshSettings {
  /** Each refresh token is valid this long from its issue. */
  ttlMs: number
  /** A spent token presented again this soon after its rotation is a duplicate, not a theft; 0: never. */
  graceMs: number
  /** The key successors are derived with (tokens.ts successorKey). */
  successorKey: Buffer
}

const invalidToken = () => new AppError(401, 'invalidToken')

/**
 * Spends a refresh token for its successor in the same session (tokens.ts successorToken: derived from the
 * spent token, never stored). A token already spent, presented again:
 *
 * - within `graceMs` of its rotation, while its successor is still unspent, is a duplicate (tabs refreshing
 *   at once, a retry of an answer that got lost): it is answered the same successor pair;
 * - later, or once the successor has itself been rotated, is a theft signal: the whole session ends
 *   (`onSessionEnded` tells the caches), and the answer is 401.
 *
 * Of refreshes racing each other, the conditional update lets exactly one spend the token; the others then
 * read what it did and are duplicates.
 */
export async function refreshSession(db: Db, refreshToken: string, settings: RefreshSettings, onSessionEnded: () => void): Promise<Refreshed> {
  // Not one of ours (an access token, a long string): refused unhashed, without a query.
  if (!isRefreshTokenForm(refreshToken)) throw invalidToken()
  const tokenHash = hashToken(refreshToken)
  let row = await repo.findRefreshToken(db, tokenHash)
  if (!row || !sessionLives(row, row.credentials_changed_at)) throw invalidToken()
  const successor = successorToken(settings.successorKey, refreshToken)
  if (row.spent_at === null) {
    const now = nowIso()
    if (row.expires_at <= now) throw invalidToken()
    const { id, session_id } = row
    const won = await db.transaction().execute(async (trx) => {
      if (!(await repo.spendRefreshToken(trx, id, now))) return false
      await repo.insertRefreshToken(trx, { session_id, token_hash: hashToken(successor), created_at: now, expires_at: expiry(now, settings.ttlMs) })
      return true
    })
    if (won) return { user: { id: row.user_id, role: row.role }, sessionId: row.session_id, refreshToken: successor, issuedAt: Date.parse(now) }
    // Another request spent it first, and has committed: this one is its duplicate.
    row = await repo.findRefreshToken(db, tokenHash)
    if (!row?.spent_at) throw invalidToken()
  }
  const spentAt = Date.parse(row.spent_at)
  if (Date.now() - spentAt < settings.graceMs) {
    const next = await repo.findRefreshToken(db, hashToken(successor))
    // Not found: the token was rotated under another JWT_SECRET, or by a version that drew successors at
    // random. No sign of theft, and no successor to answer: refused, the session left alone.
    if (!next || next.session_id !== row.session_id || !sessionLives(next, next.credentials_changed_at) || next.expires_at <= nowIso()) {
      throw invalidToken()
    }
    if (next.spent_at === null) {
      return { user: { id: next.user_id, role: next.role }, sessionId: next.session_id, refreshToken: successor, issuedAt: spentAt }
    }
    // The successor has been rotated since: whoever holds this copy is not the client that moved the session on.
  }
  if (await repo.endSession(db, row.user_id, row.session_id, 'reuse', nowIso())) onSessionEnded()
  throw invalidToken()
}

/**
 * Ends the caller's session: the one its access token names and, when a refresh token of the caller's
 * is given, that token's session too. A refresh token that is unknown or someone else's is ignored (the
 * answer says nothing about it). A token from before sessions existed names none: every token of the
 * user ends, as with logout-all.
 */
export async function logout(db: Db, caller: { id: number; sessionId: number | undefined }, refreshToken?: string): Promise<void> {
  const now = nowIso()
  if (caller.sessionId === undefined) return logoutEverywhere(db, caller.id)
  await repo.endSession(db, caller.id, caller.sessionId, 'logout', now)
  if (refreshToken !== undefined) {
    const other = await repo.findSessionOfRefreshToken(db, hashToken(refreshToken))
    if (other && other.user_id === caller.id && other.id !== caller.sessionId) await repo.endSession(db, caller.id, other.id, 'logout', now)
  }
}

/**
 * Every token of the user stops working: every session ends, and the user's credentials move on, which
 * also ends any access token that names no session.
 */
export async function logoutEverywhere(db: Db, userId: number): Promise<void> {
  const now = nowIso()
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('users')
      .set({ credentials_changed_at: credentialsChangeAfter(now) })
      .where('id', '=', userId)
      .execute()
    await repo.endUserSessions(trx, userId, 'logout-all', now)
  })
}

/**
 * Tokens carry milliseconds: one issued in the same millisecond as a change cannot be told from one
 * issued just after it, so a change counts from the next millisecond.
 */
export function credentialsChangeAfter(now: string): string {
  return new Date(Date.parse(now) + 1).toISOString()
}

// ---- for the users module: a change of credentials there ends sessions and reset links here ----

/** Ends every session of a user still open, but `keep` when given, in the caller's transaction. */
export function endUserSessions(trx: Trx, userId: number, reason: NonNullable<SessionsTable['ended_reason']>, now: string, keep?: number): Promise<void> {
  return repo.endUserSessions(trx, userId, reason, now, keep)
}

/** The session carries on under the user's new credentials (a password change it made itself). */
export function carrySession(trx: Trx, id: number, credentialsAt: string): Promise<void> {
  return repo.carrySession(trx, id, credentialsAt)
}

/** Every reset link of the user not yet used stops working. */
export function endResetLinks(trx: Trx, userId: number, now: string): Promise<void> {
  return repo.endResetLinks(trx, userId, now)
}
