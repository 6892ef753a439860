// Where GET /cart spends its time, in process (no HTTP socket): the whole route through app.inject, and its parts
// called directly (the cart read, the pricing, the tax rates). CPU microseconds per call, medians of 5 rounds.
// Usage: npx tsx bench/cart-view-probe.ts [lines=5] [calls=2000]
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase } from '../src/db/connect.js'
import { getCartView } from '../src/modules/cart/cart-view.js'
import { addToCart, defaultCartSettings, readCart } from '../src/modules/cart/cart.service.js'
import { addMissingDefaultVariants } from '../src/modules/catalog/variants.repository.js'
import { createUser } from '../src/modules/users/users.service.js'
import { nowIso } from '../src/shared/time.js'

const lineCount = Number(process.argv[2] ?? 5)
const calls = Number(process.argv[3] ?? 2000)

async function cpuMicros(work: () => Promise<unknown>): Promise<number> {
  const rounds: number[] = []
  for (let round = 0; round < 5; round++) {
    const start = process.cpuUsage()
    for (let i = 0; i < calls; i++) await work()
    const used = process.cpuUsage(start)
    rounds.push((used.user + used.system) / calls)
  }
  return rounds.sort((a, b) => a - b)[2]!
}

const dir = mkdtempSync(join(tmpdir(), 'shop-cart-probe-'))
const handle = connectDatabase(`sqlite:${join(dir, 'shop.sqlite')}`)
const config = loadConfig({
  NODE_ENV: 'production',
  JWT_SECRET: randomBytes(32).toString('base64'),
  DATA_DIR: dir,
  LOG_LEVEL: 'silent',
  PUBLIC_URL: 'http://localhost:3000',
})
const app = await buildApp(config, { database: handle, logger: false, jobs: false })
try {
  const { db } = app
  const now = nowIso()
  for (let i = 0; i < lineCount; i++) {
    await db
      .insertInto('products')
      .values({
        name: `P${i}`,
        slug: `p${i}`,
        description: '',
        price_cents: 1000 + i,
        price_max_cents: 1000 + i,
        stock: 100,
        image_key: `k${i}`,
        image_url: `http://x/k${i}`,
        category_id: null,
        created_at: now,
        updated_at: now,
      })
      .execute()
  }
  await addMissingDefaultVariants(db)
  const user = await createUser(db, { name: 'Probe', email: 'probe@shop.test', password: 'secret123', role: 'customer' }, null)
  for (let i = 1; i <= lineCount; i++) await addToCart(db, { userId: user.id }, defaultCartSettings, { productId: i, quantity: 1 })
  const token = app.signToken({ id: user.id, role: 'customer' })
  const pricing = app.services.orders.pricing
  const route = await cpuMicros(() => app.inject({ method: 'GET', url: '/cart', headers: { authorization: `Bearer ${token}` } }))
  const health = await cpuMicros(() => app.inject({ method: 'GET', url: '/health' }))
  const emptyUser = await createUser(db, { name: 'Empty', email: 'empty@shop.test', password: 'secret123', role: 'customer' }, null)
  const emptyToken = app.signToken({ id: emptyUser.id, role: 'customer' })
  const empty = await cpuMicros(() => app.inject({ method: 'GET', url: '/cart', headers: { authorization: `Bearer ${emptyToken}` } }))
  const addresses = await cpuMicros(() => app.inject({ method: 'GET', url: '/addresses', headers: { authorization: `Bearer ${token}` } }))
  const view = await cpuMicros(() => getCartView(db, { userId: user.id }, pricing))
  const read = await cpuMicros(() => readCart(db, { userId: user.id }))
  console.log(`cart of ${lineCount} lines, ${calls} calls × 5 rounds, CPU µs per call (median round):`)
  console.log(`  GET /cart through app.inject: ${route.toFixed(1)}   (GET /health through app.inject: ${health.toFixed(1)})`)
  console.log(`  GET /cart of a user without a cart: ${empty.toFixed(1)}`)
  console.log(`  GET /addresses through app.inject (authentication and a small read): ${addresses.toFixed(1)}`)
  console.log(`  getCartView (reads, pricing, shape): ${view.toFixed(1)}`)
  console.log(`  readCart (the cart row and its lines): ${read.toFixed(1)}`)
} finally {
  await app.close()
  rmSync(dir, { recursive: true, force: true })
}
