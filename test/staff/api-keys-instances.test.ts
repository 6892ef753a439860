import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { useInstances } from '../helpers/shared-database.js'

// Each instance keeps the keys it has seen in memory (src/modules/staff/api-key-auth.ts). Two real instances on one
// database prove that a rotation or a revocation made through either stops the old secret on both: at once on the
// one that made it, and on the other as soon as it hears of it through the change feed (topic `apiKeys`).

const instances = useInstances(2, 'apikeys')
let first: FastifyInstance
let second: FastifyInstance
let owner: TestUser

beforeAll(async () => {
  ;[first, second] = instances.apps as [FastifyInstance, FastifyInstance]
  owner = await makeUser(first, 'admin')
})

const use = (app: FastifyInstance, secret: string) => app.inject({ url: '/products?status=draft', headers: { authorization: `Bearer ${secret}` } })

async function createKey(): Promise<{ id: number; secret: string }> {
  const response = await first.inject({ method: 'POST', url: '/api-keys', headers: bearer(owner), payload: { name: 'ERP', staffRole: 'catalog' } })
  expect(response.statusCode).toBe(201)
  return response.json()
}

/**
 * Waits until `app` refuses the secret with 401, each new try only after its change feed fired (`apiKeys`): proof that
 * the feed, not an expiry, told it. Gives up after 20 fires.
 */
async function refusedAfterHearing(app: FastifyInstance, secret: string): Promise<void> {
  let fired!: () => void
  let next = new Promise<void>((resolve) => (fired = resolve))
  app.changeFeed.subscribe('apiKeys', () => fired())
  for (let tries = 0; tries < 20; tries++) {
    await next
    next = new Promise<void>((resolve) => (fired = resolve))
    const answer = await use(app, secret)
    if (answer.statusCode === 401) {
      expect(answer.json()).toEqual({ error: 'Token inválido o expirado' })
      return
    }
  }
  throw new Error('the old secret was still accepted after 20 changes were heard')
}

describe('API keys on several instances', () => {
  it('a key used on both and revoked through one stops on the other once it hears of it', async () => {
    const { id, secret } = await createKey()
    expect((await use(first, secret)).statusCode).toBe(200)
    expect((await use(second, secret)).statusCode).toBe(200)
    const heard = refusedAfterHearing(first, secret)
    const revoked = await second.inject({ method: 'DELETE', url: `/api-keys/${id}`, headers: bearer(owner) })
    expect(revoked.statusCode).toBe(200)
    expect((await use(second, secret)).statusCode).toBe(401)
    await heard
  })

  it('a rotation through one stops the old secret on the other; the new one works on both', async () => {
    const { id, secret } = await createKey()
    expect((await use(first, secret)).statusCode).toBe(200)
    expect((await use(second, secret)).statusCode).toBe(200)
    const heard = refusedAfterHearing(second, secret)
    const rotated = await first.inject({ method: 'POST', url: `/api-keys/${id}/rotate`, headers: bearer(owner) })
    expect(rotated.statusCode).toBe(200)
    expect((await use(first, secret)).statusCode).toBe(401)
    await heard
    const renewed = (rotated.json() as { secret: string }).secret
    expect((await use(first, renewed)).statusCode).toBe(200)
    expect((await use(second, renewed)).statusCode).toBe(200)
  })
})
