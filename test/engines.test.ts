import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import semver from 'semver'
import { describe, expect, it } from 'vitest'

// `engines.node` in package.json is a promise to whoever installs the service: every installed package
// must accept every Node version it allows (npm prints EBADENGINE otherwise, and such a package may not run).
const ROOT = join(import.meta.dirname, '..')
const ours = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node

/** Every package in node_modules (scoped ones included, nested ones too), with its declared engines.node. */
function installed(dir = join(ROOT, 'node_modules')): { name: string; node: string | undefined }[] {
  const found: { name: string; node: string | undefined }[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue
    if (entry.name.startsWith('@')) {
      found.push(...installed(join(dir, entry.name)))
      continue
    }
    const path = join(dir, entry.name)
    try {
      const manifest = JSON.parse(readFileSync(join(path, 'package.json'), 'utf8')) as { name?: string; engines?: { node?: string } }
      found.push({ name: manifest.name ?? entry.name, node: manifest.engines?.node })
    } catch {
      continue
    }
    try {
      found.push(...installed(join(path, 'node_modules')))
    } catch {
      // no nested node_modules
    }
  }
  return found
}

describe('engines', () => {
  it('declares a Node range from 20 on', () => {
    expect(semver.validRange(ours)).not.toBeNull()
    expect(semver.minVersion(ours)?.major).toBe(20)
  })

  it('every installed package accepts every Node version package.json allows', () => {
    const narrower = installed()
      .filter((pkg) => pkg.node !== undefined && semver.validRange(pkg.node) !== null && !semver.subset(ours, pkg.node))
      .map((pkg) => `${pkg.name} wants node ${pkg.node}`)
    expect(narrower).toEqual([])
  })
})

// Node 20 reached its end of life in April 2026: it still works (engines, the build's target), but 22 is the
// version the project names as its own, wherever one is named.
describe('the default Node version', () => {
  const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')

  it('is 22: .nvmrc, every stage of the Dockerfile, the README, and the CI smoke run of 22 (and 24)', () => {
    expect(read('.nvmrc').trim()).toBe('22')
    expect(semver.satisfies('22.13.0', ours)).toBe(true)
    const images = [...read('Dockerfile').matchAll(/^FROM (node:\S+)/gm)].map((m) => m[1])
    expect(images.length).toBeGreaterThan(0)
    for (const image of images) expect(image).toBe('node:22-bookworm-slim')
    expect(read('README.md')).toMatch(/Node 22 \(the default: `\.nvmrc`, the Docker image\)/)
    const smoke = /bash \.ci\/node-smoke\.sh (.+)/.exec(read('.ci/run'))?.[1]?.split(/\s+/) ?? []
    expect(smoke.map((version) => semver.major(version)).sort()).toEqual([22, 24])
  })
})
