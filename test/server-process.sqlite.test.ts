import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { multipart, pngPart } from './helpers/catalog.js'
import { startAndStop } from './helpers/npm-run.js'
import { type BuiltServer, buildServer, freePort, runServer, serverEnv, spawnServer, waitForHealth } from './helpers/server-process.js'

// The service as a process (`node dist/server.js`, the Dockerfile's CMD; `npm run dev`): what an operator sees
// when it cannot start, what its output is made of, and what a signal leaves behind. SQLite only (the file
// name keeps it out of the other projects): nothing here depends on the database.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
let server: BuiltServer
const dirs: string[] = []
const dataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'shop-process-'))
  dirs.push(dir)
  return dir
}

beforeAll(async () => {
  server = await buildServer()
}, 60_000)
afterAll(() => {
  server?.remove()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** Something else listening on a port of 127.0.0.1. */
async function occupy(): Promise<{ port: number; close: () => Promise<void> }> {
  const port = await freePort()
  const holder: Server = createServer()
  await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve))
  return { port, close: () => new Promise((resolve) => holder.close(() => resolve())) }
}

/** Every non-empty line of `text` is a JSON object. */
function expectJsonLines(text: string): Record<string, unknown>[] {
  const lines = text.split('\n').filter((line) => line.trim() !== '')
  return lines.map((line) => {
    let parsed: unknown
    expect(() => (parsed = JSON.parse(line)), `not JSON: ${line}`).not.toThrow()
    expect(typeof parsed, line).toBe('object')
    return parsed as Record<string, unknown>
  })
}

describe('a port that is already in use', () => {
  it('stops the start-up with one plain line on stderr naming the port and PORT, and exit status 1', async () => {
    const taken = await occupy()
    try {
      const run = await runServer(server, serverEnv({ DATA_DIR: dataDir(), PORT: String(taken.port) }))
      expect(run.code).toBe(1)
      expect(run.stderr).toBe(`Cannot start: port ${taken.port} on 127.0.0.1 is already in use (EADDRINUSE); stop what holds it or set PORT.\n`)
      // Standard output is the JSON log of the start-up, without a stack trace.
      const lines = expectJsonLines(run.stdout)
      expect(run.stdout).not.toMatch(/EADDRINUSE|stack/)
      expect(lines.every((line) => (line.level as number) < 50)).toBe(true)
    } finally {
      await taken.close()
    }
  })

  it('METRICS_PORT taken: the line names METRICS_PORT', async () => {
    const taken = await occupy()
    try {
      const run = await runServer(
        server,
        serverEnv({ DATA_DIR: dataDir(), PORT: String(await freePort()), METRICS_ENABLED: 'true', METRICS_PORT: String(taken.port) }),
      )
      expect(run.code).toBe(1)
      expect(run.stderr).toBe(`Cannot start: port ${taken.port} on 127.0.0.1 is already in use (EADDRINUSE); stop what holds it or set METRICS_PORT.\n`)
    } finally {
      await taken.close()
    }
  })
})

describe('request logs with the service’s own logger', () => {
  it('a cached catalog read served again is logged like any other, and the service stays up', async () => {
    const port = await freePort()
    const proc = spawnServer(server, serverEnv({ DATA_DIR: dataDir(), PORT: String(port) }))
    try {
      await waitForHealth(port)
      // The second and third answers come from the catalog cache, which writes its own log line.
      for (let i = 0; i < 3; i++) expect((await fetch(`http://127.0.0.1:${port}/products?limit=5`)).status).toBe(200)
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200)
    } finally {
      const run = await proc.stop()
      expect(run.signal === 'SIGTERM' || run.code === 0).toBe(true)
      const lines = expectJsonLines(run.stdout)
      const reads = lines.filter((line) => (line.req as { url?: string } | undefined)?.url?.startsWith('/products'))
      expect(reads.length).toBeGreaterThanOrEqual(3)
      expect(run.stdout).not.toContain('uncaught')
    }
  })
})

describe('process warnings', () => {
  it('are JSON log lines, once each: the AWS SDK loaded for STORAGE_DRIVER=s3 (its Node 20 notice), nothing on stderr', async () => {
    const port = await freePort()
    // A store that refuses connections: the SDK loads at the first upload, which then fails (500).
    const store = await freePort()
    const proc = spawnServer(
      server,
      serverEnv({
        DATA_DIR: dataDir(),
        PORT: String(port),
        STORAGE_DRIVER: 's3',
        S3_BUCKET: 'shop-images',
        S3_ENDPOINT: `http://127.0.0.1:${store}`,
        S3_PUBLIC_URL: `http://127.0.0.1:${store}/shop-images`,
        S3_FORCE_PATH_STYLE: 'true',
        S3_ACCESS_KEY_ID: 'fake',
        S3_SECRET_ACCESS_KEY: 'fake',
        S3_MAX_ATTEMPTS: '1',
        ADMIN_EMAIL: 'admin@shop.test',
        ADMIN_PASSWORD: 'admin-secret-1',
      }),
    )
    try {
      await waitForHealth(port)
      const base = `http://127.0.0.1:${port}`
      const login = await fetch(`${base}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'admin@shop.test', password: 'admin-secret-1' }),
      })
      const { token } = (await login.json()) as { token: string }
      for (let i = 0; i < 2; i++) {
        const form = await multipart({ name: `Lámpara ${i}`, price: '1' }, [pngPart()])
        const res = await fetch(`${base}/products`, {
          method: 'POST',
          headers: { ...form.headers, authorization: `Bearer ${token}` },
          body: new Uint8Array(form.payload),
        })
        expect(res.status).toBe(500)
      }
    } finally {
      const run = await proc.stop()
      expect(run.stderr).toBe('')
      const lines = expectJsonLines(run.stdout)
      expect(lines.filter((line) => line.msg === 'image upload failed')).toHaveLength(2)
      const warnings = lines.filter((line) => (line.warning as { name?: string } | undefined)?.name !== undefined)
      if (Number(process.versions.node.split('.')[0]) < 22) {
        // The SDK's notice, nine lines of plain text before, is one warning line of the log.
        expect(warnings).toHaveLength(1)
        expect(warnings[0]).toMatchObject({
          level: 40,
          msg: expect.stringMatching(/^NodeVersionSupportWarning: The AWS SDK for JavaScript \(v3\) .* node >=22\./),
        })
      } else {
        expect(warnings).toEqual([])
      }
    }
  })
})

describe('`npm run dev`', () => {
  it('SIGTERM to npm (a supervisor, a terminal closed) leaves no tsx process behind (slow: tsx compiles the service as it starts)', async () => {
    await startAndStop(ROOT, 'dev', serverEnv({ DATA_DIR: dataDir() }))
  })
})

describe('the pieces, without a process', () => {
  it('the warning router: JSON lines in the log shape until the logger is there, then the logger; once per code, or per name and message', async () => {
    const { createWarningRouter } = await import('../src/process-warnings.js')
    const written: string[] = []
    const logged: [object, string][] = []
    const router = createWarningRouter((line) => written.push(line))
    const deprecation = Object.assign(new Error('Buffer() is deprecated'), { name: 'DeprecationWarning', code: 'DEP0005' })
    router.onWarning(deprecation)
    router.onWarning(deprecation)
    expect(written).toHaveLength(1)
    expect(JSON.parse(written[0] as string)).toMatchObject({
      level: 40,
      pid: process.pid,
      warning: { name: 'DeprecationWarning', code: 'DEP0005' },
      msg: 'DeprecationWarning: Buffer() is deprecated',
    })
    router.attach({ warn: (fields, message) => logged.push([fields, message]) })
    const notice = Object.assign(new Error('NodeVersionSupportWarning: The AWS SDK\nwill require node >=22.\n\nMore information'), { name: 'Warning' })
    router.onWarning(notice)
    router.onWarning(notice)
    router.onWarning(Object.assign(new Error('another notice'), { name: 'Warning' }))
    router.onWarning(deprecation)
    expect(logged).toEqual([
      [{ warning: { name: 'Warning' } }, 'NodeVersionSupportWarning: The AWS SDK will require node >=22. More information'],
      [{ warning: { name: 'Warning' } }, 'another notice'],
    ])
    expect(written).toHaveLength(1)
  })

  it('the listen failures: one line naming the variable to change; anything else is not one of them', async () => {
    const { listenFailureLine } = await import('../src/listen-errors.js')
    const config = { port: 80, host: '0.0.0.0', metrics: { enabled: false, port: null } }
    const failure = (code: string, fields: object = {}) => Object.assign(new Error(`listen ${code}`), { code, syscall: 'listen', ...fields })
    expect(listenFailureLine(failure('EACCES', { address: '0.0.0.0', port: 80 }), config)).toBe(
      'Cannot start: port 80 on 0.0.0.0 needs privileges this process does not have (EACCES); use a port from 1024 up or set PORT.',
    )
    expect(listenFailureLine(failure('EADDRNOTAVAIL', { address: '10.9.9.9', port: 80 }), config)).toBe(
      'Cannot start: 10.9.9.9 is not an address of this machine (EADDRNOTAVAIL); set HOST.',
    )
    expect(listenFailureLine(failure('ENOTFOUND', { hostname: 'shop.invalid' }), config)).toBe(
      'Cannot start: HOST shop.invalid does not resolve to an address (ENOTFOUND); set HOST.',
    )
    expect(listenFailureLine(failure('EMFILE'), config)).toBeUndefined()
    expect(listenFailureLine('EADDRINUSE', config)).toBeUndefined()
  })
})
