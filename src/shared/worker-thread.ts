import { Worker } from 'node:worker_threads'

/**
 * A worker thread running the module `name` beside `base` (a module's `import.meta.url`): the compiled .js in dist/;
 * from the TypeScript sources (tests, tsx), the .ts through tsx's loader, registered in the new thread before the
 * module is imported.
 */
export function startWorker(base: string, name: string, workerData: unknown): Worker {
  const url = new URL(base.endsWith('.ts') ? `./${name}.ts` : `./${name}.js`, base)
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { workerData })
  const code = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url.href)}) })`
  return new Worker(code, { eval: true, workerData })
}
