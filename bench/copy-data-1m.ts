// copy-data at scale: a SQLite shop with 1,000,000 order lines (100,000 orders) copied into a new PostgreSQL
// schema, timed. Opt-in, not part of the suite:
//   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/copy-data-1m.ts [lines]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { connectDatabase } from '../src/db/connect.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { copyData, copyReportLines, progressOn } from '../src/ops/copy-data.js'
import { createPgSchema, testDatabaseUrl } from '../test/helpers/pg-schema.js'

const lines = Number(process.argv[2] ?? 1_000_000)
const orders = Math.ceil(lines / 10)
const dir = mkdtempSync(join(tmpdir(), 'shop-copy-bench-'))
const source = `sqlite:${join(dir, 'shop.db')}`
const schema = await createPgSchema(testDatabaseUrl(), 'copybench')
try {
  let started = performance.now()
  const handle = connectDatabase(source)
  await migrateToLatest(handle.db)
  const t = '2026-11-20T10:00:00.000Z'
  await sql`insert into users (name, email, password_hash, role, created_at, updated_at, credentials_changed_at) values ('Buyer', 'buyer@shop.test', 'h', 'customer', ${t}, ${t}, ${t})`.execute(
    handle.db,
  )
  await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${orders})
    insert into orders (id, user_id, total_cents, status, created_at, updated_at) select i, 1, 1000 + i, 'paid', ${t}, ${t} from n`.execute(handle.db)
  await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${lines})
    insert into order_items (id, order_id, product_id, quantity, price_cents, name) select i, (i - 1) / 10 + 1, i % 1000 + 1, 1 + i % 5, 100 + i % 9000, 'Product ' || (i % 1000) from n`.execute(
    handle.db,
  )
  await handle.db.destroy()
  console.log(`source: ${orders} orders, ${lines} order lines in ${((performance.now() - started) / 1000).toFixed(1)} s`)

  started = performance.now()
  const report = await copyData({
    from: source,
    to: `${testDatabaseUrl()}?options=${encodeURIComponent(`-c search_path=${schema.name}`)}`,
    progress: progressOn(process.stderr),
  })
  const seconds = (performance.now() - started) / 1000
  for (const line of copyReportLines(report)) console.log(line)
  console.log(
    `copied ${report.rows} rows SQLite → PostgreSQL in ${seconds.toFixed(1)} s: ${Math.round(report.rows / seconds)} rows/s (copy, verification and analyze included)`,
  )

  started = performance.now()
  const back = await copyData({
    from: `${testDatabaseUrl()}?options=${encodeURIComponent(`-c search_path=${schema.name}`)}`,
    to: `sqlite:${join(dir, 'back.db')}`,
  })
  const backSeconds = (performance.now() - started) / 1000
  console.log(`copied ${back.rows} rows PostgreSQL → SQLite in ${backSeconds.toFixed(1)} s: ${Math.round(back.rows / backSeconds)} rows/s`)
} finally {
  await schema.drop()
  rmSync(dir, { recursive: true, force: true })
}
