// The CSV routes at scale, in process: POST /imports/products with 10,000 new products (one row each) as a dry run,
// then applied, then the export of those products imported back (the round trip: nothing written); and
// GET /exports/orders.csv over real HTTP (curl as the client) on `orders` orders of 5 lines each, with its rows per second and the
// process's peak RSS above the idle RSS measured just before.
// Usage: npx tsx bench/csv-probe.ts [sqlite|postgres] [rows=10000] [orders=20000]
import { mkdtempSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase } from '../src/db/connect.js'
import { createUser } from '../src/modules/users/users.service.js'
import { createPgSchema } from '../test/helpers/pg-schema.js'
import { multipart } from '../test/helpers/catalog.js'

const kind = process.argv[2] === 'postgres' ? 'postgres' : 'sqlite'
const rows = Number(process.argv[3] ?? 10_000)
const orders = Number(process.argv[4] ?? 20_000)
const dataDir = mkdtempSync(join(tmpdir(), 'csv-probe-'))
const pgUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const schema = kind === 'postgres' ? await createPgSchema(pgUrl) : undefined
const url = kind === 'postgres' ? pgUrl : `sqlite:${join(dataDir, 'shop.db')}`
const config = loadConfig({
  NODE_ENV: 'production',
  JWT_SECRET: 'csv-probe-secret-that-is-long-enough-000000',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  DATABASE_URL: url,
  IMPORT_MAX_ROWS: String(Math.max(10_000, rows)),
})
const app = await buildApp(config, { database: connectDatabase(url, schema ? { schema: schema.name } : {}), logger: false })
await app.ready()
await createUser(app.db, { name: 'Admin', email: 'probe@shop.test', password: 'probe-password-123', role: 'admin' }, null)
const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'probe@shop.test', password: 'probe-password-123' } })
const headers = { authorization: `Bearer ${(login.json() as { token: string }).token}` }

const seconds = (t0: number) => ((performance.now() - t0) / 1000).toFixed(2)
async function upload(file: Buffer, query: string) {
  const form = await multipart({}, [{ field: 'file', filename: 'products.csv', type: 'text/csv', data: file }])
  const t0 = performance.now()
  const res = await app.inject({ method: 'POST', url: `/imports/products${query}`, headers: { ...headers, ...form.headers }, payload: form.payload })
  if (res.statusCode !== 200) throw new Error(`import: ${res.statusCode} ${res.body.slice(0, 300)}`)
  const report = res.json() as { created: unknown; updated: unknown; unchanged: number; errors: unknown[] }
  console.log(
    `${kind} import ${rows} rows ${query || '(applied)'}: ${seconds(t0)} s; created ${JSON.stringify(report.created)} updated ${JSON.stringify(report.updated)} unchanged ${report.unchanged} errors ${report.errors.length}`,
  )
}

const lines = ['name,slug,description,price,stock,sku,tags']
for (let i = 0; i < rows; i += 1) lines.push(`Producto ${i},producto-${i},"Descripción, con coma",${(i % 90) + 9}.90,${i % 50},SKU-${i},"csv,probe"`)
const file = Buffer.from(`\uFEFF${lines.join('\r\n')}\r\n`)
await upload(file, '?dryRun=true')
await upload(file, '')
const exported = await app.inject({ method: 'GET', url: '/exports/products.csv', headers })
await upload(exported.rawPayload, '?dryRun=true')
await upload(exported.rawPayload, '')

// Orders: written straight into the tables (the checkout is not what is measured), 5 lines each.
const variant = await app.db.selectFrom('product_variants').select(['id', 'product_id']).orderBy('id').executeTakeFirstOrThrow()
const now = new Date().toISOString()
for (let start = 0; start < orders; start += 500) {
  const batch = await app.db
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
  const items = batch.flatMap((o) =>
    Array.from({ length: 5 }, (_, n) => ({
      order_id: o.id,
      product_id: variant.product_id,
      variant_id: variant.id,
      quantity: 1 + n,
      price_cents: 1000,
      name: `Producto ${n}`,
      sku: `SKU-${n}`,
    })),
  )
  for (let i = 0; i < items.length; i += 400)
    await app.db
      .insertInto('order_items')
      .values(items.slice(i, i + 400))
      .execute()
}
global.gc?.()
await new Promise((resolve) => setTimeout(resolve, 200))
const idle = process.memoryUsage().rss
let peak = idle
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20)
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const t0 = performance.now()
// The client is another process (curl), so that the RSS sampled is the service's alone.
const { bytes, newlines } = await new Promise<{ bytes: number; newlines: number }>((resolve, reject) => {
  const child = spawn('sh', ['-c', `curl -sS -H "authorization: ${headers.authorization}" ${address}/exports/orders.csv | wc -lc`])
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  child.on('error', reject)
  child.on('close', () => {
    const [lines = 0, size = 0] = out.trim().split(/\s+/).map(Number)
    resolve({ bytes: size, newlines: lines })
  })
})
clearInterval(sampler)
const elapsed = (performance.now() - t0) / 1000
const dataRows = newlines - 1
console.log(
  `${kind} orders export: ${dataRows} lines (${(bytes / 1e6).toFixed(1)} MB) in ${elapsed.toFixed(2)} s = ${Math.round(dataRows / elapsed)} rows/s; idle RSS ${(idle / 1e6).toFixed(0)} MB, peak ${(peak / 1e6).toFixed(0)} MB (+${((peak - idle) / 1e6).toFixed(0)} MB)`,
)
await app.close()
await schema?.drop()
