// First-page latency of GET /products at 1,000 and 100,000 products, on SQLite and PostgreSQL.
// Rows are inserted directly; the service then runs unchanged on a real port.
//   npx tsx bench/catalog-list.ts [sqlite|postgres|both] [sizes, e.g. 1000,100000]
// PostgreSQL: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), a throw-away schema.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { sql } from 'kysely'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase, type DatabaseHandle } from '../src/db/connect.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createPgSchema } from '../test/helpers/pg-schema.js'
import { addMissingDefaultVariants } from '../src/modules/catalog/variants.repository.js'

const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const WORDS = ['lamp', 'chair', 'mug', 'desk', 'cable', 'shirt', 'ball', 'book', 'pen', 'kite', 'clock', 'bottle']
const ADJ = ['red', 'big', 'small', 'smart', 'classic', 'eco', 'pro', 'mini']

export async function openDatabase(kind: 'sqlite' | 'postgres', dir: string): Promise<{ handle: DatabaseHandle; drop: () => Promise<void> }> {
  if (kind === 'sqlite') {
    const handle = connectDatabase(`sqlite:${join(dir, 'bench.db')}`)
    return { handle, drop: () => handle.db.destroy() }
  }
  const schema = await createPgSchema(PG_URL, 'bench_catalog')
  // No statement timeout: the seed's batches (2,000 rows, a million variants at 100,000 products) can run past the
  // service's 5 s on a loaded machine, and the client gives up a second after it, whatever the server was told. The
  // service's reads are timed the same either way.
  const handle = connectDatabase(PG_URL, { schema: schema.name, poolSize: 10, timeouts: { connectTimeoutMs: 5000, statementTimeoutMs: 0 } })
  return {
    handle,
    drop: async () => {
      await handle.db.destroy()
      await schema.drop()
    },
  }
}

export async function fill(handle: DatabaseHandle, products: number): Promise<void> {
  const { db } = handle
  await migrateToLatest(db, handle.schema)
  const now = new Date().toISOString()
  const categories = Array.from({ length: 20 }, (_, i) => ({
    name: `Category ${i + 1}`,
    name_key: `category ${i + 1}`,
    slug: `category-${i + 1}`,
    path: `/${i + 1}/`,
    description: '',
    created_at: now,
    updated_at: now,
  }))
  await db.insertInto('categories').values(categories).execute()
  let seed = 42
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
  const base = Date.parse('2026-01-01T00:00:00.000Z')
  await db.transaction().execute(async (trx) => {
    for (let start = 0; start < products; start += 500) {
      const rows = []
      for (let i = start; i < Math.min(products, start + 500); i += 1) {
        const name = `${ADJ[Math.floor(random() * ADJ.length)]} ${WORDS[Math.floor(random() * WORDS.length)]} ${i}`
        const price = 100 + Math.floor(random() * 99_900)
        rows.push({
          name,
          slug: `p-${i}`,
          description: `A ${name} for every day`,
          price_cents: price,
          price_max_cents: price,
          stock: Math.floor(random() * 100),
          image_key: `products/${base + i}-p${i}.png`,
          image_url: `http://localhost:3000/uploads/products/${base + i}-p${i}.png`,
          category_id: 1 + (i % 20),
          created_at: new Date(base + i * 1000).toISOString(),
          updated_at: now,
        })
      }
      await trx.insertInto('products').values(rows).execute()
    }
    // Each product's default variant and image row, as the service writes them.
    await addMissingDefaultVariants(trx)
  })
  // Fresh statistics, as a live database would have.
  await sql`analyze`.execute(db)
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Sequential latency of one request (ms): p50 and p99 over `n` requests, after a warm-up. */
async function latency(url: string, n = 300): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 50; i += 1) await (await fetch(url)).arrayBuffer()
  const times: number[] = []
  for (let i = 0; i < n; i += 1) {
    const t0 = performance.now()
    const res = await fetch(url)
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`)
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), p99: percentile(times, 99) }
}

async function rate(url: string, seconds = 3): Promise<number> {
  const result = await autocannon({ url, connections: 10, duration: seconds })
  return result.requests.average
}

async function run(kind: 'sqlite' | 'postgres', products: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shop-bench-catalog-'))
  const { handle, drop } = await openDatabase(kind, dir)
  const t0 = performance.now()
  await fill(handle, products)
  const filled = performance.now() - t0
  const config = loadConfig({
    NODE_ENV: 'production',
    JWT_SECRET: randomBytes(32).toString('base64'),
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    PUBLIC_URL: 'http://localhost:3000',
  })
  const app = await buildApp(config, { database: handle, logger: false })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  const queries = [
    '/products?limit=100',
    '/products?limit=20',
    '/products?categoryId=3&sort=price_asc&limit=20',
    '/products?categoryId=3&sort=name&limit=20',
    '/products?sort=price_desc&limit=20',
    '/products?minPrice=100&maxPrice=200&limit=20',
    '/products?q=lamp&limit=20',
    '/products?q=77777&limit=20',
    '/products?q=lamp&categoryId=3&sort=price_asc&limit=20',
    `/products/${Math.ceil(products / 2)}`,
  ]
  console.log(`\n${kind}, ${products.toLocaleString('en')} products (filled in ${(filled / 1000).toFixed(1)} s)`)
  console.log('query'.padEnd(58), 'p50 ms'.padStart(8), 'p99 ms'.padStart(8), 'req/s (10 conn)'.padStart(16))
  for (const query of queries) {
    const l = await latency(origin + query)
    const r = process.env.BENCH_RATE === '0' ? NaN : await rate(origin + query)
    console.log(query.padEnd(58), l.p50.toFixed(2).padStart(8), l.p99.toFixed(2).padStart(8), (Number.isNaN(r) ? '-' : r.toFixed(0)).padStart(16))
  }
  await app.close()
  await drop()
  rmSync(dir, { recursive: true, force: true })
}

if (!process.env.BENCH_NO_MAIN) {
  const which = process.argv[2] ?? 'both'
  const sizes = (process.argv[3] ?? '1000,100000').split(',').map(Number)
  for (const kind of which === 'both' ? (['sqlite', 'postgres'] as const) : [which as 'sqlite' | 'postgres']) {
    for (const size of sizes) await run(kind, size)
  }
}
