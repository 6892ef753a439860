import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// @shop-api/client is published to the npm registry (`npm publish --workspace clients/typescript`): its manifest
// must make an installable package, and its version says which service it types. (Once: it reads files only.)

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')

interface Manifest {
  name: string
  version: string
  private?: boolean
  license?: string
  type?: string
  files?: string[]
  exports?: Record<string, string | Record<string, string>>
  engines?: { node?: string }
  dependencies?: Record<string, string>
}
const service = JSON.parse(read('package.json')) as Manifest
const client = JSON.parse(read('clients/typescript/package.json')) as Manifest

describe('the typed client as a package', () => {
  it("has the service's version: the client of Shop API x.y.z is @shop-api/client x.y.z", () => {
    expect(client.version).toBe(service.version)
  })

  it('is publishable: not private, MIT like the service, with its own copy of the LICENSE', () => {
    expect(client.name).toBe('@shop-api/client')
    expect(client.private).toBeUndefined()
    expect(service.license).toBe('MIT')
    expect(client.license).toBe('MIT')
    expect(read('LICENSE')).toMatch(/^MIT License\n\nCopyright \(c\) 2026 The Shop API authors\n/)
    expect(read('clients/typescript/LICENSE')).toBe(read('LICENSE'))
    expect(client.engines?.node).toBeDefined()
  })

  it('exports types and an ES module, from files it ships', () => {
    expect(client.type).toBe('module')
    expect(client.exports?.['.']).toEqual({ types: './index.d.ts', import: './index.js' })
    for (const file of client.files ?? []) expect(existsSync(join(ROOT, 'clients/typescript', file)), file).toBe(true)
    for (const target of Object.values(client.exports?.['.'] ?? {})) expect(client.files).toContain(target.replace('./', ''))
    expect(client.files).toContain('schema.d.ts')
    // Everything index.js imports at run time is a dependency of the package, not of the service.
    const imports = [...read('clients/typescript/index.js').matchAll(/^import .* from '([^.][^']*)'/gm)].map((m) => m[1])
    expect(imports.length).toBeGreaterThan(0)
    for (const name of imports) expect(client.dependencies, name).toHaveProperty([name as string])
  })
})
