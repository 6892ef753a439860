// Latency of the listing filters and of GET /products/facets on a shop with variants: 100,000 products, a
// three-level category tree, 20 % of the products with three options (Color, Size, Material) and 24–100 variants
// (about 1.2 million variants in all), two tags each. Rows are inserted directly; the service then runs unchanged on
// a real port, its read cache off (uncached: every request reaches the database) or on (cached).
//   npx tsx bench/catalog-facets.ts [sqlite|postgres|both] [products, default 100000]
// PostgreSQL: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), a throw-away schema.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Kysely, sql } from 'kysely'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import type { DatabaseHandle } from '../src/db/connect.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { addMissingDefaultVariants } from '../src/modules/catalog/variants.repository.js'

process.env.BENCH_NO_MAIN = '1'
const { openDatabase } = await import('./catalog-list.js')

const COLORS = ['Red', 'Blue', 'Green', 'Black', 'White', 'Grey', 'Pink', 'Yellow', 'Orange', 'Purple']
const SIZES = ['XS', 'S', 'M', 'L', 'XL', 'XXL']
const MATERIALS = ['Cotton', 'Wool', 'Linen', 'Silk', 'Denim', 'Polyester']
const TAGS = Array.from({ length: 30 }, (_, i) => `Tag ${i + 1}`)
const ROOTS = 10
const CHILDREN = 5
const GRANDCHILDREN = 2

/** Runs `rows` through one multi-row INSERT per `batch` rows (values are numbers and plain words: written inline). */
async function insertRows(db: Kysely<any>, table: string, columns: string[], rows: unknown[][], batch = 2000): Promise<void> {
  const literal = (v: unknown) => (v === null ? 'null' : typeof v === 'number' ? String(v) : `'${(v as string).replace(/'/g, "''")}'`)
  for (let i = 0; i < rows.length; i += batch) {
    const values = rows
      .slice(i, i + batch)
      .map((row) => `(${row.map(literal).join(',')})`)
      .join(',')
    await sql.raw(`insert into ${table} (${columns.join(',')}) values ${values}`).execute(db)
  }
}

export async function fill(handle: DatabaseHandle, products: number): Promise<void> {
  const { db } = handle
  await migrateToLatest(db, handle.schema)
  const now = new Date().toISOString()
  let seed = 42
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
  const pick = <T>(list: readonly T[], n: number): T[] => {
    const copy = [...list]
    for (let i = copy.length - 1; i > 0; i -= 1) {
      const j = Math.floor(random() * (i + 1))
      ;[copy[i], copy[j]] = [copy[j]!, copy[i]!]
    }
    return copy.slice(0, n)
  }

  // The tree: 10 roots, 5 children each, 2 grandchildren each (160 categories).
  const categories: unknown[][] = []
  const leaves: number[] = []
  let id = 0
  for (let r = 0; r < ROOTS; r += 1) {
    const root = ++id
    categories.push([root, `Root ${r}`, `root ${r}`, `root-${r}`, `/${root}/`, null])
    for (let c = 0; c < CHILDREN; c += 1) {
      const child = ++id
      categories.push([child, `Child ${r}.${c}`, `child ${r}.${c}`, `child-${r}-${c}`, `/${root}/${child}/`, root])
      leaves.push(child)
      for (let g = 0; g < GRANDCHILDREN; g += 1) {
        const grandchild = ++id
        categories.push([grandchild, `Leaf ${r}.${c}.${g}`, `leaf ${r}.${c}.${g}`, `leaf-${r}-${c}-${g}`, `/${root}/${child}/${grandchild}/`, child])
        leaves.push(grandchild)
      }
    }
  }
  await insertRows(
    db,
    'categories',
    ['id', 'name', 'name_key', 'slug', 'path', 'parent_id', 'description', 'created_at', 'updated_at'],
    categories.map((c) => [...c, '', now, now]),
  )

  const base = Date.parse('2026-01-01T00:00:00.000Z')
  const productRows: unknown[][] = []
  const options: unknown[][] = []
  const values: unknown[][] = []
  const variants: unknown[][] = []
  const links: unknown[][] = []
  const tags: unknown[][] = []
  let optionId = 0
  let valueId = 0
  let variantId = 0
  for (let i = 1; i <= products; i += 1) {
    const productTags = pick(TAGS, 2)
    let low = 100 + Math.floor(random() * 9_900)
    let high = low
    let stock = Math.floor(random() * 20)
    if (i % 5 === 0) {
      // Three options: 2–5 colors × 3–5 sizes × 4 materials = 24–100 variants.
      const chosen = [pick(COLORS, 2 + Math.floor(random() * 4)), pick(SIZES, 3 + Math.floor(random() * 3)), pick(MATERIALS, 4)]
      const ids: number[][] = []
      chosen.forEach((list, position) => {
        const option = ++optionId
        options.push([option, i, ['Color', 'Size', 'Material'][position], ['color', 'size', 'material'][position], position])
        ids.push(
          list.map((value, p) => {
            values.push([++valueId, option, value, value.toLowerCase(), p])
            return valueId
          }),
        )
      })
      low = Number.MAX_SAFE_INTEGER
      high = 0
      stock = 0
      let position = 0
      for (const a of ids[0]!) {
        for (const b of ids[1]!) {
          for (const c of ids[2]!) {
            const price = 500 + Math.floor(random() * 9_500)
            // A third of the variants are sold out.
            const units = random() < 0.33 ? 0 : 1 + Math.floor(random() * 20)
            low = Math.min(low, price)
            high = Math.max(high, price)
            stock += units
            const variant = ++variantId
            const key = [a, b, c].sort((x, y) => x - y).join(',')
            variants.push([variant, i, `SKU-${i}-${position}`, `sku-${i}-${position}`, price, units, position, key, now, now])
            links.push([variant, a], [variant, b], [variant, c])
            position += 1
          }
        }
      }
    }
    productTags.forEach((tag, position) => tags.push([i, tag, tag.toLowerCase(), position]))
    productRows.push([
      i,
      `Product ${i}`,
      `product-${i}`,
      `A product, number ${i}`,
      low,
      high,
      stock,
      `products/${base + i}-p${i}.png`,
      `http://localhost:3000/uploads/products/${base + i}-p${i}.png`,
      leaves[i % leaves.length]!,
      new Date(base + i * 1000).toISOString(),
      now,
      JSON.stringify(productTags),
      'active',
    ])
  }
  await db.transaction().execute(async (trx) => {
    // The seed's statements run longer than the service's statement timeout allows.
    if (handle.dialect === 'postgres') await sql`set local statement_timeout = 0`.execute(trx)
    const productColumns = ['id', 'name', 'slug', 'description', 'price_cents', 'price_max_cents', 'stock', 'image_key', 'image_url', 'category_id']
    await insertRows(trx, 'products', [...productColumns, 'created_at', 'updated_at', 'tags', 'status'], productRows, 1000)
    await insertRows(trx, 'product_options', ['id', 'product_id', 'name', 'name_key', 'position'], options)
    await insertRows(trx, 'product_option_values', ['id', 'option_id', 'value', 'value_key', 'position'], values)
    const variantColumns = ['id', 'product_id', 'sku', 'sku_key', 'price_cents', 'stock', 'position', 'values_key', 'created_at', 'updated_at']
    await insertRows(trx, 'product_variants', variantColumns, variants)
    await insertRows(trx, 'variant_option_values', ['variant_id', 'option_value_id'], links, 5000)
    await insertRows(trx, 'product_tags', ['product_id', 'tag', 'tag_key', 'position'], tags)
    if (handle.dialect === 'postgres') {
      for (const table of ['categories', 'products', 'product_options', 'product_option_values', 'product_variants']) {
        await sql.raw(`select setval(pg_get_serial_sequence('${table}', 'id'), (select max(id) from ${table}))`).execute(trx)
      }
    }
    // Statistics first: without them PostgreSQL plans the next statements for empty tables (a scan of the images per
    // product, for hours at 100,000 products).
    if (handle.dialect === 'postgres') await sql`analyze`.execute(trx)
    // The other products' default variant and image row, as the service writes them.
    await addMissingDefaultVariants(trx)
  })
  // What autovacuum does soon after a bulk load, as a live database would have it: fresh statistics and, on
  // PostgreSQL, the visibility map, without which every index-only scan (the filters' covering indexes) visits the
  // table for each entry. Vacuum runs outside a transaction, past the service's statement timeout.
  if (handle.dialect === 'postgres') {
    await db.connection().execute(async (connection) => {
      await sql`set statement_timeout = 0`.execute(connection)
      await sql`vacuum analyze`.execute(connection)
      // And the checkpoint the load's gigabytes of WAL set going, done now rather than spread over the minutes of
      // the measurement (a role that may not checkpoint leaves it to the server).
      await sql`checkpoint`.execute(connection).catch(() => undefined)
      await sql`reset statement_timeout`.execute(connection)
    })
  } else {
    await sql`analyze`.execute(db)
  }
}

/**
 * Issue 20's target filter, as URLs of `path` (the list or the facets): a root category (its subtree), one option, a
 * price range, in stock; the roots and colors vary from one request to the next.
 */
export function targetFilter(path: string, extra = ''): string[] {
  return COLORS.slice(0, 5).map((color, i) => `${path}?category=root-${i}&option.Color=${color}&minPrice=20&maxPrice=60&inStock=true${extra}`)
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Sequential latency (ms) of requests going round `urls`, after a warm-up: p50 and p99 over `n`. */
async function latency(urls: string[], n: number): Promise<{ p50: number; p99: number; total: string }> {
  let total = ''
  for (let i = 0; i < 10; i += 1) await (await fetch(urls[i % urls.length]!)).arrayBuffer()
  const times: number[] = []
  for (let i = 0; i < n; i += 1) {
    const url = urls[i % urls.length]!
    const t0 = performance.now()
    const res = await fetch(url)
    const body = await res.text()
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${body}`)
    times.push(performance.now() - t0)
    if (i === 0) total = res.headers.get('x-total-count') ?? String((JSON.parse(body) as { total?: number }).total)
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), p99: percentile(times, 99), total }
}

async function serve(handle: DatabaseHandle, dir: string, cached: boolean) {
  const config = loadConfig({
    NODE_ENV: 'production',
    JWT_SECRET: randomBytes(32).toString('base64'),
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    PUBLIC_URL: 'http://localhost:3000',
    CATALOG_CACHE_MAX_BYTES: cached ? '67108864' : '0',
  })
  const app = await buildApp(config, { database: handle, logger: false })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  return { app, origin: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` }
}

async function run(kind: 'sqlite' | 'postgres', products: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shop-bench-facets-'))
  const { handle, drop } = await openDatabase(kind, dir)
  const t0 = performance.now()
  await fill(handle, products)
  const filled = performance.now() - t0
  const counts = await sql<{ n: number | string }>`select count(*) as n from product_variants`.execute(handle.db)
  console.log(
    `\n${kind}, ${products.toLocaleString('en')} products, ${Number(counts.rows[0]!.n).toLocaleString('en')} variants (filled in ${(filled / 1000).toFixed(1)} s)`,
  )
  const filtered = targetFilter
  const scenarios: Array<[string, (p: string) => string[]]> = [
    ['list: category+option+price+inStock', (o) => filtered(`${o}/products`)],
    ['list: same, limit=20', (o) => filtered(`${o}/products`, '&limit=20')],
    ['list: option only', (o) => COLORS.slice(0, 5).map((c) => `${o}/products?option.Color=${c}&limit=20`)],
    ['list: tag + inStock', (o) => TAGS.slice(0, 5).map((t) => `${o}/products?tag=${encodeURIComponent(t)}&inStock=true&limit=20`)],
    ['list: q on a SKU', (o) => [1, 2, 3, 4, 5].map((i) => `${o}/products?q=SKU-${i * 5}-3`)],
    ['facets: category+option+price+inStock', (o) => filtered(`${o}/products/facets`)],
    ['facets: category only', (o) => [0, 1, 2, 3, 4].map((i) => `${o}/products/facets?category=root-${i}`)],
    ['facets: option only', (o) => COLORS.slice(0, 5).map((c) => `${o}/products/facets?option.Color=${c}`)],
    ['facets: no filter', (o) => [`${o}/products/facets`]],
  ]
  for (const cached of [false, true]) {
    const { app, origin } = await serve(handle, dir, cached)
    console.log(`\n${cached ? 'cached' : 'uncached'}`)
    console.log('request'.padEnd(42), 'matches'.padStart(8), 'p50 ms'.padStart(8), 'p99 ms'.padStart(8))
    for (const [name, urls] of scenarios) {
      const l = await latency(urls(origin), cached ? 500 : Number(process.env.BENCH_REQUESTS ?? 100))
      console.log(name.padEnd(42), l.total.padStart(8), l.p50.toFixed(2).padStart(8), l.p99.toFixed(2).padStart(8))
    }
    await app.close()
  }
  await drop()
  rmSync(dir, { recursive: true, force: true })
}

if (!process.env.BENCH_FACETS_NO_MAIN) {
  const which = process.argv[2] ?? 'both'
  const size = Number(process.argv[3] ?? 100_000)
  for (const kind of which === 'both' ? (['sqlite', 'postgres'] as const) : [which as 'sqlite' | 'postgres']) await run(kind, size)
}
