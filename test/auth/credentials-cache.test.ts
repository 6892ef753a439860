import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { useInstances } from '../helpers/shared-database.js'

// The revocation check reads each user's "credentials changed at" from memory (plugins/auth.ts).
// Two real instances on one database prove that a change made through either one ends the old
// tokens on both.

const instances = useInstances(2, 'credentials')
let first: FastifyInstance
let second: FastifyInstance
let admin: TestUser

beforeAll(async () => {
  ;[first, second] = instances.apps as [FastifyInstance, FastifyInstance]
  admin = await makeUser(first, 'admin')
})

const me = (app: FastifyInstance, user: TestUser) => app.inject({ url: '/auth/me', headers: bearer(user) })

/**
 * Waits until `app` answers the old token with 401, each new try only after its change feed fired
 * ("users"): proof that it was the feed, not an expiry, that told it. A feed that fires for an
 * earlier write just leads to one more try. Gives up after 20 fires.
 */
async function rejectedAfterHearing(app: FastifyInstance, user: TestUser): Promise<number> {
  let fired!: () => void
  let next = new Promise<void>((resolve) => (fired = resolve))
  app.changeFeed.subscribe('users', () => fired())
  for (let tries = 0; tries < 20; tries++) {
    await next
    next = new Promise<void>((resolve) => (fired = resolve))
    const answer = await me(app, user)
    if (answer.statusCode === 401) {
      expect(answer.json()).toEqual({ error: 'Token inválido o expirado' })
      return tries + 1
    }
  }
  throw new Error('the old token was still accepted after 20 changes were heard')
}

describe('credentials cache', () => {
  it('answers the check from memory: a change behind the service’s back is not seen at once', async () => {
    const user = await makeUser(first)
    expect((await me(first, user)).statusCode).toBe(200)
    // Through the first instance's own connection: no notification, and on SQLite no data_version move for it.
    await first.db
      .updateTable('users')
      .set({ credentials_changed_at: new Date(Date.now() + 60_000).toISOString() })
      .where('id', '=', user.id)
      .execute()
    expect((await me(first, user)).statusCode).toBe(200)
  })

  it('a role change ends the old token at once on the instance that made it, after the other hears of it', async () => {
    const user = await makeUser(first)
    expect((await me(first, user)).statusCode).toBe(200)
    expect((await me(second, user)).statusCode).toBe(200)
    const heard = rejectedAfterHearing(second, user)
    const promoted = await first.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(admin), payload: { role: 'admin' } })
    expect(promoted.statusCode).toBe(200)
    expect((await me(first, user)).statusCode).toBe(401)
    expect(await heard).toBeGreaterThanOrEqual(1)
  })

  it('a password change or a deletion on one instance ends the tokens on the other', async () => {
    const changed = await makeUser(first)
    const deleted = await makeUser(first)
    for (const user of [changed, deleted]) {
      expect((await me(first, user)).statusCode).toBe(200)
      expect((await me(second, user)).statusCode).toBe(200)
    }
    const heardChange = rejectedAfterHearing(first, changed)
    const password = await second.inject({ method: 'PATCH', url: `/auth/users/${changed.id}`, headers: bearer(admin), payload: { password: 'another-pass-1' } })
    expect(password.statusCode).toBe(200)
    expect((await me(second, changed)).statusCode).toBe(401)
    await heardChange

    const heardDeletion = rejectedAfterHearing(first, deleted)
    const removal = await second.inject({ method: 'DELETE', url: `/auth/users/${deleted.id}`, headers: bearer(admin) })
    expect(removal.statusCode).toBe(200)
    expect((await me(second, deleted)).statusCode).toBe(401)
    await heardDeletion
    // A name change is not a credentials change: the token stays good everywhere.
    const kept = await makeUser(first)
    await first.inject({ method: 'PATCH', url: `/auth/users/${kept.id}`, headers: bearer(admin), payload: { name: 'Renamed' } })
    expect((await me(first, kept)).statusCode).toBe(200)
    expect((await me(second, kept)).statusCode).toBe(200)
  })
})
