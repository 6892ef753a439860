import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { claimDue, markDelivered, markFailedAttempt } from '../../src/modules/outbox/outbox.repository.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer } from '../helpers/factories.js'

// SQLite's query compiler (src/db/sqlite-compiler.ts): a bound LIMIT and a bound LIKE pattern are written as casts,
// which SQLite's planner does not read (a plain `?` there made SQLite prepare the statement again at every run), on
// the main connection and on the reader threads alike; the rows are those the plain forms give.

let dir: string
let handle: DatabaseHandle
const now = '2026-12-04T10:00:00.000Z'

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'shop-compiler-'))
  handle = connectDatabase(`sqlite:${join(dir, 'shop.db')}`, { readers: { threads: 1 } })
  await migrateToLatest(handle.db)
  const users: [name: string, email: string][] = [
    ['Ana', 'ana@shop.test'],
    ['Anabel', 'anabel@shop.test'],
    ['Bea', 'bea@shop.test'],
    ['100% Juan', 'juan@shop.test'],
  ]
  for (const [name, email] of users) {
    await handle.db
      .insertInto('users')
      .values({ name, email, password_hash: 'x', role: 'customer', created_at: now, updated_at: now, credentials_changed_at: now })
      .execute()
  }
})

afterAll(async () => {
  await handle.db.destroy()
  rmSync(dir, { recursive: true, force: true })
})

describe('SQLite query compiler', () => {
  it('writes a bound LIMIT as a cast; OFFSET and a literal LIMIT stay as they are', async () => {
    const query = handle.db.selectFrom('users').select('name').orderBy('id').limit(2).offset(1)
    const compiled = query.compile()
    expect(compiled.sql).toBe('select "name" from "users" order by "id" limit cast(? as integer) offset ?')
    expect(compiled.parameters).toEqual([2, 1])
    expect(await query.execute()).toEqual([{ name: 'Anabel' }, { name: 'Bea' }])

    const literal = handle.db.selectFrom('users').select('name').orderBy('id').limit(sql.lit(1))
    expect(literal.compile().sql).toBe('select "name" from "users" order by "id" limit 1')
    expect(await literal.execute()).toEqual([{ name: 'Ana' }])
  })

  it('writes a bound LIKE pattern as a cast, and matches as LIKE does', async () => {
    const query = handle.db.selectFrom('users').select('name').where('name', 'like', 'ana%').orderBy('id')
    const compiled = query.compile()
    expect(compiled.sql).toBe('select "name" from "users" where "name" like cast(? as text) order by "id"')
    expect(await query.execute()).toEqual([{ name: 'Ana' }, { name: 'Anabel' }])

    const not = handle.db.selectFrom('users').select('name').where('name', 'not like', 'ana%').orderBy('id')
    expect(not.compile().sql).toBe('select "name" from "users" where "name" not like cast(? as text) order by "id"')
    expect(await not.execute()).toEqual([{ name: 'Bea' }, { name: '100% Juan' }])

    // Other comparisons are compiled as before.
    const equal = handle.db.selectFrom('users').select('name').where('name', '=', 'Bea')
    expect(equal.compile().sql).toBe('select "name" from "users" where "name" = ?')
  })

  it('compiles the same way for the reader threads, whose rows are the main connection’s', async () => {
    const reads = handle.reads
    if (!reads) throw new Error('no reader threads')
    const query = reads.selectFrom('users').select('name').where('name', 'like', '%a%').orderBy('id').limit(2)
    expect(query.compile().sql).toBe('select "name" from "users" where "name" like cast(? as text) order by "id" limit cast(? as integer)')
    expect(await query.execute()).toEqual([{ name: 'Ana' }, { name: 'Anabel' }])
  })
})

describe('the statements the service prepares on SQLite', () => {
  const shop = useTestApp({ WEBHOOKS_ALLOW_PRIVATE: 'true' })

  it('bind no LIMIT, no LIKE pattern and no outbox status bare, raw SQL included (the outbox’s claim, the catalog’s search and facets)', async () => {
    const sqlite = shop.database.sqlite
    if (!sqlite) throw new Error('not SQLite')
    const sources: string[] = []
    const prepare = sqlite.prepare.bind(sqlite)
    sqlite.prepare = ((source: string) => {
      sources.push(source)
      return prepare(source)
    }) as typeof sqlite.prepare
    try {
      const admin = bearer(shop.admin)
      const customer = bearer(shop.customer)
      const product = await makeProduct(shop.app, { name: 'Taza azul', stock: 5 })
      const call = async (method: 'GET' | 'POST', url: string, payload?: object, headers = admin) => {
        const res = await shop.app.inject({ method, url, headers, ...(payload ? { payload } : {}) })
        expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300)
        return res
      }
      await call('POST', '/discount-codes', { code: 'VERANO10', type: 'percent', value: 10 })
      await call('POST', '/cart/add', { productId: product.id, quantity: 1 }, customer)
      await call('POST', '/orders', undefined, customer)
      // The dispatcher's claim, both lanes, with an endpoint in flight and without (two statements).
      const lanes = (inFlight: Map<number, number>) =>
        [
          { channel: 'email', limit: 4 },
          { channel: 'webhook', limit: 4, perEndpoint: { cap: 2, inFlight } },
        ] as const
      await claimDue(shop.app.db, 'sqlite', { lanes: lanes(new Map()), now: Date.now(), leaseMs: 1000 })
      await claimDue(shop.app.db, 'sqlite', { lanes: lanes(new Map([[7, 1]])), now: Date.now(), leaseMs: 1000 })
      await markDelivered(shop.app.db, ['a', 'b'], { statusCode: 250, at: new Date().toISOString() })
      await markFailedAttempt(shop.app.db, 'c', { attempts: 1, statusCode: null, error: 'refused', nextAttemptAt: null })
      // Search by LIKE (shorter than a trigram), folded (not ASCII), the codes' search, the facets; lists with a limit.
      expect((await call('GET', '/products?q=az&limit=5')).json()).toMatchObject([{ name: 'Taza azul' }])
      expect((await call('GET', `/products?q=${encodeURIComponent('ñ')}&limit=5`)).json()).toEqual([])
      expect((await call('GET', '/discount-codes?q=ver&limit=5')).json()).toMatchObject([{ code: 'VERANO10' }])
      expect((await call('GET', '/discount-codes?q=otono&limit=5')).json()).toEqual([])
      await call('GET', '/products/facets?q=az')
      const hook = (await call('POST', '/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['product.updated'] })).json() as { id: number }
      expect((await call('GET', `/webhooks/${hook.id}/deliveries?status=failed&limit=5`)).json()).toEqual([])
      await call('GET', '/orders?limit=5')
      await call('GET', '/audit-log?limit=5')
    } finally {
      sqlite.prepare = prepare
    }
    expect(sources.some((source) => /limit cast\(\? as integer\)/.test(source))).toBe(true)
    expect(sources.some((source) => /like cast\(\? as text\)/.test(source))).toBe(true)
    expect(sources.filter((source) => /\b(limit|like)\s+\?/i.test(source))).toEqual([])
    // A bound value compared with a partial index's condition (outbox_due: status = 'pending') is read too.
    expect(sources.filter((source) => source.includes('"outbox"') && /\bwhere\b.*"status" = \?/s.test(source))).toEqual([])
    expect(sources.some((source) => source.includes('product_tags') && /limit \d+/.test(source))).toBe(true)
  })
})
