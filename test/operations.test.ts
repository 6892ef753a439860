import { execFile, spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it, vi } from 'vitest'
import { connectDatabase } from '../src/db/connect.js'
import { dialect, useTestApp, buildTestApp } from './helpers/app.js'
import { freePort } from './helpers/server-process.js'
import { startInstances } from './helpers/shared-database.js'

const t = useTestApp()

describe('health, readiness and documentation', () => {
  it('GET /health answers {status: "ok"}', async () => {
    const res = await t.app.inject({ url: '/health' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ok' })
  })

  it('GET /ready answers 200 while the database answers, 503 {error} when it does not', async () => {
    expect((await t.app.inject({ url: '/ready' })).json()).toEqual({ status: 'ready' })
    const gone = await buildTestApp()
    try {
      // Its database closed under it.
      await gone.database.db.destroy()
      const res = await gone.app.inject({ url: '/ready' })
      expect(res.statusCode).toBe(503)
      expect(res.json()).toEqual({ error: 'La base de datos no responde' })
    } finally {
      await gone.close()
    }
  })

  it('GET /openapi.json is OpenAPI 3.1 generated from the route schemas', async () => {
    const res = await t.app.inject({ url: '/openapi.json' })
    expect(res.statusCode).toBe(200)
    const doc = res.json()
    expect(doc.openapi).toBe('3.1.0')
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/auth/register', '/auth/login', '/auth/users', '/auth/users/{id}', '/health']))
    expect(doc.paths['/auth/register'].post.requestBody.content['application/json'].schema.required).toEqual(['name', 'email', 'password'])
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  it('GET /docs serves the interactive documentation page', async () => {
    const res = await t.app.inject({ url: '/docs' })
    const page = res.statusCode === 302 ? await t.app.inject({ url: res.headers.location as string }) : res
    expect(page.statusCode).toBe(200)
    expect(page.headers['content-type']).toContain('text/html')
    expect(page.body).toContain('swagger')
  })
})

describe('error bodies are always {"error": "..."}', () => {
  it('unknown route: 404', async () => {
    const res = await t.app.inject({ url: '/no/such/route' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Ruta no encontrada' })
  })

  it('a URL that does not decode: 400; a path segment over 256 characters: 414; both {error}', async () => {
    for (const url of ['/products/%E0%A4%A', '/categories/%', '/%zz']) {
      const res = await t.app.inject({ url })
      expect(res.statusCode, url).toBe(400)
      expect(res.json()).toEqual({ error: 'La URL no es válida' })
      expect(res.headers['x-request-id']).toBeTruthy()
    }
    const long = await t.app.inject({ url: `/products/${'1'.repeat(257)}` })
    expect(long.statusCode).toBe(414)
    expect(long.json()).toEqual({ error: 'La URL es demasiado larga' })
    // Up to the limit the route answers as usual.
    const id = await t.app.inject({ url: `/products/${'1'.repeat(256)}` })
    expect(id.statusCode).toBe(422)
  })

  it('malformed JSON: 400', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/login', headers: { 'content-type': 'application/json' }, payload: '{"email": ' })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ error: 'El cuerpo de la petición no es JSON válido' })
  })

  it('prototype pollution in JSON is refused with 400', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: '{"__proto__": {"admin": true}, "email": "a@b.co", "password": "x"}',
    })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ error: 'El cuerpo de la petición no es JSON válido' })
  })

  it('body over 1 MiB: 413', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(1_100_000) }),
    })
    expect(res.statusCode).toBe(413)
    expect(res.json()).toEqual({ error: 'El cuerpo de la petición es demasiado grande' })
  })

  it('wrong content type: 415', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/login', headers: { 'content-type': 'text/plain' }, payload: 'email=a@b.co' })
    expect(res.statusCode).toBe(415)
    expect(res.json()).toEqual({ error: 'Tipo de contenido no soportado' })
  })

  it('an unexpected failure: 500 "Error interno del servidor", the cause only in the log', async () => {
    const lines: string[] = []
    const { app, close } = await buildTestApp({}, { logger: { level: 'error', stream: { write: (line: string) => lines.push(line) } } })
    try {
      app.get('/boom', async () => {
        throw new Error('secret database detail')
      })
      const res = await app.inject({ url: '/boom' })
      expect(res.statusCode).toBe(500)
      expect(res.json()).toEqual({ error: 'Error interno del servidor' })
      expect(res.body).not.toContain('secret database detail')
      expect(lines.join('')).toContain('secret database detail')
    } finally {
      await close()
    }
  })
})

describe('request ids and logs', () => {
  it('answers with an X-Request-Id, keeping a sane incoming one', async () => {
    const own = await t.app.inject({ url: '/health', headers: { 'x-request-id': 'abc-123' } })
    expect(own.headers['x-request-id']).toBe('abc-123')
    const generated = await t.app.inject({ url: '/health', headers: { 'x-request-id': 'bad id\nwith newline' } })
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('never logs a password or a token', async () => {
    const lines: string[] = []
    const { app, close } = await buildTestApp({}, { logger: { level: 'trace', stream: { write: (line: string) => lines.push(line) } } })
    await app.inject({ method: 'POST', url: '/auth/register', payload: { name: 'Log', email: 'log@shop.test', password: 'hunter22-secret' } })
    const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'log@shop.test', password: 'hunter22-secret' } })
    await app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${login.json().token}` } })
    await close()
    const log = lines.join('')
    expect(log).toContain('/auth/login')
    expect(log).not.toContain('hunter22-secret')
    expect(log).not.toContain(login.json().token)
  })
})

describe('the first admin', () => {
  it('is created at start-up from ADMIN_EMAIL/ADMIN_PASSWORD, once', async () => {
    // Two starts on the same database: the second changes nothing.
    const starts = await startInstances(2, 'first-admin', { env: { ADMIN_EMAIL: 'Boss@Shop.test', ADMIN_PASSWORD: 'boss-pass', ADMIN_NAME: 'Boss' } })
    try {
      const [app] = starts.apps
      const admins = await app!.db.selectFrom('users').selectAll().where('email', '=', 'boss@shop.test').execute()
      expect(admins).toHaveLength(1)
      expect(admins[0]).toMatchObject({ name: 'Boss', role: 'admin' })
      const login = await app!.inject({ method: 'POST', url: '/auth/login', payload: { email: 'boss@shop.test', password: 'boss-pass' } })
      expect(login.json().user.role).toBe('admin')
    } finally {
      await starts.close()
    }
  })
})

// The process-level checks run once, on the SQLite default, as a new user would run the service.
describe.runIf(dialect === 'sqlite')('the server process', () => {
  const run = promisify(execFile)
  const tsx = ['--import', 'tsx']

  // Each CLI process loads the sources through tsx: 20 s for the four on a quiet 2-core VM, past 30 s on a slower one
  // running the other test projects beside it.
  it('the CLI migrates and creates an admin for operators (slow: four CLI processes under tsx)', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-cli-'))
    const env = { ...process.env, DATA_DIR: dir, NODE_ENV: 'development' }
    // Refused before it opens the database: it runs beside the others.
    const incomplete = run(process.execPath, [...tsx, 'src/cli.ts', 'create-admin', '--email', 'x@shop.test'], { env }).catch((error: unknown) => error)
    const migrated = await run(process.execPath, [...tsx, 'src/cli.ts', 'migrate'], { env })
    expect(migrated.stdout).toContain('2026-11-22T0000-initial')
    const created = await run(process.execPath, [...tsx, 'src/cli.ts', 'create-admin', '--email', 'Ops@Shop.test', '--password', 'ops-pass', '--name', 'Ops'], {
      env,
    })
    expect(created.stdout).toContain('Admin ops@shop.test created')
    const twice = await run(process.execPath, [...tsx, 'src/cli.ts', 'create-admin', '--email', 'ops@shop.test', '--password', 'ops-pass'], { env })
    expect(twice.stdout).toContain('already exists')
    const { db } = connectDatabase(`sqlite:${join(dir, 'shop.db')}`)
    expect(await db.selectFrom('users').select(['email', 'role', 'name']).execute()).toEqual([{ email: 'ops@shop.test', role: 'admin', name: 'Ops' }])
    await db.destroy()
    expect(await incomplete).toMatchObject({ code: 2 })
  })

  it('starts on a fresh data folder, serves /health, and exits cleanly on SIGTERM', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-server-'))
    const port = await freePort()
    const child = spawn(process.execPath, [...tsx, 'src/server.ts'], {
      env: { ...process.env, DATA_DIR: dir, PORT: String(port), HOST: '127.0.0.1', NODE_ENV: 'development', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    // 30 s: the server loads its sources through tsx, past 10 s on a slow 2-core VM running the other projects.
    const health = await vi.waitFor(() => fetch(`http://127.0.0.1:${port}/health`), { timeout: 30_000, interval: 50 })
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: 'ok' })
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(output).toContain('shutting down')
  })

  it('refuses to start in production without JWT_SECRET, with one clear line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-prod-'))
    const result = await run(process.execPath, [...tsx, 'src/server.ts'], {
      env: { ...process.env, DATA_DIR: dir, NODE_ENV: 'production', JWT_SECRET: '' },
    }).catch((error) => error)
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('JWT_SECRET is required when NODE_ENV=production')
  })
})
