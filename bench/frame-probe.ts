// Counts what each request of checkout-eu's two loops (plain: add, view, order; EU: add, code, order to a book
// address with a method) writes to SQLite's WAL, in frames (a page written at a commit, each about 25-30 µs on the
// 2-core VM with its share of the checkpoint): one customer over app.inject on a file database, the outbox's
// deliveries of each order given 50 ms before the next loop (they write too). A second connection holds a read open
// throughout, so no checkpoint resets the WAL and its growth is the request's. The first 10 of 200 passes are left
// out (caches warming).
// Usage: npx tsx bench/frame-probe.ts
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Sqlite from 'better-sqlite3'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase } from '../src/db/connect.js'
import { createUser } from '../src/modules/users/users.service.js'
import { makeProduct } from '../test/helpers/catalog.js'

const dataDir = mkdtempSync(join(tmpdir(), 'frames-'))
const file = join(dataDir, 'shop.db')
const url = `sqlite:${file}`
const config = loadConfig({ NODE_ENV: 'test', JWT_SECRET: 'frame-probe-secret-long-enough-0000000', DATA_DIR: dataDir, LOG_LEVEL: 'silent', DATABASE_URL: url })
const handle = connectDatabase(url, { readers: { threads: 0 } })
const app = await buildApp(config, { database: handle, logger: false })
const reader = new Sqlite(file)
const checker = new Sqlite(file)
try {
  const admin = await createUser(app.db, { name: 'A', email: 'a@probe.test', password: 'secret123', role: 'admin' }, null)
  const customer = await createUser(app.db, { name: 'C', email: 'c@probe.test', password: 'secret123', role: 'customer' }, null)
  const as = (user: { id: number; email: string; role: string }) => ({ authorization: `Bearer ${app.signToken(user as never)}` })
  const call = async (user: typeof admin, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: object) => {
    const res = await app.inject({ method, url: path, headers: as(user), ...(payload ? { payload } : {}) })
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body}`)
    return res.json() as { id: number }
  }
  const productId = (await makeProduct(app, { name: 'Taza', priceCents: 1210, stock: 100000 })).id
  await call(admin, 'POST', '/discount-codes', { code: 'PROBE10', type: 'percent', value: 10 })
  const method = await call(admin, 'POST', '/shipping-methods', { name: 'Envío', price: 4.9, countries: ['ES'], taxClass: 'standard', active: false })
  const address = await call(customer, 'POST', '/addresses', { fullName: 'C', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' })
  const steps = (eu: boolean): Array<[string, () => Promise<unknown>]> => [
    ['add', () => call(customer, 'POST', '/cart/add', { productId, quantity: 1 })],
    eu ? ['code', () => call(customer, 'POST', '/cart/discount', { code: 'PROBE10' })] : ['view', () => call(customer, 'GET', '/cart')],
    ['order', () => call(customer, 'POST', '/orders', eu ? { shippingAddressId: address.id, shippingMethodId: method.id } : undefined)],
  ]
  reader.exec('BEGIN')
  reader.prepare('select count(*) from users').get()
  const wal = () => (checker.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0]!.log
  const frames: Record<string, number[]> = {}
  let rateId: number | undefined
  for (let pass = 1; pass <= 200; pass++) {
    for (const eu of [false, true]) {
      // As the bench's windows: the plain loop on a shop without the rate and the method.
      await call(admin, 'PATCH', `/shipping-methods/${method.id}`, { active: eu })
      if (eu) rateId = (await call(admin, 'POST', '/tax-rates', { country: 'ES', taxClass: 'standard', rate: 21 })).id
      else if (rateId !== undefined) {
        const deleted = await app.inject({ method: 'DELETE', url: `/tax-rates/${rateId}`, headers: as(admin) })
        if (deleted.statusCode >= 300) throw new Error(`DELETE /tax-rates/${rateId}: ${deleted.statusCode} ${deleted.body}`)
      }
      // Wait for the outbox's deliveries of the order before, which write too.
      await new Promise((resolve) => setTimeout(resolve, 50))
      for (const [name, step] of steps(eu)) {
        const before = wal()
        await step()
        const key = `${eu ? 'EU' : 'plain'} ${name}`
        ;(frames[key] ??= []).push(wal() - before)
      }
    }
  }
  reader.exec('COMMIT')
  for (const [key, list] of Object.entries(frames)) {
    const tail = list.slice(10)
    console.log(`${key}: ${(tail.reduce((a, b) => a + b, 0) / tail.length).toFixed(2)} frames`)
  }
} finally {
  reader.close()
  checker.close()
  await app.close()
  rmSync(dataDir, { recursive: true, force: true })
}
