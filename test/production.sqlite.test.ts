import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialect } from './helpers/app.js'
import { startAndStop } from './helpers/npm-run.js'

/**
 * A production install, as an operator makes it: the project built with its dev dependencies
 * (`npm run build` needs TypeScript), then installed without them (`npm ci --omit=dev`: no tsx, no
 * TypeScript, no vitest). A real `npm ci` would download; instead the production packages of the
 * lock file are linked from this checkout's node_modules, and nothing else is, so a command that
 * still needs tsx fails here exactly as it does on the server. Then the operator commands are run
 * through npm, the way docs/operations.md tells operators to run them.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const run = promisify(execFile)

let install = ''
let env: NodeJS.ProcessEnv = {}

/** The environment of a shell on the server: no node_modules/.bin of this checkout on PATH, no npm_* of the test run. */
function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && !/^(VITEST|TEST_)/.test(name)))
  const path = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => !dir.includes('node_modules'))
    .join(delimiter)
  return { ...clean, PATH: path, NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-with-many-different-chars-0123456789', LOG_LEVEL: 'info', ...extra }
}

function npm(args: string[], extra: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return run('npm', ['--silent', ...args], { cwd: install, env: { ...env, ...extra } }).then(
    (ok) => ({ code: 0, ...ok }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  )
}

// Process groups and `npm` on PATH: POSIX only. On SQLite only (the file name keeps it out of the PostgreSQL
// project): the default a new operator gets; nothing in the install depends on the database.
describe.runIf(dialect === 'sqlite' && process.platform !== 'win32')('a production install (npm run build, then npm ci --omit=dev)', () => {
  beforeAll(async () => {
    install = mkdtempSync(join(tmpdir(), 'shop-prod-install-'))
    for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'src', 'scripts']) {
      if (existsSync(join(ROOT, entry))) cpSync(join(ROOT, entry), join(install, entry), { recursive: true })
    }
    // `npm run build`, while the dev dependencies are there (esbuild).
    await run(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', join(install, 'dist')])
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> }
    for (const [path, entry] of Object.entries(lock.packages)) {
      // Top-level packages only (nested ones come with their parent); dev-only ones are what --omit=dev leaves out.
      if (!/^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) || entry.dev || !existsSync(join(ROOT, path))) continue
      mkdirSync(dirname(join(install, path)), { recursive: true })
      symlinkSync(join(ROOT, path), join(install, path), 'dir')
    }
    // The dashboard as the install before this one left it: built into admin/dist (its packages are development ones).
    mkdirSync(join(install, 'admin', 'dist', 'assets'), { recursive: true })
    cpSync(join(ROOT, 'admin', 'package.json'), join(install, 'admin', 'package.json'))
    writeFileSync(join(install, 'admin', 'dist', 'index.html'), '<!doctype html><title>Shop dashboard</title><div id="root"></div>')
    env = serverEnv({ DATA_DIR: join(install, 'data') })
  }, 180_000)
  afterAll(() => {
    if (install) rmSync(install, { recursive: true, force: true })
  })

  it('has no tsx and no TypeScript, as on the server', () => {
    for (const name of ['tsx', 'typescript', 'vitest', '.bin']) expect(existsSync(join(install, 'node_modules', name)), name).toBe(false)
    expect(existsSync(join(install, 'node_modules', 'fastify'))).toBe(true)
    expect(existsSync(join(install, 'dist', 'cli.js'))).toBe(true)
  })

  it('npm run migrate, create-admin and seed work there (from dist/cli.js) (slow: six npm commands)', async () => {
    // Neither opens the database: they run beside the others.
    const refusing = npm(['run', 'create-admin', '--', '--email', 'notanemail', '--password', 'ops-pass-1'])
    const usage = npm(['run', 'cli'])
    const migrated = await npm(['run', 'migrate'])
    expect(migrated).toMatchObject({ code: 0, stderr: '' })
    expect(migrated.stdout).toContain('Applied: 2026-11-22T0000-initial')
    const created = await npm(['run', 'create-admin', '--', '--email', 'ops@shop.test', '--password', 'ops-pass-1'])
    expect(created).toMatchObject({ code: 0, stdout: expect.stringContaining('Admin ops@shop.test created') })
    const refused = await refusing
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('create-admin: email must be a valid email')
    const seeded = await npm(['run', 'seed'], { PUBLIC_URL: 'https://shop.example.com' })
    expect(seeded.stdout).toContain('Demo catalog: 4 categories and 12 products added')
    expect(seeded.stderr).toBe('')
    // Seeding production with PUBLIC_URL left at localhost would store localhost image URLs: said on stderr.
    const local = await npm(['run', 'seed'])
    expect(local.stdout).toContain('Demo catalog: 0 categories and 0 products added')
    expect(local.stderr).toContain('Warning: PUBLIC_URL is http://localhost:3000 in production')
    const cli = await usage
    expect(cli.stderr + cli.stdout).toContain('Usage: npm run cli -- <command>')
  })

  it('keeps the dashboard built before, without a warning, and serves it (the install’s postinstall, then npm run start:prod)', async () => {
    // What `npm ci --omit=dev` runs at its end. It said "not built (vite is not installed…)" of a build it kept.
    const postinstall = await npm(['run', 'postinstall'])
    expect(postinstall).toEqual({
      code: 0,
      stdout: 'admin dashboard: kept the build in admin/dist, served at /admin (its build tools are development packages, not installed here)\n',
      stderr: '',
    })
    expect(existsSync(join(install, 'admin', 'dist', 'index.html'))).toBe(true)
    await startAndStop(install, 'start:prod', env, async (base) => {
      const page = await fetch(`${base}/admin/`)
      expect(page.status).toBe(200)
      expect(await page.text()).toContain('<title>Shop dashboard</title>')
    })
  })

  it.each(['start:prod', 'start'])('SIGTERM to `npm run %s` stops node too, gracefully, and leaves no process behind', async (script) => {
    const { output } = await startAndStop(install, script, env)
    // What an operator sees at start: one clear warning about PUBLIC_URL, and no deprecation warning.
    const warnings = output.split('\n').filter((line) => line.includes('PUBLIC_URL'))
    expect(warnings).toHaveLength(1)
    expect(JSON.parse(warnings[0] as string)).toMatchObject({ level: 40, msg: expect.stringContaining('PUBLIC_URL is http://localhost:') })
    expect(output).not.toMatch(/FSTDEP|DeprecationWarning|\(node:\d+\) \[/)
    // No dev dependencies: `npm start` runs the build as it is.
    expect(output).not.toContain('built dist/')
  })
})

describe.runIf(dialect === 'sqlite' && process.platform !== 'win32')('`npm start` in a checkout', () => {
  let checkout = ''
  beforeAll(() => {
    checkout = mkdtempSync(join(tmpdir(), 'shop-checkout-'))
    for (const entry of ['package.json', 'src', 'scripts']) cpSync(join(ROOT, entry), join(checkout, entry), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'), 'dir')
  })
  afterAll(() => {
    if (checkout) rmSync(checkout, { recursive: true, force: true })
  })

  it('builds dist/ when it is missing or older than src/, and runs it (slow: three starts, two of them building dist/)', async () => {
    const dev = serverEnv({ NODE_ENV: 'development', DATA_DIR: join(checkout, 'data') })
    const first = await startAndStop(checkout, 'start', dev)
    expect(first.output).toMatch(/built dist\/ from \d+ files in \d+ ms/)
    expect(existsSync(join(checkout, 'dist', 'server.js'))).toBe(true)

    // Outside the tests a route's validators are compiled at its first request (src/shared/validation.ts):
    // the first and the next answers are the same.
    const second = await startAndStop(checkout, 'start', dev, async (base) => {
      for (let i = 0; i < 2; i++) {
        const bad = await fetch(`${base}/auth/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"name":"Ana","email":"no","password":"secret123"}',
        })
        expect([bad.status, await bad.json()]).toEqual([422, { error: 'email must be a valid email' }])
      }
      const good = await fetch(`${base}/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name":"Ana","email":"ana@shop.test","password":"secret123"}',
      })
      expect(good.status).toBe(201)
    })
    expect(second.output).not.toContain('built dist/')

    // An edited source file: the next start builds again.
    const edited = join(checkout, 'src', 'shared', 'time.ts')
    const later = new Date(Date.now() + 5000)
    utimesSync(edited, later, later)
    const third = await startAndStop(checkout, 'start', dev)
    expect(third.output).toMatch(/built dist\/ from \d+ files/)
  })
})
