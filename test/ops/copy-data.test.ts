import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import { addMissingDefaultVariants } from '../../src/modules/catalog/variants.repository.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectDatabase } from '../../src/db/connect.js'
import { migrateToLatest, migrationNames } from '../../src/db/migrate.js'
import { CopyMismatchError, CopyRefusedError, copyData, copyReportLines } from '../../src/ops/copy-data.js'
import { dialect } from '../helpers/app.js'
import { freePort, silentServer } from '../helpers/outage.js'
import { createPgSchema, type PgSchema, testDatabaseUrl } from '../helpers/pg-schema.js'

// The copy runs between real databases: SQLite files in a temporary folder and, in the postgres project,
// PostgreSQL schemas of the test server. The SQLite project copies file to file; the postgres project
// copies SQLite → PostgreSQL → SQLite.

const dir = mkdtempSync(join(tmpdir(), 'shop-copy-'))
const schemas: PgSchema[] = []
let fileNumber = 0

afterAll(async () => {
  for (const schema of schemas) await schema.drop()
  rmSync(dir, { recursive: true, force: true })
})

const sqliteUrl = () => `sqlite:${join(dir, `db-${(fileNumber += 1)}.sqlite`)}`

/** A new, empty database of the project's kind (the other side of every copy). */
async function emptyTarget(): Promise<string> {
  if (dialect === 'sqlite') return sqliteUrl()
  const schema = await createPgSchema(testDatabaseUrl(), 'copy')
  schemas.push(schema)
  return `${testDatabaseUrl()}?options=${encodeURIComponent(`-c search_path=${schema.name}`)}`
}

/** Runs `work` on a Kysely over `url` (raw SQL), then closes it. */
async function on<T>(url: string, work: (db: ReturnType<typeof connectDatabase>['db']) => Promise<T>): Promise<T> {
  const handle = connectDatabase(url)
  try {
    return await work(handle.db)
  } finally {
    await handle.db.destroy()
  }
}

const HUGE = 9007199254740993n // 2^53 + 1: no JavaScript number holds it

/** A migrated SQLite shop with rows in every table: non-ASCII text, nulls, a bigint past 2^53, text and two-column keys. */
async function sourceShop(): Promise<string> {
  const url = sqliteUrl()
  await on(url, async (db) => {
    await migrateToLatest(db)
    const t = '2026-11-20T10:00:00.000Z'
    await sql`insert into users (id, name, email, password_hash, role, created_at, updated_at, credentials_changed_at) values
      (1, 'Admin', 'admin@shop.test', 'hash-a', 'admin', ${t}, ${t}, ${t}),
      (2, 'Zoë Ñandú', 'zoe@shop.test', 'hash-b', 'customer', ${t}, ${t}, ${t}),
      (5, 'Gone', 'gone@shop.test', 'hash-c', 'customer', ${t}, ${t}, ${t})`.execute(db)
    // The counter stays at 5: the next user is 6 in the source, and must be in the copy too.
    await sql`delete from users where id = 5`.execute(db)
    await sql`insert into categories (id, name, name_key, description, created_at, updated_at, slug, path) values
      (1, 'Café', 'café', '', ${t}, ${t}, 'cafe', '/1/'), (2, 'Books', 'books', 'Paper', ${t}, ${t}, 'books', '/2/')`.execute(db)
    await sql`insert into products (id, name, description, price_cents, stock, image_key, image_url, category_id, created_at, updated_at, slug, price_max_cents) values
      (1, 'Élan mug', 'A mug', 1250, 3, 'products/a.png', 'http://shop.test/uploads/products/a.png', 1, ${t}, ${t}, 'elan-mug', 1250),
      (2, 'Tea', '', 400, 0, 'products/b.png', 'http://shop.test/uploads/products/b.png', 1, ${t}, ${t}, 'tea', 400),
      (3, 'Novel', 'Long "quoted" text\nwith a newline', ${HUGE}, 7, 'products/c.png', 'http://shop.test/uploads/products/c.png', 2, ${t}, ${t}, 'novel', ${HUGE}),
      (4, 'Loose', '', 99, 1, 'products/d.png', 'http://shop.test/uploads/products/d.png', null, ${t}, ${t}, 'loose', 99)`.execute(db)
    await addMissingDefaultVariants(db)
    await sql`insert into carts (id, user_id, note, created_at, updated_at) values (1, 2, 'Regalo', ${t}, ${t})`.execute(db)
    await sql`insert into cart_items (cart_id, user_id, product_id, variant_id, quantity, created_at, updated_at)
      select 1, 2, 1, id, 2, ${t}, ${t} from product_variants where product_id = 1`.execute(db)
    await sql`insert into addresses (user_id, full_name, line1, line2, city, region, postal_code, country, phone, created_at, updated_at) values
      (2, 'Zoë Ñandú', 'Calle Mayor 1', null, 'Madrid', null, '28013', 'ES', '+34 600 000 000', ${t}, ${t})`.execute(db)
    await sql`insert into shipping_methods (name, price_cents, countries, free_over_cents, active, created_at, updated_at) values
      ('Standard', 495, '["ES","PT"]', 5000, 1, ${t}, ${t}), ('Old', 100, '[]', null, 0, ${t}, ${t})`.execute(db)
    await sql`insert into orders (id, user_id, total_cents, status, created_at, updated_at, subtotal_cents, shipping_cents, shipping_address, shipping_method, note) values
      (1, 2, 2500, 'paid', ${t}, ${t}, null, null, null, null, null),
      (2, 2, 895, 'pending', ${t}, ${t}, 400, 495, '{"city":"Madrid"}', '{"name":"Standard"}', 'Ring twice ☎')`.execute(db)
    await sql`insert into order_items (order_id, product_id, quantity, price_cents, name) values
      (1, 1, 2, 1250, 'Élan mug'), (2, 2, 1, 400, 'Tea'), (2, 99, 1, 1, null)`.execute(db)
    await sql`insert into idempotency_keys (user_id, key, order_id, created_at) values (2, 'b-key', 1, ${t}), (2, 'A-key', 2, ${t})`.execute(db)
    await sql`insert into payments (order_id, provider, status, amount_cents, currency, intent_id, created_at, updated_at) values
      (1, 'manual', 'paid', 2500, 'EUR', null, ${t}, ${t})`.execute(db)
    // Text keys that sort differently by byte and by a language's rules: both sides read them in byte order.
    await sql`insert into payment_events (event_id, type, received_at) values ('evt_b', 'x', ${t}), ('Evt_a', 'y', ${t}), ('évt', 'z', ${t})`.execute(db)
    await sql`insert into payment_jobs (name, next_run_at) values ('reconcile', ${t})`.execute(db)
    await sql`insert into outbox (id, channel, payload, status, next_attempt_at, created_at) values
      ('0b7c8a36-0000-4000-8000-000000000001', 'email', '{"template":"welcome"}', 'pending', ${t}, ${t})`.execute(db)
    await sql`insert into discount_codes (id, code, type, value, min_subtotal_cents, starts_at, ends_at, usage_limit, per_customer_limit, usage_count,
        product_ids, category_ids, active, created_at, updated_at) values
      (1, 'Verano-10', 'percent', 1000, 5000, ${t}, null, 100, 1, 1, '[1,3]', '[2]', 1, ${t}, ${t}),
      (3, 'ENVIO', 'free_shipping', null, null, null, null, null, null, 0, '[]', '[]', 0, ${t}, ${t})`.execute(db)
    // Order 2 is a redemption of code 1 (on PostgreSQL by a key on the code).
    await sql`update orders set discount_code_id = 1, discount_email = 'zoe@shop.test', discount_total_cents = 40 where id = 2`.execute(db)
  })
  return url
}

/** Every row of every table of a SQLite file (and its counters), integers exact: for comparing two files. */
function dumpSqlite(url: string): Record<string, unknown[]> {
  const database = new SQLite(url.slice('sqlite:'.length), { readonly: true })
  try {
    const tables = database
      .prepare("select name from pragma_table_list where schema = 'main' and type = 'table' and name not like 'kysely%' order by name")
      .all() as {
      name: string
    }[]
    const dump: Record<string, unknown[]> = {}
    for (const { name } of tables) {
      if (name === 'sqlite_schema' || name.startsWith('sqlite_stat')) continue
      dump[name] = database.prepare(`select * from "${name}" order by 1, 2`).safeIntegers(true).all()
    }
    return dump
  } finally {
    database.close()
  }
}

/** The product names the full-text search finds (SQLite's trigram index). */
function search(url: string, text: string): string[] {
  const database = new SQLite(url.slice('sqlite:'.length), { readonly: true })
  try {
    const rows = database
      .prepare('select p.name from products_search s join products p on p.id = s.rowid where products_search match ? order by p.id')
      .all(`"${text}"`) as {
      name: string
    }[]
    return rows.map((r) => r.name)
  } finally {
    database.close()
  }
}

async function refusal(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(CopyRefusedError)
  return (error as Error).message
}

async function rowCount(url: string, table: string): Promise<number> {
  return on(url, async (db) => Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(db)).rows[0]!.n))
}

let source: string
beforeAll(async () => {
  source = await sourceShop()
})

describe('copy-data', () => {
  it(`copies every table to ${dialect} and back, and the round trip equals the source row for row`, async () => {
    const middle = await emptyTarget()
    const there = await copyData({ from: source, to: middle, batchSize: 2 })
    expect(there.migratedTarget).toBe(true)
    expect(there.tables.every((t) => t.ok)).toBe(true)
    const counts = Object.fromEntries(there.tables.map((t) => [t.table, t.targetRows]))
    expect(counts).toMatchObject({
      users: 2,
      categories: 2,
      products: 4,
      product_counts: 3,
      orders: 2,
      order_items: 3,
      payment_events: 3,
      idempotency_keys: 2,
      discount_codes: 2,
    })
    // Kysely's bookkeeping is not copied: the target's own migrations are recorded there.
    expect(Object.keys(counts)).not.toContain('kysely_migration')

    const back = sqliteUrl()
    const again = await copyData({ from: middle, to: back })
    // The same checksum computed on either database: values are normalised the same way.
    expect(again.tables.map((t) => [t.table, t.sourceChecksum])).toEqual(there.tables.map((t) => [t.table, t.sourceChecksum]))
    expect(dumpSqlite(back)).toEqual(dumpSqlite(source))
    // The search index is rebuilt from the copied products; the trigger-kept counts equal the source's.
    expect(search(back, 'lan m')).toEqual(['Élan mug'])
    expect(again.rebuilt).toEqual(['products_search'])
  })

  it('the next id after the copy follows the source’s counter (a deleted last row is not handed out again)', async () => {
    const target = await emptyTarget()
    await copyData({ from: source, to: target })
    await on(target, async (db) => {
      const t = '2026-11-21T00:00:00.000Z'
      const user = await sql<{ id: number }>`insert into users (name, email, password_hash, role, created_at, updated_at, credentials_changed_at)
        values ('New', 'new@shop.test', 'h', 'customer', ${t}, ${t}, ${t}) returning id`.execute(db)
      expect(user.rows[0]!.id).toBe(6)
      const order = await sql<{
        id: number
      }>`insert into orders (user_id, total_cents, status, created_at, updated_at) values (2, 1, 'pending', ${t}, ${t}) returning id`.execute(db)
      expect(order.rows[0]!.id).toBe(3)
      // The copied triggers work again: a new product moves the counts.
      await sql`insert into products (name, description, price_cents, stock, image_key, image_url, category_id, created_at, updated_at)
        values ('More', '', 1, 1, 'products/e.png', 'http://shop.test/uploads/products/e.png', 2, ${t}, ${t})`.execute(db)
      const totals = await sql<{ category_id: number; total: number }>`select category_id, total from product_counts order by category_id`.execute(db)
      expect(totals.rows.map((r) => [Number(r.category_id), Number(r.total)])).toEqual([
        [0, 5],
        [1, 2],
        [2, 2],
      ])
    })
  })

  it('refuses a target that holds rows, writing nothing; --force replaces them', async () => {
    const target = await emptyTarget()
    await copyData({ from: source, to: target })
    // The target changes after the first copy: a row the source does not have.
    await on(target, (db) => sql`delete from payment_events where event_id = 'evt_b'`.execute(db))
    const message = await refusal(copyData({ from: source, to: target }))
    expect(message).toMatch(/^--to: .+ is not empty \(addresses: 1, cart_items: 1, carts: 1, \.\.\.\); --force replaces its rows$/)
    expect(await rowCount(target, 'payment_events')).toBe(2)

    const forced = await copyData({ from: source, to: target, force: true })
    expect(forced.migratedTarget).toBe(false)
    expect(forced.tables.every((t) => t.ok)).toBe(true)
    expect(await rowCount(target, 'payment_events')).toBe(3)
    expect(await rowCount(target, 'users')).toBe(2)
  })

  it('a copy interrupted half-way leaves no row and every trigger on; running it again copies everything', async () => {
    const target = await emptyTarget()
    let batches = 0
    const interrupt = {
      start: () => {},
      phase: () => {},
      end: () => {},
      advance: (table: string) => {
        batches += 1
        if (table === 'order_items') throw new Error('interrupted')
      },
    }
    await expect(copyData({ from: source, to: target, batchSize: 1, progress: interrupt })).rejects.toThrow('interrupted')
    expect(batches).toBeGreaterThan(10)
    for (const table of ['users', 'categories', 'products', 'product_counts', 'orders', 'order_items']) expect(await rowCount(target, table)).toBe(0)
    await on(target, async (db) => {
      if (dialect === 'sqlite') {
        // Every trigger of the schema is back: product_counts' and the search index's 6, variant_filters' 5.
        const triggers = await sql<{ n: number }>`select count(*) as n from sqlite_schema where type = 'trigger'`.execute(db)
        expect(triggers.rows[0]!.n).toBe(11)
      } else {
        const off = await sql<{
          n: number
        }>`select count(*) as n from pg_trigger where tgrelid in ('products'::regclass, 'product_variants'::regclass, 'variant_option_values'::regclass, 'product_options'::regclass, 'product_option_values'::regclass) and tgenabled = 'D'`.execute(
          db,
        )
        expect(off.rows[0]!.n).toBe(0)
      }
    })
    const again = await copyData({ from: source, to: target })
    expect(again.migratedTarget).toBe(false)
    expect(again.tables.every((t) => t.ok)).toBe(true)
    expect(await rowCount(target, 'order_items')).toBe(3)
  })

  it('a target that does not read back as the source is rolled back, and the report shows the table', async () => {
    const target = await emptyTarget()
    // A target whose counts column holds text: every value is stored, but as another type.
    await on(target, async (db) => {
      await migrateToLatest(db, dialect === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]!.s : undefined)
      if (dialect === 'postgres') await sql`alter table product_counts alter column total type text`.execute(db)
      else {
        await sql`drop table product_counts`.execute(db)
        await sql`create table product_counts (category_id integer primary key, total text not null)`.execute(db)
      }
    })
    const error = await copyData({ from: source, to: target }).then(
      () => null,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(CopyMismatchError)
    expect((error as Error).message).toBe('the copy did not read back as the source (product_counts); nothing was committed')
    const lines = copyReportLines(error as CopyMismatchError)
    expect(lines.find((l) => l.startsWith('product_counts'))).toMatch(/^product_counts +3 +3 +[0-9a-f]{7}≠[0-9a-f]{8} +DIFFERENT$/)
    expect(lines.find((l) => l.startsWith('products '))).toMatch(/ ok$/)
    for (const table of ['users', 'products', 'product_counts', 'order_items']) expect(await rowCount(target, table)).toBe(0)
  })

  it('refuses a source at an older schema, naming the command to run, and writes nothing', async () => {
    const older = sqliteUrl()
    await on(older, async (db) => {
      await migrateToLatest(db)
      await sql`delete from kysely_migration where name = ${migrationNames.at(-1)!}`.execute(db)
    })
    const target = await emptyTarget()
    const message = await refusal(copyData({ from: older, to: target }))
    expect(message).toBe(`--from: ${older} is at an older schema; run \`DATABASE_URL=${older} npm run migrate\` first, then copy again`)
    if (dialect === 'sqlite') expect(existsSync(target.slice('sqlite:'.length))).toBe(false)

    // A target at an older schema that holds data is not migrated behind the operator's back, even with --force.
    const olderTarget = sqliteUrl()
    await on(olderTarget, async (db) => {
      await migrateToLatest(db)
      await sql`insert into payment_jobs (name, next_run_at) values ('kept', 'x')`.execute(db)
      await sql`delete from kysely_migration where name = ${migrationNames.at(-1)!}`.execute(db)
    })
    expect(await refusal(copyData({ from: source, to: olderTarget, force: true }))).toBe(
      `--to: ${olderTarget} is at an older schema and holds data; run \`npm run migrate\` on it first (or copy into an empty database)`,
    )
    expect(await rowCount(olderTarget, 'payment_jobs')).toBe(1)
  })

  it('refuses a missing SQLite source without creating it, and URLs of no database', async () => {
    const missing = join(dir, 'missing.sqlite')
    const target = await emptyTarget()
    expect(await refusal(copyData({ from: `sqlite:${missing}`, to: target }))).toBe(
      `--from: sqlite:${missing}: no such file (the source must be an existing database)`,
    )
    expect(existsSync(missing)).toBe(false)
    expect(await refusal(copyData({ from: 'mysql://db/shop', to: target }))).toBe(
      '--from: "mysql://db/shop" is not a database URL (sqlite:<file> or postgres://...)',
    )
    expect(await refusal(copyData({ from: source, to: 'shop.db' }))).toBe('--to: "shop.db" is not a database URL (sqlite:<file> or postgres://...)')
    expect(await refusal(copyData({ from: source, to: source }))).toBe('--from and --to name the same database')
  })

  it('refuses a PostgreSQL that is not there, or does not answer, within the connect timeout', async () => {
    const port = await freePort()
    const closed = await refusal(copyData({ from: source, to: `postgres://postgres:secret@127.0.0.1:${port}/shop`, connectTimeoutMs: 500 }))
    expect(closed).toMatch(new RegExp(`^--to: cannot reach postgres://postgres@127.0.0.1:${port}/shop \\(.*ECONNREFUSED.*\\)$`))
    expect(closed).not.toContain('secret')
    const silent = await silentServer()
    try {
      const message = await refusal(copyData({ from: `postgres://postgres@127.0.0.1:${silent.port}/shop`, to: sqliteUrl(), connectTimeoutMs: 500 }))
      expect(message).toBe(`--from: cannot reach postgres://postgres@127.0.0.1:${silent.port}/shop (no answer within 500 ms)`)
    } finally {
      await silent.close()
    }
  })
})

describe('npm run cli -- copy-data', () => {
  const run = promisify(execFile)
  const cli = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'copy-data', ...args], { env: { ...process.env, NODE_ENV: 'development', DATA_DIR: dir } }).then(
      (ok) => ({ code: 0, ...ok }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    )

  it('prints a line per table and exits 0; a second run into the same target exits 2 with one line, and changes nothing', async () => {
    const target = await emptyTarget()
    const first = await cli('--from', source, '--to', target)
    expect(first.code).toBe(0)
    expect(first.stdout).toMatch(/^table +source rows +target rows +checksum \(sha-256\) +result$/m)
    expect(first.stdout).toMatch(/^products +4 +4 +[0-9a-f]{16} +ok$/m)
    expect(first.stdout).toMatch(/^Copied \d+ rows in \d+ tables in [\d.]+ s \(\d+ rows\/s\); every table checked$/m)
    // Not a terminal: progress is plain lines on stderr.
    expect(first.stderr).toContain('products: 4/4 rows')

    const second = await cli('--from', source, '--to', target)
    expect(second.code).toBe(2)
    expect(second.stdout).toBe('')
    expect(second.stderr.trim().split('\n')).toHaveLength(1)
    expect(second.stderr).toMatch(/^copy-data: --to: .+ is not empty \(.+\); --force replaces its rows\n$/)
    expect(await rowCount(target, 'products')).toBe(4)

    const bad = await cli('--from', source)
    expect([bad.code, bad.stderr]).toEqual([2, 'copy-data: needs --from <database URL> and --to <database URL>\n'])
  })
})

describe('the report', () => {
  it('shows the first 16 hex digits of an equal checksum, both ends of a different one', () => {
    const a = 'a'.repeat(64)
    const b = 'b'.repeat(64)
    expect(
      copyReportLines({
        tables: [
          { table: 'users', sourceRows: 2, targetRows: 2, sourceChecksum: a, targetChecksum: a, ok: true },
          { table: 'orders', sourceRows: 2, targetRows: 1, sourceChecksum: a, targetChecksum: b, ok: false },
        ],
      }),
    ).toEqual([
      'table   source rows  target rows  checksum (sha-256)  result',
      'users             2            2  aaaaaaaaaaaaaaaa    ok',
      'orders            2            1  aaaaaaa≠bbbbbbbb    DIFFERENT',
    ])
  })
})
