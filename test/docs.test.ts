import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { errorCodes, messages } from '../src/shared/errors.js'
import { useTestApp } from './helpers/app.js'

// The repository documents its own API: a user has nothing but the repository.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')
const pages = [
  'README.md',
  'clients/typescript/README.md',
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
  const t = useTestApp()

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

  it('lists every error code of the source, and only those, with its status and title', () => {
    const section = apiDoc.slice(apiDoc.indexOf('### Error codes'))
    const table = section.slice(0, section.indexOf('\n### ', 1))
    const rows = [...table.matchAll(/^\| `([a-z_]+)` \| ([^|]+) \| ([^|]+) \|/gm)].map(([, code, status, title]) => ({
      code,
      status: status?.trim(),
      title: title?.trim(),
    }))
    expect(rows.map((row) => row.code).sort()).toEqual(Object.keys(errorCodes).sort())
    for (const row of rows) {
      const source = errorCodes[row.code as keyof typeof errorCodes]
      expect({ code: row.code, status: row.status, title: row.title }).toEqual({ code: row.code, status: String(source.status ?? '4xx'), title: source.title })
    }
  })

  it('quotes every message the service answers, word for word', () => {
    const samples: Record<string, string> = {
      requiresRoles: messages.requiresRoles(['admin']),
      insufficientStockFor: messages.insufficientStockFor('<product name>'),
      productUnavailable: messages.productUnavailable('<name>'),
      transitionNotAllowed: messages.transitionNotAllowed('<from>', '<to>'),
      invalidImageType: messages.invalidImageType('<type>'),
      invalidImageExtension: messages.invalidImageExtension('<ext>'),
      strayFileField: messages.strayFileField('<name>'),
      controlCharacters: messages.controlCharacters('<field>'),
      shippingUnavailable: messages.shippingUnavailable('<country>'),
      tooManyOptions: messages.tooManyOptions('<n>' as unknown as number),
      optionExists: messages.optionExists('<name>'),
      optionValueInUse: messages.optionValueInUse('<n>' as unknown as number),
      optionValueExists: messages.optionValueExists('<value>'),
      tooManyVariants: messages.tooManyVariants('<n>' as unknown as number),
      skuTaken: messages.skuTaken('<sku>'),
      variantExists: messages.variantExists('<title>'),
      tooManyImages: messages.tooManyImages('<n>' as unknown as number),
      tooManyImageFiles: messages.tooManyImageFiles(10),
      strayImagesField: messages.strayImagesField('<name>'),
      discountMinSubtotal: messages.discountMinSubtotal('<amount>', '<currency>'),
      importMissingColumn: messages.importMissingColumn('<name>'),
      importUnknownColumn: messages.importUnknownColumn('<name>'),
      importInvalidCsv: messages.importInvalidCsv('<detail>'),
      importTooManyRows: messages.importTooManyRows('<n>' as unknown as number),
      importVariantNotFound: messages.importVariantNotFound('<id>' as unknown as number),
      importSkuOfAnotherVariant: messages.importSkuOfAnotherVariant('<sku>'),
      importRowsDisagree: messages.importRowsDisagree('<slug>', '<column>'),
      importOptionsDisagree: messages.importOptionsDisagree('<slug>'),
      importNoSku: messages.importNoSku('<slug>'),
      importCategoryMissing: messages.importCategoryMissing('<slug>'),
      orderNotShippable: messages.orderNotShippable('<status>'),
      orderItemNotInOrder: messages.orderItemNotInOrder('<orderItemId>' as unknown as number),
      fulfillQuantityTooLarge: messages.fulfillQuantityTooLarge('<orderItemId>' as unknown as number),
      returnTransitionNotAllowed: messages.returnTransitionNotAllowed('<from>', '<to>'),
      returnQuantityTooLarge: messages.returnQuantityTooLarge('<orderItemId>' as unknown as number),
      withdrawalWindowClosed: messages.withdrawalWindowClosed('<YYYY-MM-DD>'),
      withdrawalQuantityTooLarge: messages.withdrawalQuantityTooLarge('<orderItemId>' as unknown as number),
      refundQuantityTooHigh: messages.refundQuantityTooHigh('<orderItemId>' as unknown as number),
      refundShippingTooHigh: messages.refundShippingTooHigh('<remaining>'),
      refundAmountTooHigh: messages.refundAmountTooHigh('<refundable>'),
      requiresPermission: messages.requiresPermission('<permission>'),
    }
    for (const [name, message] of Object.entries(messages)) {
      const text = typeof message === 'string' ? message : samples[name]
      expect(text, `a sample for messages.${name}`).toBeDefined()
      expect(apiDoc, `messages.${name}`).toContain(text)
    }
  })
})

describe("the README's layout", () => {
  const readme = read('README.md')
  const block = /## Layout\n\n```\n([\s\S]*?)```/.exec(readme)?.[1] ?? ''
  /** Each entry: its path (the line's first word) and its text, continuation lines included. */
  const entries: { path: string; text: string }[] = []
  for (const line of block.split('\n').filter((l) => l.trim() !== '')) {
    if (/^\s/.test(line)) (entries.at(-1) as { text: string }).text += ` ${line.trim()}`
    else entries.push({ path: line.split(/\s+/)[0] as string, text: line.slice(line.split(/\s+/)[0]!.length).trim() })
  }

  it('is there', () => {
    expect(entries.length).toBeGreaterThan(10)
  })

  it('names only paths that exist: each entry, and the files its text names', () => {
    for (const { path, text } of entries) {
      expect(existsSync(join(ROOT, path)), path).toBe(true)
      expect(path.endsWith('/'), `${path}: a folder ends with /`).toBe(statSync(join(ROOT, path)).isDirectory())
      // `read.ts` in the entry of src/config/ is src/config/read.ts; `src/config.ts` is from the root.
      const base = path.endsWith('/') ? path : dirname(path)
      for (const [name] of text.matchAll(/[\w@./-]+\.(?:ts|mjs|md)\b/g)) {
        const file = name.includes('/') ? name : join(base, name)
        expect(existsSync(join(ROOT, file)), `${path}: ${name}`).toBe(true)
      }
    }
  })

  it('names every file and folder at the top of src/, and every module of src/modules/', () => {
    const named = new Set(entries.flatMap(({ path, text }) => [path, ...[...text.matchAll(/[\w./-]+/g)].map(([word]) => word)]))
    for (const entry of readdirSync(join(ROOT, 'src'), { withFileTypes: true })) {
      const path = `src/${entry.name}${entry.isDirectory() ? '/' : ''}`
      const short = entry.name
      expect(named.has(path) || (!entry.isDirectory() && named.has(short)), path).toBe(true)
    }
    const modules = entries.find((entry) => entry.path === 'src/modules/')?.text ?? ''
    for (const entry of readdirSync(join(ROOT, 'src/modules'), { withFileTypes: true }).filter((e) => e.isDirectory())) {
      expect(modules, `src/modules/${entry.name}/`).toMatch(new RegExp(`\\b${entry.name}\\b`))
    }
  })

  it('names the top-level folders a newcomer opens: scripts, admin, the typed client, docs, test, bench', () => {
    const paths = entries.map((entry) => entry.path)
    for (const folder of ['scripts/', 'admin/', 'clients/typescript/', 'docs/', 'test/', 'bench/']) expect(paths).toContain(folder)
  })
})
