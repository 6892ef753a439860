import type { FastifyInstance } from 'fastify'
import { hashPassword } from '../../src/modules/users/passwords.js'
import { insertUser } from '../../src/modules/users/users.repository.js'
import { normalizeEmail, userRowToUser } from '../../src/modules/users/users.service.js'
import { nowIso } from '../../src/shared/time.js'

let sequence = 0

/** A unique e-mail for this test process. */
export function uniqueEmail(prefix = 'user'): string {
  sequence += 1
  return `${prefix}${sequence}-${process.pid}@shop.test`
}

export interface TestUser {
  id: number
  email: string
  password: string
  token: string
}

/** The password of every factory user. */
export const FACTORY_PASSWORD = 'secret123'

let factoryHash: Promise<string> | undefined

/**
 * The argon2id hash of FACTORY_PASSWORD, made once per test process by the service's own hasher
 * (so with its parameters), and then shared by every factory user: an argon2 hash costs tens of
 * milliseconds of a core, and the suite makes hundreds of users. Logging in as a factory user
 * still verifies the password against a real hash.
 */
export function factoryPasswordHash(): Promise<string> {
  factoryHash ??= hashPassword(FACTORY_PASSWORD)
  return factoryHash
}

/**
 * Makes a user directly in the database (no rate limit involved, no hashing of its own) and signs
 * a token for it. The row is the one `createUser` would write.
 */
export async function makeUser(app: FastifyInstance, role: 'customer' | 'admin' = 'customer', name = 'Test User'): Promise<TestUser> {
  const email = normalizeEmail(uniqueEmail(role))
  const now = nowIso()
  const row = await insertUser(app.db, {
    name: name.trim(),
    email,
    password_hash: await factoryPasswordHash(),
    role,
    created_at: now,
    updated_at: now,
    credentials_changed_at: now,
  })
  const user = userRowToUser(row)
  const token = app.signToken(user)
  clockPastThisMillisecond()
  return { id: user.id, email, password: FACTORY_PASSWORD, token }
}

/**
 * A change of role or password ends the tokens issued strictly before it, to the millisecond, so a
 * token issued in the very millisecond of the change survives it. With no hashing in makeUser, a
 * test can make a user and change its credentials within one millisecond; returning only once the
 * clock has moved on keeps the factory's tokens older than anything the test does next. (A spin of
 * under a millisecond, bounded, so a test that stopped the clock with fake timers is not stuck.)
 */
function clockPastThisMillisecond(): void {
  const issued = Date.now()
  const giveUp = performance.now() + 5
  while (Date.now() <= issued && performance.now() < giveUp) {
    // spin
  }
}

export function bearer(user: { token: string }): { authorization: string } {
  return { authorization: `Bearer ${user.token}` }
}
