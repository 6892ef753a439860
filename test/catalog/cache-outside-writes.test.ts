import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/connect.js'
import { dialect, testConfig } from '../helpers/app.js'
import { productRow } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { testDatabaseUrl } from '../helpers/pg-schema.js'
import { createSharedDatabase, type SharedDatabase } from '../helpers/shared-database.js'

// PostgreSQL: a write to the catalog made outside the service (psql, a script) is heard by a running instance, which
// empties its product read cache, as it does for another instance's write; the service's own writes send no NOTIFY
// from inside their transaction (only their own, after the commit). Migration 2026-12-08T0000-catalog-outside-writes.

describe.runIf(dialect === 'postgres')('the catalog written outside the service (PostgreSQL)', () => {
  let shared: SharedDatabase
  let handle: DatabaseHandle
  let app: FastifyInstance
  let admin: TestUser
  /** Like psql: its own connection and application_name, in the instance's schema. */
  let outside: pg.Client
  /** Every notification on the change feed's channel, in the order the server sent them. */
  const heard: string[] = []
  let listener: pg.Client

  const client = (name: string) =>
    new pg.Client({ connectionString: testDatabaseUrl(), application_name: name, options: `-c search_path=${handle.schema}`, connectionTimeoutMillis: 10_000 })

  beforeAll(async () => {
    shared = await createSharedDatabase('outside_writes')
    handle = shared.open()
    app = await buildApp(testConfig(), { logger: false, database: handle, catalogCache: true })
    await app.ready()
    admin = await makeUser(app, 'admin')
    outside = client('psql')
    listener = client('test-listener')
    await outside.connect()
    await listener.connect()
    listener.on('notification', (message) => heard.push(message.payload ?? ''))
    await listener.query('listen shop_changes')
  })
  afterAll(async () => {
    await outside?.end()
    await listener?.end()
    await app?.close()
    await handle?.db.destroy()
    await shared?.drop()
  })

  /**
   * Waits until `marker` has been heard: every notification sent before it has been heard too (commit order). The
   * channel is the whole database's: other schemas' triggers (other test files) and other processes are left out.
   */
  async function heardUpTo(marker: string): Promise<string[]> {
    await outside.query(`select pg_notify('shop_changes', $1)`, [marker])
    await expect.poll(() => heard.includes(marker)).toBe(true)
    const upTo = heard.splice(0, heard.indexOf(marker) + 1)
    return upTo.slice(0, -1).filter((payload) => payload === fromTrigger() || payload.startsWith(`catalog:${process.pid}-`))
  }
  /** What the triggers of this file's schema send. */
  const fromTrigger = () => `catalog:${handle.schema}`

  it('registers the instance’s connections, by the name the server sees, once its listener is up', async () => {
    const names = async () => (await outside.query<{ application_name: string }>('select application_name from service_connections')).rows
    await expect.poll(async () => (await names()).map((row) => row.application_name)).toEqual(['shop-api'])
  })

  it('empties the cache when a product is changed from psql, and the next read shows the change', async () => {
    const [inserted] = await handle.db
      .insertInto('products')
      .values(productRow({ name: 'Typed in psql' }))
      .returning('id')
      .execute()
    app.catalogCache.invalidate()
    const id = inserted!.id
    const read = async () => (await app.inject({ method: 'GET', url: `/products/${id}` })).json<{ name: string }>().name
    expect(await read()).toBe('Typed in psql')
    expect(await read()).toBe('Typed in psql')
    const hitsBefore = app.catalogCache.hits().total
    expect(hitsBefore).toBeGreaterThan(0)

    await heardUpTo('after the reads')
    const cleared = app.catalogCache.nextClear()
    await outside.query('update products set name = $1 where id = $2', ['Renamed in psql', id])
    await cleared
    expect(await read()).toBe('Renamed in psql')
    expect(await heardUpTo('after the psql update')).toEqual([fromTrigger()])
  })

  it('hears a category, an image and a variant changed outside too; a write elsewhere (a user) says nothing', async () => {
    await heardUpTo('before')
    for (const statement of [
      `update categories set name = name`,
      `update product_images set alt = alt`,
      `update product_variants set stock = stock`,
      `delete from product_slugs where false`,
    ]) {
      await outside.query(statement)
      expect(await heardUpTo(`after ${statement}`), statement).toEqual([fromTrigger()])
    }
    await outside.query(`update users set name = name`)
    expect(await heardUpTo('after users')).toEqual([])
  })

  it('hears a writer whose search_path is not the schema (the table named in full), and the CLI’s connections', async () => {
    await heardUpTo('before')
    const elsewhere = new pg.Client({ connectionString: testDatabaseUrl(), application_name: 'a-script', connectionTimeoutMillis: 10_000 })
    const cli = client('shop-api-cli')
    await elsewhere.connect()
    await cli.connect()
    try {
      await elsewhere.query(`update "${handle.schema}".categories set name = name`)
      expect(await heardUpTo('after the script')).toEqual([fromTrigger()])
      await cli.query('update products set name = name')
      expect(await heardUpTo('after the cli')).toEqual([fromTrigger()])
    } finally {
      await elsewhere.end()
      await cli.end()
    }
  })

  it('keeps the derived tables (counts, filters) for a writer whose search_path is not the schema (migration 2026-12-09T0000)', async () => {
    const category = await app.inject({ method: 'POST', url: '/categories', headers: bearer(admin), payload: { name: 'Derivadas' } })
    const categoryId = category.json<{ id: number }>().id
    const created = await app.inject({
      method: 'POST',
      url: '/products',
      headers: bearer(admin),
      payload: {
        name: 'Camiseta derivada',
        categoryId,
        options: [{ name: 'Talla', values: ['S', 'M'] }],
        variants: [
          { options: { Talla: 'S' }, price: 10, stock: 3 },
          { options: { Talla: 'M' }, price: 12, stock: 3 },
        ],
      },
    })
    expect(created.statusCode).toBe(201)
    const product = created.json<{ id: number; variants: Array<{ id: number }> }>()
    const counted = async () =>
      Number((await handle.db.selectFrom('product_counts').select('total').where('category_id', '=', categoryId).executeTakeFirst())?.total ?? 0)
    const filters = () =>
      handle.db
        .selectFrom('variant_filters')
        .select(['variant_id', 'status', 'price_cents'])
        .where('product_id', '=', product.id)
        .orderBy('variant_id')
        .execute()
    // A draft (created without images): not counted.
    expect(await counted()).toBe(0)
    // A role's default path: the shop's schema is not in it, every table is named in full.
    const elsewhere = new pg.Client({ connectionString: testDatabaseUrl(), application_name: 'a-script', connectionTimeoutMillis: 10_000 })
    await elsewhere.connect()
    try {
      expect((await elsewhere.query('show search_path')).rows[0].search_path).not.toContain(handle.schema)
      const [first, second] = product.variants.map((v) => v.id)
      await elsewhere.query(`update "${handle.schema}".products set status = 'active' where id = $1`, [product.id])
      expect(await counted()).toBe(1)
      await elsewhere.query(`update "${handle.schema}".product_variants set price_cents = 1999 where id = $1`, [first])
      await elsewhere.query(`update "${handle.schema}".products set status = 'archived' where id = $1`, [product.id])
      expect(await counted()).toBe(0)
      expect(await filters()).toEqual([
        { variant_id: first, status: 'archived', price_cents: 1999 },
        { variant_id: second, status: 'archived', price_cents: 1200 },
      ])
      await elsewhere.query(`delete from "${handle.schema}".products where id = $1`, [product.id])
      expect(await filters()).toEqual([])
    } finally {
      await elsewhere.end()
    }
  })

  it('has every trigger function of the schema run as its owner, in the schema, and executable by no one else', async () => {
    const { rows } = await outside.query<{ proname: string; prosecdef: boolean; proconfig: string[] | null; public: boolean }>(
      `select p.proname, p.prosecdef, p.proconfig, has_function_privilege('public', p.oid, 'execute') as public
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where n.nspname = $1 and p.prorettype = 'trigger'::regtype order by p.proname`,
      [handle.schema],
    )
    expect(rows.map((row) => row.proname)).toEqual([
      'product_counts_after_delete',
      'product_counts_after_insert',
      'product_counts_after_update',
      'shop_catalog_changed',
      'variant_filters_after_link',
      'variant_filters_after_option',
      'variant_filters_after_product',
      'variant_filters_after_value',
      'variant_filters_after_variant',
    ])
    for (const row of rows) {
      expect(row).toMatchObject({ prosecdef: true, public: false })
      // PostgreSQL quotes the name only when it needs quotes.
      expect(row.proconfig?.map((setting) => setting.replaceAll('"', ''))).toEqual([`search_path=${handle.schema}, pg_temp`])
    }
  })

  it('sends no NOTIFY from inside the service’s own write: only its own, after the commit, with its instance', async () => {
    await heardUpTo('before the service write')
    const created = await app.inject({ method: 'POST', url: '/categories', headers: bearer(admin), payload: { name: 'From the service' } })
    expect(created.statusCode).toBe(201)
    const update = await app.inject({
      method: 'PUT',
      url: `/categories/${created.json<{ id: number }>().id}`,
      headers: bearer(admin),
      payload: { name: 'Renamed by the service' },
    })
    expect(update.statusCode).toBe(200)
    const told = await heardUpTo('after the service writes')
    expect(told.length).toBeGreaterThan(0)
    expect(told).not.toContain(fromTrigger())
  })
})
