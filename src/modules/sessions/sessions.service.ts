import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { AppError, messages } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import type { Role } from '../../plugins/auth.js'
import * as repo from './sessions.repository.js'
import { hashToken, randomToken } from './tokens.js'

type Db = Kysely<Database>

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
}

/**
 * Spends a refresh token for a new one in the same session. A token already spent is a theft signal:
 * its whole session ends (`onSessionEnded` tells the caches), and the answer is 401. Of two refreshes of
 * one token racing each other, the conditional update lets exactly one win; the other is refused without
 * ending the session, which the winner now holds (a client that sent its refresh twice at once, from two
 * tabs, is not logged out for it).
 */
export async function refreshSession(db: Db, refreshToken: string, ttlMs: number, onSessionEnded: () => void): Promise<Refreshed> {
  const row = await repo.findRefreshToken(db, hashToken(refreshToken))
  if (!row) throw new AppError(401, messages.invalidToken)
  const now = nowIso()
  if (row.spent_at !== null) {
    if (await repo.endSession(db, row.user_id, row.session_id, 'reuse', now)) onSessionEnded()
    throw new AppError(401, messages.invalidToken)
  }
  if (!sessionLives(row, row.credentials_changed_at) || row.expires_at <= now) throw new AppError(401, messages.invalidToken)
  const next = randomToken()
  const won = await db.transaction().execute(async (trx) => {
    if (!(await repo.spendRefreshToken(trx, row.id, now))) return false
    await repo.insertRefreshToken(trx, { session_id: row.session_id, token_hash: hashToken(next), created_at: now, expires_at: expiry(now, ttlMs) })
    return true
  })
  if (!won) throw new AppError(401, messages.invalidToken)
  return { user: { id: row.user_id, role: row.role }, sessionId: row.session_id, refreshToken: next }
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
