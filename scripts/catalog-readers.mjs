// The test files the cache-on Vitest project runs (vitest.config.ts), and CI expects to have run there
// (.ci/check-results.mjs): those that read the catalog over HTTP, i.e. whose source names `/products` or
// `/categories`, the only answers the product read cache serves. Paths relative to the project's root.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export function catalogReaders(dir = 'test') {
  const found = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) found.push(...catalogReaders(path))
    else if (entry.name.endsWith('.test.ts') && /['"`]\/(products|categories)\b/.test(readFileSync(path, 'utf8'))) found.push(path)
  }
  return found
}
