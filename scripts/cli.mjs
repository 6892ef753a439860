// Runs the operator CLI (src/cli.ts) the way the install allows: from the TypeScript sources when
// tsx is installed (a development checkout), else from the compiled dist/cli.js. A production
// install (`npm run build`, then `npm ci --omit=dev`) has no tsx, so `npm run migrate`,
// `create-admin` and `seed` must not need it.
import { existsSync } from 'node:fs'

const root = new URL('../', import.meta.url)

let tsx
try {
  tsx = await import('tsx/esm/api')
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error
}

if (tsx) {
  tsx.register()
  await import(new URL('src/cli.ts', root).href)
} else if (existsSync(new URL('dist/cli.js', root))) {
  process.setSourceMapsEnabled(true)
  await import(new URL('dist/cli.js', root).href)
} else {
  console.error(
    'dist/cli.js is missing and tsx is not installed: run `npm run build` while the dev dependencies are installed (npm ci), then `npm ci --omit=dev`',
  )
  process.exitCode = 1
}
