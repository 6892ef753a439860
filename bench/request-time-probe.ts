// Times each request of checkout-eu's two loops (plain: add, view, order; EU: add, code, order to a book address
// with a method) and each SQLite statement it runs: one customer over app.inject on a file database, blocks of 300
// loops of each kind in turn (the first 30 of a block left out: caches warming), the rate and the method only in the
// EU blocks, as in the bench. Statements are timed around better-sqlite3's run/all/get, so what a request's
// statements cost (and how many it sends) can be compared between the loops and between two versions of the code.
// The outbox dispatcher's statements (it claims and settles deliveries between requests, on the same thread) are
// counted apart, as "outbox dispatcher", though their time lands inside a request's.
// Usage: npx tsx bench/request-time-probe.ts [blocks=10] (STATEMENTS=1 lists the statements)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Sqlite from 'better-sqlite3'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase } from '../src/db/connect.js'
import { checkoutEuLoops } from './checkout-eu-loops.js'

/** The request being timed ('' between requests): each statement's time is counted under it. */
let current = ''
const statementTimes = new Map<string, { calls: number; micros: number }>()

// Every statement goes through a prepared Statement's run, all or get: timed there.
type Runner = (...args: unknown[]) => unknown
const prepare = Reflect.get(Sqlite.prototype, 'prepare') as (this: Sqlite.Database, source: string) => Sqlite.Statement
Reflect.set(Sqlite.prototype, 'prepare', function (this: Sqlite.Database, source: string) {
  const statement = prepare.call(this, source)
  for (const name of ['run', 'all', 'get'] as const) {
    const run = Reflect.get(statement, name) as Runner
    Reflect.set(statement, name, (...args: unknown[]) => {
      const started = process.hrtime.bigint()
      const result = run.apply(statement, args)
      if (current !== '') {
        const owner = source.startsWith('update "outbox"') ? 'outbox dispatcher' : current
        const key = `${owner} | ${source.replace(/\s+/g, ' ').slice(0, 100)}`
        const entry = statementTimes.get(key) ?? { calls: 0, micros: 0 }
        entry.calls += 1
        entry.micros += Number(process.hrtime.bigint() - started) / 1000
        statementTimes.set(key, entry)
      }
      return result
    })
  }
  return statement
})

const dataDir = mkdtempSync(join(tmpdir(), 'request-times-'))
const url = `sqlite:${join(dataDir, 'shop.db')}`
const config = loadConfig({
  NODE_ENV: 'test',
  JWT_SECRET: 'request-time-probe-secret-long-enough-00',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  DATABASE_URL: url,
})
const app = await buildApp(config, { database: connectDatabase(url, { readers: { threads: 0 } }), logger: false })
try {
  const { steps, setEu } = await checkoutEuLoops(app, 10_000_000)
  const times = new Map<string, number[]>()
  const blocks = Number(process.argv[2] ?? 10)
  for (let block = 0; block < blocks; block++) {
    for (const eu of [false, true]) {
      // As the bench's windows: the plain loop on a shop without the rate and the method.
      await setEu(eu)
      for (let i = 0; i < 300; i++) {
        for (const [name, step] of steps(eu)) {
          const key = `${eu ? 'EU' : 'plain'} ${name}`
          current = i >= 30 ? key : ''
          const started = process.hrtime.bigint()
          await step()
          if (current !== '') times.set(key, [...(times.get(key) ?? []), Number(process.hrtime.bigint() - started) / 1000])
          current = ''
        }
      }
    }
  }
  const loops = times.get('plain add')?.length ?? 1
  for (const [key, list] of [...times, ['outbox dispatcher', []] as [string, number[]]]) {
    list.sort((a, b) => a - b)
    const mean = list.length === 0 ? Number.NaN : list.reduce((a, b) => a + b, 0) / list.length
    const statements = [...statementTimes].filter(([name]) => name.startsWith(`${key} |`))
    const calls = statements.reduce((sum, [, entry]) => sum + entry.calls, 0) / loops
    const micros = statements.reduce((sum, [, entry]) => sum + entry.micros, 0) / loops
    const timed = list.length === 0 ? 'per loop of each kind' : `mean ${mean.toFixed(0)} µs, p50 ${list[list.length >> 1]?.toFixed(0)} µs`
    console.log(`${key}: ${timed}; ${calls.toFixed(1)} statements, ${micros.toFixed(0)} µs in SQLite`)
  }
  if (process.env.STATEMENTS) {
    for (const [key, entry] of [...statementTimes].sort(([a], [b]) => a.localeCompare(b)))
      console.log(`${(entry.micros / loops).toFixed(1).padStart(7)} µs ${(entry.calls / loops).toFixed(2)}×  ${key}`)
  }
} finally {
  await app.close()
  rmSync(dataDir, { recursive: true, force: true })
}
