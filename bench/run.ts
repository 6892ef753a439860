// `npm run bench [-- --db sqlite|postgres|both] [--scenario NAME[,NAME…]] [--quick] [--no-build]`
//
// Builds the service, and per database: seeds a fresh shop, starts `node dist/server.js` in
// production mode, runs the scenarios with autocannon from separate processes, and compares each
// figure in the same run with its yardstick (a bare node:http server answering the same bytes, or
// the same work without HTTP). Prints a Markdown table and writes it, with every sample, as JSON
// under bench/results/.
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { csvScenario } from './csv.js'
import { BENCH_DIR, ROOT, startService, stopLoaders } from './processes.js'
import { type DatabaseRun, describeMachine, measureBackgroundLoad, renderMarkdown } from './report.js'
import {
  adminWrite,
  afterSale,
  cartView,
  catalogFacets,
  catalogFilter,
  catalogItem,
  catalogList,
  checkout,
  checkoutEu,
  checkoutShipping,
  loginStorm,
  outbox,
  SCENARIOS,
  type ScenarioName,
  type ScenarioResult,
  type Settings,
  type Shop,
  upload,
  webhook,
} from './scenarios.js'
import { createFreshDatabase, dropDatabase, type SeededShop, type SeedPlan, seedShop, seedVariantsShop } from './seed.js'
import type { DbKind } from './types.js'

const USAGE = 'usage: npm run bench -- [--db sqlite|postgres|both] [--scenario NAME[,NAME…]] [--quick] [--no-build]'

function parseOptions() {
  const { values } = parseArgs({
    options: {
      db: { type: 'string', default: 'sqlite' },
      scenario: { type: 'string', multiple: true },
      quick: { type: 'boolean', default: false },
      'no-build': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  })
  if (values.help) {
    console.log(`${USAGE}\nscenarios: ${SCENARIOS.join(', ')}`)
    process.exit(0)
  }
  const dbs: DbKind[] = values.db === 'both' ? ['sqlite', 'postgres'] : [values.db as DbKind]
  if (!dbs.every((db) => db === 'sqlite' || db === 'postgres')) throw new Error(`unknown --db ${values.db}\n${USAGE}`)
  const requested = (values.scenario ?? []).flatMap((s) => s.split(',')).map((s) => s.trim())
  for (const name of requested) {
    if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`unknown scenario ${name}; one of ${SCENARIOS.join(', ')}`)
  }
  const scenarios = requested.length > 0 ? SCENARIOS.filter((s) => requested.includes(s)) : [...DEFAULT_SCENARIOS]
  // The command as recorded names the scenarios only when they are not the default list.
  const named = scenarios.length !== DEFAULT_SCENARIOS.length || scenarios.some((s) => !DEFAULT_SCENARIOS.includes(s))
  return { dbs, scenarios, named, quick: values.quick, build: !values['no-build'] }
}

const log = (message: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`)

/**
 * The small shop (1,000 products, every 5th in 24 variants) serves every scenario but catalog-filter (100,000
 * products).
 */
const SMALL_SHOP: SeedPlan = { products: 1_000, categories: 10, cartCustomers: 100, cartLines: 5, checkoutCustomers: 32, optionedEvery: 5 }
const LARGE_SHOP: SeedPlan = { products: 100_000, categories: 20, cartCustomers: 0, cartLines: 0, checkoutCustomers: 0 }

const RUNNERS: Record<ScenarioName, (shop: Shop, settings: Settings) => Promise<ScenarioResult>> = {
  'catalog-list': catalogList,
  'catalog-item': catalogItem,
  'catalog-filter': catalogFilter,
  'catalog-facets': catalogFacets,
  'cart-view': cartView,
  checkout,
  'checkout-shipping': checkoutShipping,
  'checkout-eu': checkoutEu,
  webhook,
  'after-sale': afterSale,
  outbox,
  'login-storm': loginStorm,
  upload,
  'admin-write': adminWrite,
  csv: csvScenario,
}

/** Reads first, then the scenarios that write (checkout changes stock, upload adds products). */
const RUN_ORDER: readonly ScenarioName[] = [
  'catalog-list',
  'catalog-item',
  'cart-view',
  'login-storm',
  'checkout',
  'checkout-shipping',
  'checkout-eu',
  'webhook',
  'after-sale',
  'outbox',
  'admin-write',
  'csv',
  'upload',
  'catalog-filter',
  'catalog-facets',
]

/**
 * Run only when named (`--scenario catalog-facets`): its shop of 1.2 million variants takes 1 (SQLite) to 4
 * (PostgreSQL) minutes to seed, which would take the full run past its 15 minutes.
 */
const ONLY_WHEN_NAMED: readonly ScenarioName[] = ['catalog-facets']
const DEFAULT_SCENARIOS: readonly ScenarioName[] = SCENARIOS.filter((s) => !ONLY_WHEN_NAMED.includes(s))

async function runShop(
  kind: DbKind,
  name: 'small' | 'large' | 'variants',
  seed: (databaseUrl: string) => Promise<SeededShop>,
  scenarios: ScenarioName[],
  settings: Settings,
  scratchDir: string,
): Promise<ScenarioResult[]> {
  const databaseUrl = await createFreshDatabase(kind, name, scratchDir)
  try {
    log(`${kind}: seeding the ${name} shop`)
    const seeded = await seed(databaseUrl)
    const service = await startService({
      databaseUrl,
      dataDir: join(scratchDir, `data-${name}`),
      uploadDir: join(scratchDir, `uploads-${name}`),
      jwtSecret: randomBytes(48).toString('base64url'),
    })
    const results: ScenarioResult[] = []
    try {
      const shop: Shop = { kind, databaseUrl, service, seeded, scratchDir }
      for (const scenario of scenarios) {
        log(`${kind}: ${scenario}`)
        try {
          results.push(await RUNNERS[scenario](shop, settings))
        } catch (error) {
          // One broken scenario (or endpoint) must not cost the figures of the others.
          log(`${kind}: ${scenario} failed: ${String((error as Error)?.stack ?? error)}`)
          results.push({
            name: scenario,
            rows: [],
            targets: [{ scenario, target: 'the scenario runs', measured: 'failed', met: false }],
            notes: [`${scenario} failed: ${String((error as Error)?.message ?? error).split('\n')[0]}`],
            samples: {},
          })
        }
      }
    } finally {
      await service.stop()
    }
    return results
  } finally {
    await dropDatabase(kind, databaseUrl)
  }
}

async function main(): Promise<void> {
  const options = parseOptions()
  const started = Date.now()
  const command = `npm run bench -- --db ${options.dbs.length > 1 ? 'both' : options.dbs[0]}${options.quick ? ' --quick' : ''}${
    options.named ? ` --scenario ${options.scenarios.join(',')}` : ''
  }`
  const settings: Settings = options.quick
    ? { quick: true, seconds: 1.5, warmupSeconds: 0.5, rounds: 3, connections: 32, uploadsPerRound: 10 }
    : { quick: false, seconds: 6, warmupSeconds: 2, rounds: 3, connections: 32, uploadsPerRound: 40 }

  if (options.build) {
    log('building the service (npm run build)')
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' })
    if (build.status !== 0) throw new Error('npm run build failed')
  }

  const machine = describeMachine()
  const runs: DatabaseRun[] = []
  for (const kind of options.dbs) {
    const scratchDir = mkdtempSync(join(tmpdir(), 'shop-bench-'))
    try {
      const backgroundLoad = await measureBackgroundLoad()
      const dbStarted = Date.now()
      const small = RUN_ORDER.filter((s) => s !== 'catalog-filter' && s !== 'catalog-facets' && options.scenarios.includes(s))
      const scenarios: ScenarioResult[] = []
      if (small.length > 0) scenarios.push(...(await runShop(kind, 'small', (url) => seedShop(url, SMALL_SHOP), small, settings, scratchDir)))
      if (options.scenarios.includes('catalog-filter')) {
        scenarios.push(...(await runShop(kind, 'large', (url) => seedShop(url, LARGE_SHOP), ['catalog-filter'], settings, scratchDir)))
      }
      if (options.scenarios.includes('catalog-facets')) {
        scenarios.push(...(await runShop(kind, 'variants', (url) => seedVariantsShop(url), ['catalog-facets'], settings, scratchDir)))
      }
      // Back in the order of the issue.
      scenarios.sort((a, b) => SCENARIOS.indexOf(a.name) - SCENARIOS.indexOf(b.name))
      runs.push({ db: kind, startedAt: new Date(dbStarted).toISOString(), seconds: (Date.now() - dbStarted) / 1000, backgroundLoad, scenarios })
    } finally {
      rmSync(scratchDir, { recursive: true, force: true })
    }
  }

  const markdown = renderMarkdown(runs, machine, command)
  console.log(markdown)
  const resultsDir = join(BENCH_DIR, 'results')
  mkdirSync(resultsDir, { recursive: true })
  const file = join(resultsDir, `${new Date(started).toISOString().replace(/[:.]/g, '-')}-${options.dbs.join('-')}${options.quick ? '-quick' : ''}.json`)
  writeFileSync(file, `${JSON.stringify({ command, machine, settings, totalSeconds: (Date.now() - started) / 1000, runs, markdown }, null, 2)}\n`)
  log(`done in ${Math.round((Date.now() - started) / 1000)} s; results in ${file}`)
}

main().then(stopLoaders, (error: unknown) => {
  stopLoaders()
  console.error(error)
  process.exit(1)
})
