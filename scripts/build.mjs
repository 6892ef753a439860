// Compiles src/ into dist/ for `npm start` and production: esbuild, file by file (no bundling), with source
// maps, plus every non-TypeScript file under src/ (templates) copied alongside. Under a second; type checking
// is `npm run typecheck`'s job (tsc), not the build's.
//   node scripts/build.mjs [--outdir <dir>]
import { cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = fileURLToPath(new URL('../', import.meta.url))
const flag = process.argv.indexOf('--outdir')
const outdir = flag > 0 ? process.argv[flag + 1] : join(root, 'dist')
const src = join(root, 'src')

const files = readdirSync(src, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())
const sources = files.filter((entry) => entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')).map((entry) => join(entry.parentPath, entry.name))
const assets = files.filter((entry) => !entry.name.endsWith('.ts')).map((entry) => join(entry.parentPath, entry.name))

const started = Date.now()
rmSync(outdir, { recursive: true, force: true })
await build({ entryPoints: sources, outdir, outbase: src, format: 'esm', platform: 'node', target: 'node20', sourcemap: true, logLevel: 'warning' })
for (const asset of assets) {
  const target = join(outdir, relative(src, asset))
  mkdirSync(dirname(target), { recursive: true })
  cpSync(asset, target)
}
// When this build was made: `npm start` (scripts/start.mjs) rebuilds when a file under src/ is newer.
writeFileSync(join(outdir, '.built'), `${new Date().toISOString()}\n`)
console.log(`built ${relative(root, outdir) || outdir}/ from ${sources.length} files in ${Date.now() - started} ms`)
