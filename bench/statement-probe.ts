// Counts the statements the service sends for each request of checkout-eu's two loops (plain: add, view, order; EU:
// add, code, order to a book address with a method), one customer over app.inject on PostgreSQL, where every
// statement is a round trip. Each loop runs twice in a row; the second pass is printed (the caches warm, as under load).
// Usage: npx tsx bench/statement-probe.ts (VERBOSE=1 prints the statements). TEST_DATABASE_URL as checkout-probe.ts.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { connectDatabase } from '../src/db/connect.js'
import { checkoutEuLoops } from './checkout-eu-loops.js'
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
  const { steps, setEu } = await checkoutEuLoops(app, 1000)
  for (const eu of [false, true]) {
    // As the bench's windows: the plain loop on a shop without the rate and the method. A change of the shop empties
    // caches the next requests fill again, so the loop runs twice after it and the second is printed.
    await setEu(eu)
    for (const pass of [1, 2]) {
      for (const [name, step] of steps(eu)) {
        // A write's NOTIFY to the change feed leaves after its answer: let it go before the next request's count.
        await new Promise((resolve) => setTimeout(resolve, 20))
        log = []
        await step()
        if (pass === 2) {
          console.log(`${eu ? 'EU' : 'plain'} ${name}: ${log.length}`)
          if (process.env.VERBOSE) for (const text of log) console.log('   ', text.replace(/\s+/g, ' ').slice(0, 300))
        }
        log = undefined
      }
    }
  }
} finally {
  await app.close()
  await schema.drop()
  rmSync(dataDir, { recursive: true, force: true })
}
