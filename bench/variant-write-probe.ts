// Latency of a variant write on a product with 100 variants (3 options), in process (app.inject): PATCH
// /variants/:id (price, then stock), and the product page read after it. Prints p50/p99 per kind.
// Usage: npx tsx bench/variant-write-probe.ts [sqlite|postgres] [writes=1000]
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase } from '../src/db/connect.js'
import { createUser } from '../src/modules/users/users.service.js'
import { createPgSchema } from '../test/helpers/pg-schema.js'

const kind = process.argv[2] === 'postgres' ? 'postgres' : 'sqlite'
const writes = Number(process.argv[3] ?? 1000)
const dataDir = mkdtempSync(join(tmpdir(), 'variant-probe-'))
const pgUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const schema = kind === 'postgres' ? await createPgSchema(pgUrl) : undefined
const url = kind === 'postgres' ? pgUrl : `sqlite:${join(dataDir, 'shop.db')}`
const config = loadConfig({
  NODE_ENV: 'production',
  JWT_SECRET: 'variant-probe-secret-that-is-long-enough-000',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  DATABASE_URL: url,
})
const app = await buildApp(config, { database: connectDatabase(url, schema ? { schema: schema.name } : {}), logger: false })
await app.ready()
await createUser(app.db, { name: 'Admin', email: 'probe@shop.test', password: 'probe-password-123', role: 'admin' }, null)
const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'probe@shop.test', password: 'probe-password-123' } })
const headers = { authorization: `Bearer ${(login.json() as { token: string }).token}` }
const send = async (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) => {
  const res = await app.inject({ method, url: path, headers, ...(payload === undefined ? {} : { payload: payload as object }) })
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body}`)
  return res.json() as { id: number; variants: Array<{ id: number }> }
}
const sizes = ['XS', 'S', 'M', 'L', 'XL']
const colors = ['Rojo', 'Azul', 'Verde', 'Negro', 'Blanco']
const materials = ['Algodón', 'Lana', 'Lino', 'Seda']
const product = await send('POST', '/products', {
  name: 'Camiseta probe',
  options: [
    { name: 'Talla', values: sizes },
    { name: 'Color', values: colors },
    { name: 'Material', values: materials },
  ],
  variants: sizes.flatMap((t) => colors.flatMap((c) => materials.map((m) => ({ options: { Talla: t, Color: c, Material: m }, price: 10, stock: 5 })))),
})
const variants = product.variants.map((v) => v.id)
console.log(`${kind}: product ${product.id} with ${variants.length} variants`)
const time = async (f: () => Promise<unknown>) => {
  const t0 = performance.now()
  await f()
  return performance.now() - t0
}
const stats = (label: string, samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2)
  console.log(`${label}: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms (${samples.length})`)
}
const price: number[] = []
const stock: number[] = []
for (let i = 0; i < writes; i++) {
  const id = variants[i % variants.length]!
  price.push(await time(() => send('PATCH', `/variants/${id}`, { price: 10 + (i % 50) })))
  stock.push(await time(() => send('PATCH', `/variants/${id}`, { stock: 5 + (i % 7) })))
}
stats('PATCH /variants/:id {price}', price.slice(50))
stats('PATCH /variants/:id {stock}', stock.slice(50))
await app.close()
await schema?.drop()
