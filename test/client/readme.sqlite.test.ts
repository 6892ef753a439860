import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { afterAll, describe, expect, it } from 'vitest'

// The typed client's README (clients/typescript/README.md) shows the purchase flow in a few lines of TypeScript.
// They must compile against the generated types as they are today: a renamed route or field breaks this test, not
// a reader's first try. (Once: it reads files only.)

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const dir = mkdtempSync(join(ROOT, 'clients/typescript/examples/.readme-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The first ```ts block after `heading` in the client's README. */
function snippet(heading: string): string {
  const readme = readFileSync(join(ROOT, 'clients/typescript/README.md'), 'utf8')
  const section = readme.slice(readme.indexOf(heading))
  const block = /```ts\n([\s\S]*?)```/.exec(section)
  if (!block?.[1]) throw new Error(`no TypeScript block after ${heading}`)
  return block[1]
}

/** Type errors of `source` compiled as a module of the project (the settings of tsconfig.json). */
function typeErrors(source: string): string[] {
  const file = join(dir, 'snippet.ts')
  // `export {}`: a module, so its top-level await and names are its own.
  writeFileSync(file, `${source}\nexport {}\n`)
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (path) => ts.sys.readFile(path))
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT)
  const program = ts.createProgram([file], { ...options, noEmit: true, noUnusedLocals: false, rootDir: ROOT })
  return ts
    .getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file?.fileName === file)
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
}

describe("the typed client's README", () => {
  it("shows the purchase flow in TypeScript that compiles against today's types", () => {
    const source = snippet('## The purchase flow')
    expect(source).toContain("from '@shop-api/client'")
    expect(typeErrors(source)).toEqual([])
  })

  it("shows how to read an error's code and field in TypeScript that compiles, and a code the service lacks would not", () => {
    const source = snippet('## Errors: `code` and `field`')
    expect(source).toContain('isProblem(error)')
    expect(typeErrors(source)).toEqual([])
    expect(typeErrors(source.replace("'insufficient_stock'", "'out_of_stock'")).join('\n')).toMatch(/out_of_stock/)
  })

  it('would say so if it did not (a path that is not in the API)', () => {
    const broken = snippet('## The purchase flow').replace("shop.GET('/products'", "shop.GET('/product'")
    expect(typeErrors(broken).join('\n')).toMatch(/\/product/)
  })
})
