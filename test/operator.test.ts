import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../src/app.js'
import { ConfigError, loadConfig } from '../src/config.js'
import { connectDatabase } from '../src/db/connect.js'
import { dialect, openTestDatabase, testConfig, useTestApp } from './helpers/app.js'
import { makeCategory, multipart, pngPart } from './helpers/catalog.js'
import { bearer } from './helpers/factories.js'

// What an operator meets on a first production run: the start-up log, the docs page, the CLI.

/** Builds the app with a logger that keeps every JSON line, and closes it. */
async function startLog(env: Record<string, string>, database?: Awaited<ReturnType<typeof openTestDatabase>>) {
  const lines: string[] = []
  const own = database ?? (await openTestDatabase())
  // A complete install: the dashboard is built (without a build the service also warns about that).
  const dashboard = mkdtempSync(join(tmpdir(), 'shop-admin-dist-'))
  writeFileSync(join(dashboard, 'index.html'), '<!doctype html><title>Admin</title>')
  const app = await buildApp(testConfig(env), {
    database: own.handle,
    adminUi: { root: dashboard },
    logger: { level: 'info', stream: { write: (line: string) => lines.push(line) } },
  })
  await app.ready()
  await app.close()
  if (!database) await own.drop()
  rmSync(dashboard, { recursive: true, force: true })
  return lines.map((line) => JSON.parse(line) as { level: number; msg: string; [key: string]: unknown })
}

describe('start-up log', () => {
  it('warns once, at warn level, when production runs with PUBLIC_URL at localhost', async () => {
    const urls = ['http://localhost:3000', 'http://127.0.0.1:8080', 'http://[::1]:3000', 'http://0.0.0.0']
    // Four starts, each on a database of its own: at once.
    const logs = await Promise.all(urls.map((url) => startLog({ NODE_ENV: 'production', PUBLIC_URL: url })))
    for (const [i, url] of urls.entries()) {
      const warnings = logs[i]!.filter((l) => l.level === 40)
      expect(
        warnings.map((l) => l.msg),
        url,
      ).toEqual([`PUBLIC_URL is ${url} in production: image URLs and Link headers will point at this machine; set PUBLIC_URL to the address clients use`])
    }
  })

  it('says nothing about PUBLIC_URL when it is a public address, or outside production', async () => {
    const quiet = (
      await Promise.all([
        startLog({ NODE_ENV: 'production', PUBLIC_URL: 'https://api.example.com' }),
        startLog({ NODE_ENV: 'development', PUBLIC_URL: 'http://localhost:3000' }),
      ])
    ).flat()
    expect(quiet.filter((l) => JSON.stringify(l).includes('PUBLIC_URL'))).toEqual([])
  })

  it('logs the first admin created from ADMIN_EMAIL (never the password), and that a second start changed nothing', async () => {
    const database = await openTestDatabase()
    const env = { ADMIN_EMAIL: 'Chief@Shop.test', ADMIN_PASSWORD: 'chief-pass-1', ADMIN_NAME: 'Chief' }
    const first = await startLog(env, database)
    const second = await startLog(env, database)
    await database.drop()
    expect(first.filter((l) => l.msg.toLowerCase().includes('admin'))).toEqual([
      expect.objectContaining({ level: 30, email: 'chief@shop.test', msg: 'Admin chief@shop.test created from ADMIN_EMAIL' }),
    ])
    expect(second.filter((l) => l.msg.toLowerCase().includes('admin'))).toEqual([
      expect.objectContaining({
        level: 30,
        email: 'chief@shop.test',
        msg: 'A user with e-mail chief@shop.test already exists; ADMIN_* changed nothing (its password stays as it was)',
      }),
    ])
    expect(JSON.stringify([first, second])).not.toContain('chief-pass-1')
  })

  it('prints no Fastify deprecation warning (FSTDEP022: maxParamLength belongs in routerOptions)', async () => {
    const warnings: Error[] = []
    const listener = (warning: Error) => warnings.push(warning)
    process.on('warning', listener)
    try {
      await startLog({})
      // process.emitWarning delivers on the next tick (process.nextTick): by the next turn of the event loop,
      // every warning of the start-up has arrived.
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', listener)
    }
    expect(warnings.map((w) => `${w.name} ${(w as { code?: string }).code}: ${w.message}`)).toEqual([])
  })
})

describe('interactive documentation', () => {
  const t = useTestApp({ PUBLIC_URL: 'https://api.example.com' })

  it('the OpenAPI document names a relative server, so "Try it out" works from any address', async () => {
    const { app, admin } = t
    const doc = await app.inject({ url: '/openapi.json' })
    expect(doc.json().servers).toEqual([{ url: '/' }])
    expect(doc.body).not.toContain('api.example.com')
    // The UI reads the same document.
    expect((await app.inject({ url: '/docs/json' })).json().servers).toEqual([{ url: '/' }])

    // Absolute addresses the API hands out still come from PUBLIC_URL.
    const category = await makeCategory(app)
    const form = await multipart({ name: 'Lamp', description: 'LED', price: '9.99', stock: '3', categoryId: String(category.id) }, [pngPart('lamp.png')])
    const created = await app.inject({ method: 'POST', url: '/products', headers: { ...form.headers, ...bearer(admin) }, payload: form.payload })
    expect(created.statusCode).toBe(201)
    expect(created.json().imageUrl).toMatch(/^https:\/\/api\.example\.com\/uploads\/products\/.+-lamp\.png$/)
    const page = await app.inject({ url: '/products?limit=1' })
    expect(page.headers.link ?? '').toBe('')
    const form2 = await multipart({ name: 'Desk', description: 'Oak', price: '99', stock: '1', categoryId: String(category.id) }, [pngPart('desk.png')])
    await app.inject({ method: 'POST', url: '/products', headers: { ...form2.headers, ...bearer(admin) }, payload: form2.payload })
    expect((await app.inject({ url: '/products?limit=1' })).headers.link).toContain('<https://api.example.com/products?')
  })
})

describe('the admin rules are the API rules', () => {
  it('ADMIN_EMAIL must be an e-mail the API accepts (one the log-in form would refuse is a start-up error)', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'shop-admin-config-'))
    for (const email of ['notanemail', 'ñandú@shop.test', 'ana@shop..test', 'ana@-shop.test']) {
      const error = (() => {
        try {
          loadConfig({ DATA_DIR: dataDir, ADMIN_EMAIL: email, ADMIN_PASSWORD: 'secret1' })
        } catch (e) {
          return e
        }
      })()
      expect(error, email).toBeInstanceOf(ConfigError)
      expect((error as ConfigError).problems, email).toEqual(['ADMIN_EMAIL must be a valid e-mail address when ADMIN_PASSWORD is set'])
    }
    expect(() => loadConfig({ DATA_DIR: dataDir, ADMIN_EMAIL: 'boss@shop.test', ADMIN_PASSWORD: 'x'.repeat(129) })).toThrow(
      'ADMIN_PASSWORD must be at most 128 characters',
    )
    expect(() => loadConfig({ DATA_DIR: dataDir, ADMIN_EMAIL: 'boss@shop.test', ADMIN_PASSWORD: 'secret1', ADMIN_NAME: 'n'.repeat(101) })).toThrow(
      'ADMIN_NAME must be 1 to 100 characters',
    )
  })
})

describe.runIf(dialect === 'sqlite')('create-admin from the CLI', () => {
  const run = promisify(execFile)
  const cli = (dir: string, ...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'create-admin', ...args], { env: { ...process.env, DATA_DIR: dir, NODE_ENV: 'development' } }).then(
      (ok) => ({ code: 0, ...ok }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    )

  it("refuses what the API would refuse, with the API's own message, and creates nothing (slow: eight CLI processes under tsx)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-cli-admin-'))
    const cases: Array<[string[], string]> = [
      [['--email', 'notanemail', '--password', 'secret1'], 'email must be a valid email'],
      [['--email', 'ana@shop..test', '--password', 'secret1'], 'email must be a valid email'],
      [['--email', 'ana@shop.test', '--password', 'abc'], 'La contraseña debe tener al menos 6 caracteres'],
      [['--email', 'ana@shop.test', '--password', 'x'.repeat(129)], 'password must be shorter than or equal to 128 characters'],
      [['--email', 'ana@shop.test', '--password', 'secret1', '--name', ''], 'name should not be empty'],
      [['--email', 'ana@shop.test'], 'needs --email and --password'],
      [['--email', 'ana@shop.test', '--pasword', 'secret1'], "Unknown option '--pasword'"],
      [
        ['--email', 'ana@shop.test', '--password', 'secret1', '--staff-role', 'boss'],
        'staffRole must be one of the following values: owner, manager, catalog, fulfillment, support',
      ],
    ]
    // Each is refused before it opens the database: they run at once.
    const results = await Promise.all(cases.map(([args]) => cli(dir, ...args)))
    for (const [i, [args, message]] of cases.entries()) {
      expect(results[i]?.code, args.join(' ')).toBe(2)
      expect(results[i]?.stderr, args.join(' ')).toContain(`create-admin: ${message}`)
    }
    // Nothing was written: not even the database file.
    expect(existsSync(join(dir, 'shop.db'))).toBe(false)
  })

  it('an admin it creates can log in', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-cli-admin-'))
    const created = await cli(dir, '--email', ' Root@Shop.test ', '--password', 'root-pass-1', '--name', 'Root')
    expect(created.code).toBe(0)
    expect(created.stdout).toContain('Admin root@shop.test created')
    const handle = connectDatabase(`sqlite:${join(dir, 'shop.db')}`)
    const app = await buildApp(testConfig({}, dir), { database: handle, logger: false })
    const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'root@shop.test', password: 'root-pass-1' } })
    expect(login.statusCode).toBe(200)
    expect(login.json().user).toMatchObject({ email: 'root@shop.test', role: 'admin', name: 'Root' })
    await app.close()
    await handle.db.destroy()
  })

  it('makes an admin of the staff role given, an owner without one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-cli-admin-'))
    const created = await cli(dir, '--email', 'packer@shop.test', '--password', 'packer-pass', '--staff-role', 'fulfillment')
    expect(created.code).toBe(0)
    const handle = connectDatabase(`sqlite:${join(dir, 'shop.db')}`)
    const row = await handle.db.selectFrom('users').select(['role', 'staff_role']).where('email', '=', 'packer@shop.test').executeTakeFirstOrThrow()
    expect(row).toEqual({ role: 'admin', staff_role: 'fulfillment' })
    await handle.db.destroy()
  })
})
