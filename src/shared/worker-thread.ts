import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'

/**
 * A worker thread running the module `name` beside `base` (a module's `import.meta.url`): the compiled .js in dist/;
 * from the TypeScript sources (tests, tsx), the .ts through tsx's loader, registered in the new thread before the
 * module is imported. tsx is found from this project, not from the process's working directory (the thread's code is
 * evaluated there).
 */
export function startWorker(base: string, name: string, workerData: unknown): Worker {
  const url = new URL(base.endsWith('.ts') ? `./${name}.ts` : `./${name}.js`, base)
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { workerData })
  const tsx = tsxEsmApi(base)
  const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(url.href)}) })`
  return new Worker(code, { eval: true, workerData })
}

/**
 * The URL of tsx's `tsx/esm/api` module for `import` (its package's export map; `require.resolve` would give the
 * CommonJS one, whose `register` fails inside a thread).
 */
function tsxEsmApi(base: string): string {
  const manifest = createRequire(base).resolve('tsx/package.json')
  const exports = (JSON.parse(readFileSync(manifest, 'utf8')) as { exports: Record<string, { import: { default: string } }> }).exports
  const entry = exports['./esm/api']?.import.default
  if (!entry) throw new Error('tsx has no tsx/esm/api module to import')
  return pathToFileURL(join(dirname(manifest), entry)).href
}
