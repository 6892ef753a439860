import { type Kysely, sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { enqueueEmail } from '../outbox/outbox.js'
import { hashPassword } from '../users/passwords.js'
import { findUserByEmail, normalizeEmail } from '../users/users.service.js'
import { AppError } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import * as repo from './sessions.repository.js'
import { credentialsChangeAfter } from './sessions.service.js'
import { hashToken, randomToken } from './tokens.js'
import { isPostgres } from '../../db/dialect.js'

type Db = Kysely<Database>

/**
 * A user with this many links still usable gets no new one (the answer is the same 202): someone asking
 * for links to another person's address, from many addresses past the rate limit, cannot flood their inbox.
 */
export const MAX_LIVE_RESET_LINKS = 5

export interface ResetSettings {
  ttlMs: number
  /** The storefront's address, without a trailing slash. */
  shopUrl: string
}

/**
 * Sends a reset link to a registered e-mail. An unknown e-mail does the same work short of the writes
 * (a token made and hashed, a transaction that counts links), and the caller answers the same either way.
 * An older link keeps working until it expires or any link of the user is used: e-mails may arrive out of
 * order, and the one the user opens should work.
 */
export async function requestPasswordReset(db: Db, email: string, settings: ResetSettings): Promise<void> {
  const user = await findUserByEmail(db, normalizeEmail(email))
  const token = randomToken()
  const tokenHash = hashToken(token)
  const now = nowIso()
  await db.transaction().execute(async (trx) => {
    // On PostgreSQL a commit that wrote rows waits for its WAL flush, which one that wrote none does
    // not: about 8 ms that told a registered address from an unknown one. The link does not wait for
    // it (a crash in the next fraction of a second loses the request, and the user asks again).
    if (isPostgres(db)) await sql`set local synchronous_commit = off`.execute(trx)
    const live = await repo.countLiveResetLinks(trx, user?.id ?? 0, now)
    if (!user || live >= MAX_LIVE_RESET_LINKS) return
    await repo.insertResetLink(trx, {
      user_id: user.id,
      token_hash: tokenHash,
      created_at: now,
      expires_at: new Date(Date.parse(now) + settings.ttlMs).toISOString(),
    })
    const link = `${settings.shopUrl}/reset-password?token=${encodeURIComponent(token)}`
    await enqueueEmail(trx, { template: 'password-reset', to: user.email, data: { name: user.name, link } })
  })
}

/**
 * Sets a new password with a reset link: the link is used up, every other link of the user stops working,
 * and every session of the user ends (the user's credentials move on, so tokens from before sessions too).
 */
export async function confirmPasswordReset(db: Db, token: string, password: string): Promise<void> {
  const link = await repo.findResetLink(db, hashToken(token))
  if (!link || link.used_at !== null || link.expires_at <= nowIso()) throw new AppError(400, 'invalidResetLink')
  const passwordHash = await hashPassword(password)
  const now = nowIso()
  await db.transaction().execute(async (trx) => {
    // Two confirms of one link racing: exactly one passes this conditional update.
    if (!(await repo.useResetLink(trx, link.id, now))) throw new AppError(400, 'invalidResetLink')
    await trx
      .updateTable('users')
      .set({ password_hash: passwordHash, updated_at: now, credentials_changed_at: credentialsChangeAfter(now) })
      .where('id', '=', link.user_id)
      .execute()
    await repo.endResetLinks(trx, link.user_id, now)
    await repo.endUserSessions(trx, link.user_id, 'reset', now)
  })
}
