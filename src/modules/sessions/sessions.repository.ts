import type { Kysely, Transaction } from 'kysely'
import type { Database, SessionsTable } from '../../db/database.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>
type EndReason = NonNullable<SessionsTable['ended_reason']>

/** What the auth check needs of a session: whose it is, and whether it still lives (the user's credentials are read apart). */
export async function findSessionState(db: Db, id: number) {
  return db.selectFrom('sessions').select(['user_id', 'credentials_at', 'ended_at']).where('id', '=', id).executeTakeFirst()
}

export async function insertSession(trx: Trx, session: { user_id: number; credentials_at: string; created_at: string }): Promise<number> {
  const row = await trx.insertInto('sessions').values(session).returning('id').executeTakeFirstOrThrow()
  return row.id
}

export async function insertRefreshToken(trx: Trx, token: { session_id: number; token_hash: string; created_at: string; expires_at: string }): Promise<void> {
  await trx.insertInto('refresh_tokens').values(token).execute()
}

/**
 * Housekeeping of one user's rows, at each of their log-ins: refresh tokens past their expiry (never usable
 * again), and sessions ended before `endedBefore` (a token naming a session that is gone is refused like one
 * of an ended session).
 */
export async function deleteStaleSessionRows(trx: Trx, userId: number, now: string, endedBefore: string): Promise<void> {
  const ofUser = trx.selectFrom('sessions').select('id').where('user_id', '=', userId)
  await trx.deleteFrom('refresh_tokens').where('session_id', 'in', ofUser).where('expires_at', '<', now).execute()
  await trx.deleteFrom('sessions').where('user_id', '=', userId).where('ended_at', '<', endedBefore).execute()
}

/** A refresh token with its session and user, by the token's hash. */
export async function findRefreshToken(db: Db, tokenHash: string) {
  return db
    .selectFrom('refresh_tokens as t')
    .innerJoin('sessions as s', 's.id', 't.session_id')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .select([
      't.id',
      't.expires_at',
      't.spent_at',
      's.id as session_id',
      's.credentials_at',
      's.ended_at',
      'u.id as user_id',
      'u.role',
      'u.credentials_changed_at',
    ])
    .where('t.token_hash', '=', tokenHash)
    .executeTakeFirst()
}

/** Spends a refresh token unless it is already spent; true for the one caller that spent it. */
export async function spendRefreshToken(trx: Trx, id: number, now: string): Promise<boolean> {
  const result = await trx.updateTable('refresh_tokens').set({ spent_at: now }).where('id', '=', id).where('spent_at', 'is', null).executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}

/** Ends one session of a user, unless already ended; true when this call ended it. */
export async function endSession(db: Db | Trx, userId: number, id: number, reason: EndReason, now: string): Promise<boolean> {
  const result = await db
    .updateTable('sessions')
    .set({ ended_at: now, ended_reason: reason })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('ended_at', 'is', null)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** Ends every session of a user still open, but `keep` when given. */
export async function endUserSessions(trx: Trx, userId: number, reason: EndReason, now: string, keep?: number): Promise<void> {
  let query = trx.updateTable('sessions').set({ ended_at: now, ended_reason: reason }).where('user_id', '=', userId).where('ended_at', 'is', null)
  if (keep !== undefined) query = query.where('id', '!=', keep)
  await query.execute()
}

/** The session carries on under the user's new credentials (a password change it made itself). */
export async function carrySession(trx: Trx, id: number, credentialsAt: string): Promise<void> {
  await trx.updateTable('sessions').set({ credentials_at: credentialsAt }).where('id', '=', id).where('ended_at', 'is', null).execute()
}

/** The session a refresh token belongs to, with its user. */
export async function findSessionOfRefreshToken(db: Db, tokenHash: string) {
  return db
    .selectFrom('refresh_tokens as t')
    .innerJoin('sessions as s', 's.id', 't.session_id')
    .select(['s.id', 's.user_id'])
    .where('t.token_hash', '=', tokenHash)
    .executeTakeFirst()
}

// ---- password reset links ----

export async function countLiveResetLinks(db: Db | Trx, userId: number, now: string): Promise<number> {
  const row = await db
    .selectFrom('password_resets')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function insertResetLink(trx: Trx, link: { user_id: number; token_hash: string; created_at: string; expires_at: string }): Promise<void> {
  await trx.insertInto('password_resets').values(link).execute()
}

export async function findResetLink(db: Db, tokenHash: string) {
  return db.selectFrom('password_resets').select(['id', 'user_id', 'expires_at', 'used_at']).where('token_hash', '=', tokenHash).executeTakeFirst()
}

/** Uses a link unless it is used or expired; true for the one caller that used it. */
export async function useResetLink(trx: Trx, id: number, now: string): Promise<boolean> {
  const result = await trx
    .updateTable('password_resets')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}

/** Every link of the user not yet used stops working. */
export async function endResetLinks(trx: Trx, userId: number, now: string): Promise<void> {
  await trx.updateTable('password_resets').set({ used_at: now }).where('user_id', '=', userId).where('used_at', 'is', null).execute()
}
