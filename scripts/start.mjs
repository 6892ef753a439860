// `npm start`: runs the compiled service from dist/ (under a second to the first answer, where loading the
// TypeScript sources through tsx takes about three). In a development checkout, dist/ is built first when it
// is missing or a file under src/ is newer than it (scripts/build.mjs, under a second). A production install
// (no dev dependencies) runs dist/ as it is.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../', import.meta.url))
const stamp = join(root, 'dist', '.built')
const src = join(root, 'src')

/** Whether some file under src/ changed after the last build (or there is none). */
function stale() {
  if (!existsSync(stamp)) return true
  const built = statSync(stamp).mtimeMs
  return readdirSync(src, { recursive: true, withFileTypes: true }).some(
    (entry) => entry.isFile() && statSync(join(entry.parentPath, entry.name)).mtimeMs > built,
  )
}

if (existsSync(join(root, 'node_modules', 'esbuild')) && existsSync(src) && stale()) {
  await import('./build.mjs')
} else if (!existsSync(join(root, 'dist', 'server.js'))) {
  console.error('dist/server.js is missing: run `npm run build` while the dev dependencies are installed (npm ci), then start again')
  process.exit(1)
}
process.setSourceMapsEnabled(true)
await import(new URL('../dist/server.js', import.meta.url).href)
