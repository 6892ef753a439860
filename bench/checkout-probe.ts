// Orders per second with N concurrent customers (default 32), each looping "add to cart, place order":
// once over HTTP against the service in its own process, once calling the same service functions directly.
// Usage: npx tsx bench/checkout-probe.ts [sqlite|postgres] [seconds=10] [customers=32]
// PostgreSQL uses TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) in a throw-away schema.
import { fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase } from '../src/db/connect.js'
import { addToCart, defaultCartSettings } from '../src/modules/cart/cart.service.js'
import { createOrdersDeps, placeOrder } from '../src/modules/orders/orders.service.js'
import { createUser } from '../src/modules/users/users.service.js'
import { nowIso } from '../src/shared/time.js'
import { createPgSchema, type PgSchema } from '../test/helpers/pg-schema.js'
import { addMissingDefaultVariants } from '../src/modules/catalog/variants.repository.js'

const JWT_SECRET = 'checkout-probe-secret-that-is-long-enough-0000'
const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

interface Target {
  dialect: 'sqlite' | 'postgres'
  url: string
  schema?: string
}

function open(target: Target) {
  return connectDatabase(target.url, target.schema ? { schema: target.schema } : {})
}

function config(target: Target, dataDir: string) {
  return loadConfig({ NODE_ENV: 'test', JWT_SECRET, DATA_DIR: dataDir, LOG_LEVEL: 'silent', DATABASE_URL: target.url })
}

/** Child process: the service, listening on a free port, reported to the parent over IPC. */
async function serve(target: Target, dataDir: string): Promise<void> {
  const app = await buildApp(config(target, dataDir), { database: open(target), logger: false })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  process.send?.({ address })
  process.on('disconnect', () => void app.close().then(() => process.exit(0)))
}

async function loopFor(seconds: number, customers: number, body: (i: number) => Promise<boolean>) {
  let orders = 0
  let failures = 0
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(
    Array.from({ length: customers }, async (_, i) => {
      while (performance.now() < deadline) {
        try {
          if (await body(i)) orders += 1
          else failures += 1
        } catch {
          failures += 1
        }
      }
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  return { orders, failures, ordersPerSecond: Math.round(orders / elapsed) }
}

async function main(): Promise<void> {
  const dialect = process.argv[2] === 'postgres' ? 'postgres' : 'sqlite'
  const seconds = Number(process.argv[3] ?? 10)
  const customers = Number(process.argv[4] ?? 32)
  const dataDir = mkdtempSync(join(tmpdir(), 'checkout-probe-'))
  let target: Target = { dialect: 'sqlite', url: `sqlite:${join(dataDir, 'shop.db')}` }
  let schema: PgSchema | undefined
  if (dialect === 'postgres') {
    schema = await createPgSchema(PG_URL, 'probe')
    target = { dialect: 'postgres', url: PG_URL, schema: schema.name }
  }

  // Seed: customers with tokens and 20 products with stock that never runs out during the run.
  const app = await buildApp(config(target, dataDir), { database: open(target), logger: false })
  const users = await Promise.all(
    Array.from({ length: customers }, (_, i) =>
      createUser(app.db, { name: `C${i}`, email: `c${i}@probe.test`, password: 'secret123', role: 'customer' }, null),
    ),
  )
  const tokens = users.map((u) => app.signToken(u))
  const now = nowIso()
  const products = await app.db
    .insertInto('products')
    .values(
      Array.from({ length: 20 }, (_, i) => ({
        name: `P${i}`,
        slug: `p${i}`,
        description: '',
        price_cents: 1999 + i,
        price_max_cents: 1999 + i,
        stock: 100_000_000,
        image_key: `k${i}`,
        image_url: `http://x/${i}`,
        category_id: null,
        created_at: now,
        updated_at: now,
      })),
    )
    .returning('id')
    .execute()
  await addMissingDefaultVariants(app.db)
  const productIds = products.map((p) => p.id)
  await app.close()
  const pick = () => productIds[Math.floor(Math.random() * productIds.length)] as number

  const child = fork(fileURLToPath(import.meta.url), ['--serve', JSON.stringify(target), dataDir], { execArgv: ['--import', 'tsx'] })
  const address = await new Promise<string>((resolve) => child.once('message', (m) => resolve((m as { address: string }).address)))
  const http = await loopFor(seconds, customers, async (i) => {
    const headers = { authorization: `Bearer ${tokens[i]}`, 'content-type': 'application/json' }
    const added = await fetch(`${address}/cart/add`, { method: 'POST', headers, body: JSON.stringify({ productId: pick(), quantity: 1 }) })
    await added.arrayBuffer()
    const ordered = await fetch(`${address}/orders`, { method: 'POST', headers: { authorization: headers.authorization } })
    await ordered.arrayBuffer()
    return added.status < 300 && ordered.status === 201
  })
  child.disconnect()
  await new Promise((resolve) => child.once('exit', resolve))

  const { db } = open(target)
  const orderDeps = createOrdersDeps(db)
  const direct = await loopFor(seconds, customers, async (i) => {
    const userId = (users[i] as { id: number }).id
    await addToCart(db, { userId }, defaultCartSettings, { productId: pick(), quantity: 1 })
    return (await placeOrder(orderDeps, userId)).created
  })
  const stockSold = await db
    .selectFrom('order_items')
    .select((eb) => eb.fn.sum<number>('quantity').as('n'))
    .executeTakeFirstOrThrow()
  const stockLeft = await db
    .selectFrom('products')
    .select((eb) => eb.fn.sum<number>('stock').as('n'))
    .executeTakeFirstOrThrow()
  await db.destroy()

  await schema?.drop()
  rmSync(dataDir, { recursive: true, force: true })
  const consistent = Number(stockSold.n) + Number(stockLeft.n) === 20 * 100_000_000
  console.log(JSON.stringify({ dialect, customers, seconds, http, direct, stockConsistent: consistent }))
}

if (process.argv[2] === '--serve') {
  await serve(JSON.parse(process.argv[3] as string) as Target, process.argv[4] as string)
} else {
  await main()
}
