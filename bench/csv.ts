// The csv scenario: the product import and the orders export of the running service, over HTTP.
import http from 'node:http'
import { connectDatabase } from '../src/db/connect.js'
import { multipart } from '../test/helpers/catalog.js'
import { rssMiB, watchMemory } from './processes.js'
import { sendRequest } from './recording.js'
import type { ScenarioResult, Settings, Shop, TargetCheck } from './scenarios.js'
import { ADMIN_EMAIL } from './seed.js'

/** New products in the file (the target's 10,000: the service's IMPORT_MAX_ROWS by default). */
const IMPORT_ROWS = 10_000
const IMPORT_SECONDS = 10
const EXPORT_ROWS_PER_SECOND = 50_000
const EXPORT_EXTRA_MIB = 100

/**
 * Order lines the export streams: the target's million on SQLite in a full run; on PostgreSQL, where the target
 * names no figure, 200,000 (writing a million lines there would take the full run past its 15 minutes).
 */
function orderLines(shop: Shop, settings: Settings): number {
  if (shop.kind === 'sqlite') return settings.quick ? 100_000 : 1_000_000
  return settings.quick ? 50_000 : 200_000
}

const fixed = (value: number, digits = 1) => value.toFixed(digits)

/**
 * csv: `POST /imports/products` with 10,000 new products (one row each, with slug, SKU, description and tags), as a
 * dry run and then applied; then the products export of the shop imported back, dry run and applied (the round trip:
 * nothing to write); then `GET /exports/orders.csv` of `orderLines` order lines (orders of 5 lines written straight
 * into the tables: the checkout is not what is measured), read as it streams, with the service's peak RSS against
 * its RSS just before. All against the bench's service process, after the scenarios that measure checkout.
 */
export async function csvScenario(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'csv'
  const origin = shop.service.origin
  const login = await sendRequest(origin, {
    method: 'POST',
    path: '/auth/login',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: ADMIN_EMAIL, password: shop.seeded.password }),
  })
  const authorization = `Bearer ${(JSON.parse(login.body.toString()) as { token: string }).token}`
  const targets: TargetCheck[] = []
  const notes: string[] = []

  const upload = async (file: Buffer, query: string, what: string): Promise<void> => {
    const form = await multipart({}, [{ field: 'file', filename: 'products.csv', type: 'text/csv', data: file }])
    const t0 = performance.now()
    const response = await sendRequest(origin, {
      method: 'POST',
      path: `/imports/products${query}`,
      headers: { authorization, ...form.headers },
      body: form.payload,
    })
    const seconds = (performance.now() - t0) / 1000
    const report = JSON.parse(response.body.toString()) as { rows: number; created: { products: number }; unchanged: number; errors: unknown[] }
    const rows = report.rows
    const right = response.status === 200 && report.errors?.length === 0 && rows >= IMPORT_ROWS
    targets.push({
      scenario: name,
      target: `import ${what}, ${query === '' ? 'applied' : 'dry run'}: ≤ ${IMPORT_SECONDS} s`,
      measured: `${fixed(seconds, 2)} s for ${rows} rows`,
      met: right && seconds <= IMPORT_SECONDS,
    })
    if (!right) notes.push(`csv: import ${what} ${query}: ${response.status} ${response.body.toString().slice(0, 200)}`)
    else notes.push(`csv: import ${what} ${query || '(applied)'}: created ${report.created.products} products, ${report.unchanged} rows unchanged`)
  }

  const tag = `bench-csv-${Date.now()}`
  const lines = ['name,slug,description,price,stock,sku,tags']
  for (let i = 0; i < IMPORT_ROWS; i += 1) lines.push(`Producto ${i},${tag}-${i},"Descripción, con coma",${(i % 90) + 9}.90,${i % 50},${tag}-${i},"csv,bench"`)
  const file = Buffer.from(`\uFEFF${lines.join('\r\n')}\r\n`)
  await upload(file, '?dryRun=true', `${IMPORT_ROWS} new products`)
  await upload(file, '', `${IMPORT_ROWS} new products`)
  // The round trip: the export of the products just made (the drafts: the seeded products are active), imported back.
  const exported = await sendRequest(origin, { method: 'GET', path: '/exports/products.csv?status=draft', headers: { authorization } })
  await upload(exported.body, '?dryRun=true', 'of the products export')
  await upload(exported.body, '', 'of the products export')

  const lineCount = orderLines(shop, settings)
  await writeOrders(shop.databaseUrl, lineCount / 5)
  await new Promise((resolve) => setTimeout(resolve, 500))
  const idle = rssMiB(shop.service.pid)
  const memory = watchMemory(shop.service.pid)
  const t0 = performance.now()
  const { status, bytes, newlines } = await download(origin, '/exports/orders.csv', authorization)
  const seconds = (performance.now() - t0) / 1000
  const peak = memory.stop()
  const rows = newlines - 1
  const rate = rows / seconds
  const complete = status === 200 && rows >= lineCount
  notes.push(
    `csv: orders export ${rows} lines (${fixed(bytes / 1e6)} MB) in ${fixed(seconds, 2)} s; service RSS ${fixed(idle, 0)} MiB before, peak ${fixed(peak, 0)} MiB`,
  )
  targets.push({
    scenario: name,
    target: `orders export: peak RSS ≤ idle + ${EXPORT_EXTRA_MIB} MiB`,
    measured: `+${fixed(peak - idle, 0)} MiB over ${rows} lines`,
    met: complete && peak - idle <= EXPORT_EXTRA_MIB,
  })
  if (shop.kind === 'sqlite') {
    targets.push({
      scenario: name,
      target: `orders export: ≥ ${EXPORT_ROWS_PER_SECOND.toLocaleString('en')} rows/s (SQLite)`,
      measured: `${Math.round(rate).toLocaleString('en')} rows/s`,
      met: complete && rate >= EXPORT_ROWS_PER_SECOND,
    })
  } else notes.push(`csv: orders export ${Math.round(rate).toLocaleString('en')} rows/s (PostgreSQL; the rate's target is SQLite's)`)
  if (!complete) notes.push(`csv: the orders export answered ${status} with ${rows} lines of ${lineCount}`)
  return { name, rows: [], targets, notes, samples: {} }
}

/** `orders` paid guest orders of 5 lines each, written in batches straight into the tables. */
async function writeOrders(databaseUrl: string, orders: number): Promise<void> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    const variant = await db.selectFrom('product_variants').select(['id', 'product_id']).orderBy('id').executeTakeFirstOrThrow()
    const now = new Date().toISOString()
    for (let start = 0; start < orders; start += 500) {
      await db.transaction().execute(async (trx) => {
        const batch = await trx
          .insertInto('orders')
          .values(
            Array.from({ length: Math.min(500, orders - start) }, () => ({
              user_id: null,
              guest: 1,
              email: 'guest@shop.test',
              total_cents: 5000,
              status: 'paid' as const,
              created_at: now,
              updated_at: now,
            })),
          )
          .returning('id')
          .execute()
        const items = batch.flatMap((order) =>
          Array.from({ length: 5 }, (_, n) => ({
            order_id: order.id,
            product_id: variant.product_id,
            variant_id: variant.id,
            quantity: 1 + n,
            price_cents: 1000,
            name: `Producto ${n}`,
            sku: `SKU-${n}`,
          })),
        )
        for (let i = 0; i < items.length; i += 500)
          await trx
            .insertInto('order_items')
            .values(items.slice(i, i + 500))
            .execute()
      })
    }
  } finally {
    await db.destroy()
  }
}

/** Reads a streamed answer as it comes, keeping only its size and its line count. */
function download(origin: string, path: string, authorization: string): Promise<{ status: number; bytes: number; newlines: number }> {
  return new Promise((resolve, reject) => {
    const request = http.get(new URL(path, origin), { headers: { authorization }, agent: false }, (response) => {
      let bytes = 0
      let newlines = 0
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) newlines += 1
      })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, bytes, newlines }))
      response.on('error', reject)
    })
    request.on('error', reject)
  })
}
