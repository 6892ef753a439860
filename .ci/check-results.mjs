// Fails CI when the PostgreSQL, Redis or browser tests were skipped instead of run.
// Every test file runs in the sqlite project and, except the ones below, in the postgres project; those that read
// the catalog over HTTP run again in the sqlite-cached project (the product read cache on, as in production).
// *.browser.test.ts run once, in the browser project.
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { catalogReaders } from '../scripts/catalog-readers.mjs'

const sqliteOnly = [
  /\.browser\.test\.ts$/,
  /\.redis\.test\.ts$/,
  /\.sqlite\.test\.ts$/,
  /\.s3\.test\.ts$/,
  /\.pgcluster\.test\.ts$/,
  /^test\/config\.test\.ts$/,
  /^test\/engines\.test\.ts$/,
  /^test\/totals\//,
]
const cached = new Set(catalogReaders())
const report = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const problems = []
const runs = new Map()
for (const file of report.testResults) {
  const name = relative(process.cwd(), file.name)
  const entry = runs.get(name) ?? { runs: 0, passed: 0, skipped: 0 }
  entry.runs += 1
  for (const test of file.assertionResults) {
    if (test.status === 'passed') entry.passed += 1
    else if (test.status === 'pending' || test.status === 'skipped' || test.status === 'todo') entry.skipped += 1
  }
  runs.set(name, entry)
}
for (const [name, entry] of runs) {
  const expected = sqliteOnly.some((pattern) => pattern.test(name)) ? 1 : cached.has(name) ? 3 : 2
  if (entry.runs !== expected)
    problems.push(
      `${name} ran ${entry.runs} time(s), expected ${expected} (sqlite, postgres, and sqlite-cached for a catalog reader: is TEST_DATABASE_URL set?)`,
    )
  if (/\.(redis|s3)\.test\.ts$/.test(name) && (entry.skipped > 0 || entry.passed === 0)) {
    problems.push(`${name}: ${entry.skipped} test(s) skipped, ${entry.passed} passed (is TEST_REDIS_URL set?)`)
  }
  // A throw-away PostgreSQL cluster: needs the server binaries (initdb, pg_ctl), and runuser when root.
  if (/\.pgcluster\.test\.ts$/.test(name) && (entry.skipped > 0 || entry.passed === 0)) {
    problems.push(`${name}: ${entry.skipped} test(s) skipped, ${entry.passed} passed (are PostgreSQL's server binaries installed?)`)
  }
  // The admin dashboard in Chromium (playwright-core): they skip themselves when no browser is installed.
  if (/\.browser\.test\.ts$/.test(name) && (entry.skipped > 0 || entry.passed === 0)) {
    problems.push(`${name}: ${entry.skipped} test(s) skipped, ${entry.passed} passed (is Chromium installed at /usr/bin/chromium?)`)
  }
}
if (![...runs.keys()].some((name) => name.endsWith('.redis.test.ts'))) problems.push('no Redis test file ran')
if (![...runs.keys()].some((name) => name.endsWith('.browser.test.ts'))) problems.push('no browser test file ran')
if (![...runs.keys()].some((name) => name.endsWith('.pgcluster.test.ts'))) problems.push('no PostgreSQL outage test file ran')
if (report.numFailedTests > 0 || !report.success) problems.push(`${report.numFailedTests} test(s) failed`)
if (problems.length > 0) {
  console.error(`CI check failed:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
  process.exit(1)
}
const total = [...runs.values()].reduce((n, e) => n + e.passed, 0)
console.log(`CI check: ${runs.size} test files; PostgreSQL, Redis, browser and catalog-cache-on tests ran.`)
console.log(`${total} passed, 0 failed`)
