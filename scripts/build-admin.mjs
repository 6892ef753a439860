// Builds the admin dashboard (admin/ → admin/dist/), which the service serves at /admin.
// Runs at `npm install` (postinstall), with `npm run build:admin`, and from `npm start` when admin/dist is missing.
// It never fails the install: when the dashboard cannot be built it prints why, and the API works without it.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const admin = join(root, 'admin')
const onlyIfMissing = process.argv.includes('--if-missing')
const strict = process.argv.includes('--strict')

function done(line, failed = false) {
  console.log(`admin dashboard: ${line}`)
  process.exit(failed && strict ? 1 : 0)
}

if (onlyIfMissing && existsSync(join(admin, 'dist', 'index.html'))) process.exit(0)
if (!existsSync(join(admin, 'package.json'))) done('not built (no admin/ folder in this copy); the API works without it', true)

let viteBin
try {
  viteBin = join(dirname(createRequire(join(admin, 'package.json')).resolve('vite/package.json')), 'bin', 'vite.js')
} catch {
  // The dashboard's packages are development ones (admin/package.json): they build admin/dist, which is all the service
  // serves. A production install (`npm ci --omit=dev`) has none of them, and keeps the build made before it.
  if (existsSync(join(admin, 'dist', 'index.html')) && !strict)
    done('kept the build in admin/dist, served at /admin (its build tools are development packages, not installed here)')
  done('not built (vite is not installed, e.g. `npm install --omit=dev` elsewhere); run `npm install` then `npm run build:admin`', true)
}

const started = Date.now()
const result = spawnSync(process.execPath, [viteBin, 'build', '--logLevel', 'error'], { cwd: admin, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
if (result.status !== 0) {
  const why = `${result.stderr ?? ''}${result.stdout ?? ''}`.trim().split('\n').slice(-5).join(' | ') || result.error?.message || `exit ${result.status}`
  done(`not built (${why}); the API works without it, run \`npm run build:admin\` to retry`, true)
}
done(`built into admin/dist in ${((Date.now() - started) / 1000).toFixed(1)} s, served at /admin`)
