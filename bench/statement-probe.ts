// Counts the statements the service sends for each request of checkout-eu's two loops (plain: add, view, order; EU:
// add, code, order to a book address with a method), one customer over app.inject on PostgreSQL, where every
// statement is a round trip. Each loop runs twice; the second pass is printed (the caches warm, as under load).
// Usage: npx tsx bench/statement-probe.ts (VERBOSE=1 prints the statements). TEST_DATABASE_URL as checkout-probe.ts.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase } from '../src/db/connect.js'
import { createUser } from '../src/modules/users/users.service.js'
import { makeProduct } from '../test/helpers/catalog.js'
import { createPgSchema } from '../test/helpers/pg-schema.js'

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
let log: string[] | undefined
// Every statement goes through pg.Client's query (Kysely's pool hands out Clients): counted there.
const query = Reflect.get(pg.Client.prototype, 'query') as (this: pg.Client, ...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0] as string | { text: string }
  const text = typeof first === 'string' ? first : first.text
  // The outbox's dispatcher polls meanwhile: not the request's.
  if (!text.includes('"outbox"')) log?.push(text)
  return query.apply(this, args)
} as typeof pg.Client.prototype.query

const schema = await createPgSchema(PG_URL, 'stmts')
const dataDir = mkdtempSync(join(tmpdir(), 'stmts-'))
const config = loadConfig({
  NODE_ENV: 'test',
  JWT_SECRET: 'statement-probe-secret-long-enough-000000',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  DATABASE_URL: PG_URL,
})
const app = await buildApp(config, { database: connectDatabase(PG_URL, { schema: schema.name }), logger: false })
try {
  const admin = await createUser(app.db, { name: 'A', email: 'a@probe.test', password: 'secret123', role: 'admin' }, null)
  const customer = await createUser(app.db, { name: 'C', email: 'c@probe.test', password: 'secret123', role: 'customer' }, null)
  const as = (user: { id: number; email: string; role: string }) => ({ authorization: `Bearer ${app.signToken(user as never)}` })
  const call = async (user: typeof admin, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => {
    const res = await app.inject({ method, url, headers: as(user), ...(payload ? { payload } : {}) })
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.json() as { id: number }
  }
  const productId = (await makeProduct(app, { name: 'Taza', priceCents: 1210, stock: 1000 })).id
  await call(admin, 'POST', '/discount-codes', { code: 'PROBE10', type: 'percent', value: 10 })
  const method = await call(admin, 'POST', '/shipping-methods', { name: 'Envío', price: 4.9, countries: ['ES'], taxClass: 'standard', active: false })
  const address = await call(customer, 'POST', '/addresses', { fullName: 'C', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' })
  const steps = (eu: boolean): Array<[string, () => Promise<unknown>]> => [
    ['add', () => call(customer, 'POST', '/cart/add', { productId, quantity: 1 })],
    eu ? ['code', () => call(customer, 'POST', '/cart/discount', { code: 'PROBE10' })] : ['view', () => call(customer, 'GET', '/cart')],
    ['order', () => call(customer, 'POST', '/orders', eu ? { shippingAddressId: address.id, shippingMethodId: method.id } : undefined)],
  ]
  for (const [pass, eu] of [
    [1, false],
    [1, true],
    [2, false],
    [2, true],
  ] as const) {
    await call(admin, 'PATCH', `/shipping-methods/${method.id}`, { active: eu })
    if (eu) await call(admin, 'POST', '/tax-rates', { country: 'ES', taxClass: 'standard', rate: 21 }).catch(() => undefined)
    for (const [name, step] of steps(eu)) {
      log = []
      await step()
      if (pass === 2) {
        console.log(`${eu ? 'EU' : 'plain'} ${name}: ${log.length}`)
        if (process.env.VERBOSE) for (const text of log) console.log('   ', text.replace(/\s+/g, ' ').slice(0, 300))
      }
      log = undefined
    }
  }
} finally {
  await app.close()
  await schema.drop()
  rmSync(dataDir, { recursive: true, force: true })
}
