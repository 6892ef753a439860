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
import { checkoutEuLoops } from './checkout-eu-loops.js'

const dataDir = mkdtempSync(join(tmpdir(), 'frames-'))
const file = join(dataDir, 'shop.db')
const url = `sqlite:${file}`
const config = loadConfig({ NODE_ENV: 'test', JWT_SECRET: 'frame-probe-secret-long-enough-0000000', DATA_DIR: dataDir, LOG_LEVEL: 'silent', DATABASE_URL: url })
const handle = connectDatabase(url, { readers: { threads: 0 } })
const app = await buildApp(config, { database: handle, logger: false })
const reader = new Sqlite(file)
const checker = new Sqlite(file)
try {
  const { steps, setEu } = await checkoutEuLoops(app, 100_000)
  reader.exec('BEGIN')
  reader.prepare('select count(*) from users').get()
  const wal = () => (checker.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0]!.log
  const frames: Record<string, number[]> = {}
  for (let pass = 1; pass <= 200; pass++) {
    for (const eu of [false, true]) {
      // As the bench's windows: the plain loop on a shop without the rate and the method.
      await setEu(eu)
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
