import { sql } from 'kysely'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { hashPassword, verifyPassword } from '../../src/modules/users/passwords.js'
import { dialect, useTestApp } from './app.js'
import { makeProduct, makeProducts } from './catalog.js'
import { bearer, FACTORY_PASSWORD, factoryPasswordHash, makeUser } from './factories.js'
import { backendPid, waitUntilBlockedBy } from './pg-locks.js'
import { createPgSchema, testDatabaseUrl } from './pg-schema.js'

// The helpers the other tests stand on: if one of them lies, those tests prove nothing.

const t = useTestApp()

describe('factory users', () => {
  it('share one real argon2id hash, made with the service’s own parameters', async () => {
    const [a, b] = [await makeUser(t.app), await makeUser(t.app, 'admin')]
    const rows = await t.app.db.selectFrom('users').select('password_hash').where('id', 'in', [a.id, b.id]).execute()
    const hash = await factoryPasswordHash()
    expect(rows.map((r) => r.password_hash)).toEqual([hash, hash])
    // Same algorithm, version and costs as a hash the service makes now: only salt and digest differ.
    const parameters = (h: string) => h.split('$').slice(0, 4).join('$')
    expect(parameters(hash)).toBe(parameters(await hashPassword('anything')))
    expect(parameters(hash)).toMatch(/^\$argon2id\$v=19\$m=\d+,t=\d+,p=\d+$/)
    expect(await verifyPassword(hash, FACTORY_PASSWORD)).toBe(true)
    expect(await verifyPassword(hash, 'not-the-password')).toBe(false)
  })

  it('log in with their password, and only with it', async () => {
    const user = await makeUser(t.app, 'customer', '  Ana  ')
    const login = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
    expect(login.statusCode).toBe(200)
    expect(login.json().user).toEqual({ id: String(user.id), email: user.email, name: 'Ana', role: 'customer', staffRole: null })
    const wrong = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'secret124' } })
    expect(wrong.statusCode).toBe(401)
    expect((await t.app.inject({ url: '/auth/me', headers: bearer(user) })).statusCode).toBe(200)
  })

  it('come with a token older than the next millisecond, so a change made at once ends it', async () => {
    const admin = await makeUser(t.app, 'admin')
    for (let i = 0; i < 20; i++) {
      const user = await makeUser(t.app)
      const issuedAt = JSON.parse(Buffer.from(user.token.split('.')[1]!, 'base64url').toString()).iat_ms as number
      expect(Date.now()).toBeGreaterThan(issuedAt)
      const changed = await t.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(admin), payload: { role: 'admin' } })
      expect(changed.statusCode).toBe(200)
      expect((await t.app.inject({ url: '/auth/me', headers: bearer(user) })).statusCode).toBe(401)
    }
  })
})

describe('the product factory', () => {
  it('gives every row a fresh name and image key, 10.00 unless told, and its price in cents as stored', async () => {
    const a = await makeProduct(t.app)
    const b = await makeProduct(t.app, { priceCents: 1999 })
    expect(a.name).not.toBe(b.name)
    const keys = await t.app.db.selectFrom('products').select('image_key').where('id', 'in', [a.id, b.id]).execute()
    expect(new Set(keys.map((row) => row.image_key)).size).toBe(2)
    expect(a.imageUrl).not.toBe(b.imageUrl)
    expect(a).toMatchObject({ price: 10, priceCents: 1000, stock: 10, categoryId: null })
    expect(b).toMatchObject({ price: 19.99, priceCents: 1999, stock: 10 })
    const row = await t.app.db.selectFrom('products').select(['price_cents', 'stock']).where('id', '=', b.id).executeTakeFirstOrThrow()
    expect(row).toEqual({ price_cents: b.priceCents, stock: b.stock })
  })

  it('inserts many rows in batches, returned by id with the values asked for', async () => {
    const made = await makeProducts(
      t.app,
      Array.from({ length: 650 }, (_, i) => ({ name: `Bulk ${i}`, priceCents: i + 1, createdAt: '2026-01-01T00:00:00.000Z' })),
    )
    expect(made).toHaveLength(650)
    expect(made.map((p) => p.name)).toEqual(Array.from({ length: 650 }, (_, i) => `Bulk ${i}`))
    expect(made[649]).toMatchObject({ price: 6.5, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' })
  })
})

describe.skipIf(dialect !== 'postgres')('PostgreSQL helpers', () => {
  const exists = async (name: string) => {
    const client = new pg.Client({ connectionString: testDatabaseUrl() })
    await client.connect()
    try {
      return (await client.query('select 1 from information_schema.schemata where schema_name = $1', [name])).rowCount === 1
    } finally {
      await client.end()
    }
  }

  it('createPgSchema makes a schema of its own, and drop removes it with its tables', async () => {
    const schema = await createPgSchema(testDatabaseUrl(), 'Helper-Check')
    expect(schema.name).toMatch(/^helper_check_\d+_\d+_\d+$/)
    expect(await exists(schema.name)).toBe(true)
    const client = new pg.Client({ connectionString: testDatabaseUrl() })
    await client.connect()
    await client.query(`create table ${schema.name}.t (id int)`)
    await client.end()
    await schema.drop()
    expect(await exists(schema.name)).toBe(false)
  })

  it('waitUntilBlockedBy returns once another session waits for the lock, and gives up when none does', async () => {
    const product = await makeProduct(t.app)
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let holder!: (pid: number) => void
    const held = new Promise<number>((resolve) => (holder = resolve))
    const holding = t.app.db.transaction().execute(async (trx) => {
      await trx.selectFrom('products').select('id').where('id', '=', product.id).forUpdate().execute()
      holder(await backendPid(trx))
      await released
    })
    const pid = await held
    // Nobody waits yet: the helper fails after its timeout instead of returning.
    await expect(waitUntilBlockedBy(t.app.db, pid, 200)).rejects.toThrow()
    const waiter = t.app.db.transaction().execute(async (trx) => {
      await sql`select id from products where id = ${product.id} for update`.execute(trx)
    })
    await waitUntilBlockedBy(t.app.db, pid)
    release()
    await Promise.all([holding, waiter])
  })
})
