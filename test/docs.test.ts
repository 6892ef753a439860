import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { messages } from '../src/shared/errors.js'
import { type TestApp, createTestApp } from './helpers/app.js'

// The repository documents its own API: a user has nothing but the repository.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')
const pages = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
]
const apiDoc = read('docs/api.md')

describe('the documentation stays inside the repository', () => {
  it.each(pages)('%s links only to files that exist in the repository', (page) => {
    const links = [...read(page).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => (m[1] as string).split('#')[0] as string)
    for (const link of links.filter((l) => l !== '' && !/^[a-z]+:/i.test(l))) {
      const target = resolve(dirname(join(ROOT, page)), link)
      expect(target.startsWith(ROOT + '/') || target === ROOT, `${page} -> ${link}`).toBe(true)
      expect(existsSync(target), `${page} -> ${link}`).toBe(true)
    }
  })

  it.each(pages)('%s names no document outside the repository', (page) => {
    // The outside file was API.md (upper case); the project's own reference is docs/api.md.
    expect(read(page)).not.toMatch(/\.\.\/shared|\bAPI\.md\b/)
    expect(read(page)).not.toMatch(/\bcontract\b/i)
  })
})

describe('docs/api.md describes the API the service serves', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
  })
  afterAll(async () => t.close())

  it('names every route of /openapi.json, with its methods', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> }
    const rows = apiDoc.split('\n').filter((line) => line.startsWith('| '))
    for (const [path, operations] of Object.entries(doc.paths)) {
      const documented = path.replace(/\{(\w+)\}/g, ':$1')
      for (const method of Object.keys(operations).filter((m) => m !== 'head')) {
        const row = rows.find((r) => r.includes(`\`${documented}\``) && new RegExp(`\\b${method.toUpperCase()}\\b`).test(r))
        expect(row, `${method.toUpperCase()} ${documented}`).toBeDefined()
      }
    }
    for (const path of ['/openapi.json', '/docs']) expect(apiDoc).toContain(`\`${path}\``)
  })

  it('quotes every message the service answers, word for word', () => {
    const samples: Record<string, string> = {
      requiresRoles: messages.requiresRoles(['admin']),
      insufficientStockFor: messages.insufficientStockFor('<product name>'),
      transitionNotAllowed: messages.transitionNotAllowed('<from>', '<to>'),
      invalidImageType: messages.invalidImageType('<type>'),
      invalidImageExtension: messages.invalidImageExtension('<ext>'),
      strayFileField: messages.strayFileField('<name>'),
      controlCharacters: messages.controlCharacters('<field>'),
    }
    for (const [name, message] of Object.entries(messages)) {
      const text = typeof message === 'string' ? message : samples[name]
      expect(text, `a sample for messages.${name}`).toBeDefined()
      expect(apiDoc, `messages.${name}`).toContain(text)
    }
  })
})
