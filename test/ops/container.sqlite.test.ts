import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { type Config, loadConfig } from '../../src/config.js'

// The container files cannot be built here (no image registry): these checks keep them true to the project.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')
const packageJson = JSON.parse(read('package.json')) as { scripts: Record<string, string> }
const SECRET = 'a-jwt-secret-of-forty-eight-random-characters-0123456789'

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructions(): { keyword: string; args: string; stage: string }[] {
  const lines = read('Dockerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
  let stage = ''
  return lines.map((line) => {
    const [keyword = '', ...rest] = line.split(/\s+/)
    const args = rest.join(' ')
    if (keyword.toUpperCase() === 'FROM') stage = /\bAS\s+(\S+)/i.exec(args)?.[1] ?? ''
    return { keyword: keyword.toUpperCase(), args, stage }
  })
}

/** `.dockerignore` as regular expressions on a path relative to the context (enough of Docker's syntax for this file). */
function dockerIgnored(path: string): boolean {
  let ignored = false
  for (const raw of read('.dockerignore').split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    const negate = line.startsWith('!')
    const pattern = (negate ? line.slice(1) : line).replace(/^\//, '')
    const source = pattern
      .split('**/')
      .map((part) =>
        part
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '[^/]*')
          .replace(/\?/g, '[^/]'),
      )
      .join('(?:.*/)?')
    if (new RegExp(`^${source}(?:/.*)?$`).test(path)) ignored = !negate
  }
  return ignored
}

describe('Dockerfile', () => {
  const all = instructions()

  it('runs only npm scripts that package.json has (an optional one says --if-present)', () => {
    const runs = [
      ...all
        .filter((i) => i.keyword === 'RUN')
        .map((i) => i.args)
        .join('\n')
        .matchAll(/npm run (--if-present )?([\w:-]+)/g),
    ]
    expect(runs.map((m) => m[2])).toContain('build')
    for (const [, optional, script] of runs) {
      if (optional === undefined) expect(packageJson.scripts, `npm run ${script}`).toHaveProperty([script as string])
    }
  })

  it('copies from the build context only files that exist and that .dockerignore lets through', () => {
    const sources = all
      .filter((i) => i.keyword === 'COPY' && !i.args.includes('--from='))
      .flatMap((i) =>
        i.args
          .split(/\s+/)
          .filter((a) => !a.startsWith('--'))
          .slice(0, -1),
      )
    expect(sources.length).toBeGreaterThan(0)
    for (const source of sources) {
      expect(existsSync(join(ROOT, source)), source).toBe(true)
      if (source !== '.') expect(dockerIgnored(source), source).toBe(false)
    }
    // `COPY . .` brings what the build needs, and none of what must stay out.
    for (const needed of ['src/server.ts', 'src/db/migrations', 'tsconfig.json', 'scripts/cli.mjs', 'package.json', 'package-lock.json', '.env.example']) {
      expect(existsSync(join(ROOT, needed)), needed).toBe(true)
      expect(dockerIgnored(needed), needed).toBe(false)
    }
    for (const kept of ['.env', '.env.production', 'node_modules', 'admin/node_modules/x', 'dist/server.js', 'data/shop.db', '.git/HEAD', 'debug.log']) {
      expect(dockerIgnored(kept), kept).toBe(true)
    }
  })

  it('copies into the runtime image only files of the project or outputs of an earlier stage', () => {
    const tsconfig = JSON.parse(read('tsconfig.json')) as { compilerOptions: { outDir: string } }
    const stages = new Set(all.filter((i) => i.keyword === 'FROM').map((i) => i.stage))
    const made = new Set(['node_modules', tsconfig.compilerOptions.outDir])
    // Folders a stage creates itself (mkdir -p) exist even when empty.
    for (const run of all.filter((i) => i.keyword === 'RUN' && i.stage !== 'runtime')) {
      for (const m of run.args.matchAll(/mkdir -p ([\w/.-]+)/g)) made.add(m[1] as string)
    }
    const copies = all.filter((i) => i.keyword === 'COPY' && i.args.includes('--from='))
    expect(copies.length).toBeGreaterThan(0)
    for (const copy of copies) {
      expect(stages, copy.args).toContain(/--from=(\S+)/.exec(copy.args)?.[1])
      for (const source of copy.args
        .split(/\s+/)
        .filter((a) => !a.startsWith('--'))
        .slice(0, -1)) {
        const path = source.replace(/^\/app\//, '')
        expect(made.has(path) || (existsSync(join(ROOT, path)) && !dockerIgnored(path)), source).toBe(true)
      }
    }
    const copied = copies.map((c) => c.args).join(' ')
    for (const path of ['/app/dist', '/app/node_modules', '/app/admin/dist', '/app/scripts']) expect(copied).toContain(path)
    // The runtime's packages are the production ones only.
    const prodInstall = all.find((i) => i.stage === 'prod-deps' && i.keyword === 'RUN')?.args ?? ''
    expect(prodInstall).toMatch(/npm ci .*--omit=dev/)
    expect(copies.find((c) => c.args.includes('/app/node_modules'))?.args).toContain('--from=prod-deps')
  })

  it('runs what start:prod runs, as a user that is not root, with a health check on /health', () => {
    const runtime = all.filter((i) => i.stage === 'runtime')
    const cmd = JSON.parse(runtime.find((i) => i.keyword === 'CMD')?.args ?? 'null') as string[]
    expect(cmd.join(' ')).toBe(packageJson.scripts['start:prod']?.replace(/^exec /, ''))
    const user = runtime.find((i) => i.keyword === 'USER')?.args
    expect(user).toBeDefined()
    expect(user).not.toMatch(/^(root|0)(:|$)/)
    const healthcheck = runtime.find((i) => i.keyword === 'HEALTHCHECK')?.args ?? ''
    expect(healthcheck).toContain('/health')
    expect(healthcheck).toMatch(/AbortSignal\.timeout\(\d+\)/)
    expect(runtime.find((i) => i.keyword === 'STOPSIGNAL')?.args).toBe('SIGTERM')
    expect(runtime.find((i) => i.keyword === 'EXPOSE')?.args).toBe('3000')
    expect(runtime.find((i) => i.keyword === 'ENV')?.args).toContain('NODE_ENV=production')
  })
})

/** Names read by the configuration (src/config/): by reading its source (string('X'), integer('X', …), env.X, env['X']). */
function variablesInSource(): Set<string> {
  const source = readdirSync(join(ROOT, 'src/config'))
    .filter((file) => file.endsWith('.ts'))
    .map((file) => read(`src/config/${file}`))
    .join('\n')
  const names = new Set<string>()
  for (const m of source.matchAll(/\b\w+\(\s*'([A-Z][A-Z0-9_]*)'/g)) names.add(m[1] as string)
  for (const m of source.matchAll(/\benv\.([A-Z][A-Z0-9_]*)|\benv\[\s*'([A-Z][A-Z0-9_]*)'\s*\]/g)) names.add((m[1] ?? m[2]) as string)
  return names
}

/** Names loadConfig reads when given `env`, recorded as it reads them. */
function variablesRead(env: Record<string, string>): Set<string> {
  const names = new Set<string>()
  const recording = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') names.add(name)
      return target[name as string]
    },
  })
  try {
    loadConfig(recording)
  } catch {
    // A configuration with problems still reads its variables.
  }
  return names
}

/** `.env.example`: every `NAME=value` and every commented `# NAME=`. */
function exampleVariables(): { all: Set<string>; values: Record<string, string> } {
  const all = new Set<string>()
  const values: Record<string, string> = {}
  for (const line of read('.env.example').split('\n')) {
    const m = /^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line)
    if (!m) continue
    expect(all.has(m[2] as string), `${m[2]} twice`).toBe(false)
    all.add(m[2] as string)
    if (m[1] === undefined) values[m[2] as string] = m[3] as string
  }
  return { all, values }
}

describe('.env.example', () => {
  const dirs: string[] = []
  const tmp = () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-env-'))
    dirs.push(dir)
    return dir
  }
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  it('lists every variable the configuration reads, and only those', () => {
    const read = new Set([
      ...variablesInSource(),
      ...variablesRead({}),
      ...variablesRead({ STORAGE_DRIVER: 's3', ADMIN_EMAIL: 'a@b.co', ADMIN_PASSWORD: 'secret1', STRIPE_SECRET_KEY: 'sk_test_x', METRICS_PORT: '9100' }),
    ])
    // Sanity: both ways of collecting them work (a variable read only under a condition is still found).
    expect(read).toContain('S3_SECRET_ACCESS_KEY')
    expect(read).toContain('ADMIN_NAME')
    expect(read).toContain('METRICS_PORT')
    expect([...exampleVariables().all].sort()).toEqual([...read].sort())
  })

  it('has every variable explained in docs/configuration.md, the page the README sends operators to', () => {
    const page = read('docs/configuration.md')
    const unexplained = [...exampleVariables().all].filter((name) => !page.includes(`\`${name}\``))
    expect(unexplained).toEqual([])
    expect(read('README.md')).toContain('(docs/configuration.md)')
  })

  it('shows the real defaults: copying it to .env changes nothing', () => {
    const dataDir = tmp()
    const { values } = exampleVariables()
    // Both storage drivers: the S3 defaults are read only with the s3 one.
    for (const storage of [{}, { STORAGE_DRIVER: 's3', S3_BUCKET: 'images', S3_PUBLIC_URL: 'https://cdn.example.com' }]) {
      const withDefaults = loadConfig({ ...values, DATA_DIR: dataDir, JWT_SECRET: SECRET, ...storage })
      const without = loadConfig({ DATA_DIR: dataDir, JWT_SECRET: SECRET, ...storage })
      expect(withDefaults).toEqual(without)
    }
    // It sets nothing without a default of its own (those stay commented).
    for (const name of ['PUBLIC_URL', 'DATABASE_URL', 'JWT_SECRET', 'UPLOAD_DIR', 'UPLOAD_TMP_DIR', 'ORDER_PAYMENT_TTL', 'METRICS_PORT']) {
      expect(values, name).not.toHaveProperty([name])
    }
  })
})

interface ComposeService {
  image?: string
  build?: unknown
  environment?: Record<string, string>
  healthcheck?: { test: string[] }
  depends_on?: Record<string, { condition: string }>
}

/** Compose's interpolation: ${X}, ${X:-default}, ${X:?error}, with `$$` a literal dollar. */
function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_match, name: string | undefined, kind: string | undefined, word: string | undefined) => {
    if (name === undefined) return '$'
    const value = env[name]
    if (value !== undefined && value !== '') return value
    if (kind === '?') throw new Error(`${name}: ${word}`)
    return kind === '-' ? (word ?? '') : ''
  })
}

describe('compose.yaml', () => {
  const compose = parseYaml(read('compose.yaml')) as { services: Record<string, ComposeService>; volumes?: Record<string, unknown> }

  it('has the service, PostgreSQL 16, Redis 7 and MinIO, each with a health check', () => {
    const { services } = compose
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['app', 'postgres', 'redis', 'minio', 'minio-init']))
    expect(services.app?.build).toBe('.')
    expect(services.postgres?.image).toMatch(/^postgres:16\b/)
    expect(services.redis?.image).toMatch(/^redis:7\b/)
    expect(services.minio?.image).toMatch(/^minio\/minio\b/)
    expect(services['minio-init']?.image).toMatch(/^minio\/mc\b/)
    for (const name of ['app', 'postgres', 'redis', 'minio']) {
      expect(services[name]?.healthcheck?.test?.[0], name).toMatch(/^CMD(-SHELL)?$/)
    }
    expect(services.app?.healthcheck?.test.join(' ')).toContain('/health')
  })

  it('starts the service once the others are healthy and the bucket exists', () => {
    expect(compose.services.app?.depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
      minio: { condition: 'service_healthy' },
      'minio-init': { condition: 'service_completed_successfully' },
    })
    expect(compose.services['minio-init']?.depends_on).toEqual({ minio: { condition: 'service_healthy' } })
    for (const volume of ['app-data', 'postgres-data', 'minio-data']) expect(compose.volumes).toHaveProperty([volume])
  })

  it("gives the service a configuration it accepts: PostgreSQL, Redis and MinIO's S3, all read by src/config/", () => {
    const env = compose.services.app?.environment ?? {}
    const known = new Set([...variablesInSource(), ...exampleVariables().all])
    for (const name of Object.keys(env)) expect(known, name).toContain(name)
    // Without JWT_SECRET compose refuses to start (the message says how to make one).
    expect(() => interpolate(JSON.stringify(env), {})).toThrow(/JWT_SECRET/)
    const resolved = JSON.parse(interpolate(JSON.stringify(env), { JWT_SECRET: SECRET })) as Record<string, string>
    const config: Config = loadConfig({ ...resolved, DATA_DIR: mkdtempSync(join(tmpdir(), 'shop-compose-')) })
    expect(config.nodeEnv).toBe('production')
    expect(config.databaseUrl).toBe('postgres://shop:shop@postgres:5432/shop')
    expect(config.redisUrl).toBe('redis://redis:6379')
    expect(config.storage).toMatchObject({ driver: 's3', bucket: 'shop-images', endpoint: 'http://minio:9000', forcePathStyle: true, accessKeyId: 'shop' })
    expect(config.metrics).toEqual({ enabled: true, port: 9100 })
    // The bucket the one-shot creates is the one the service writes to.
    expect(read('compose.yaml')).toContain(`local/${config.storage.driver === 's3' ? config.storage.bucket : ''}`)
  })
})
