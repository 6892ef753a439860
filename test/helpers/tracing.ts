import { execFile, spawn } from 'node:child_process'
import { cpSync, mkdtempSync, symlinkSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { createServer as createTcpServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

/**
 * For the OpenTelemetry tests (test/ops/tracing.*.test.ts): the compiled service (dist/, as `npm start` runs it)
 * in a child process, and a fake OTLP/HTTP collector on 127.0.0.1 that keeps what it is sent (OTLP/JSON, so
 * that it can be read back).
 */
const ROOT = resolve(import.meta.dirname, '..', '..')
const run = promisify(execFile)
export const ADMIN = { email: 'owner@shop.test', password: 'owner-password-1' }

interface OtlpValue {
  stringValue?: string
  intValue?: string | number
  boolValue?: boolean
}
interface OtlpSpan {
  name: string
  kind: number
  traceId: string
  spanId: string
  parentSpanId?: string
  attributes: { key: string; value: OtlpValue }[]
}
/** A span as the tests read it: attributes flattened to plain values. */
export interface ReceivedSpan {
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  traceId: string
  parentSpanId: string | undefined
  service: string | undefined
  attributes: Record<string, string | number | boolean | undefined>
}

export const SERVER = 2
export const CLIENT = 3

function plain(value: OtlpValue): string | number | boolean | undefined {
  if (value.intValue !== undefined) return Number(value.intValue)
  return value.stringValue ?? value.boolValue
}

export interface Collector {
  url: string
  spans: ReceivedSpan[]
  /** Content types of the requests received (the exporter's protocol). */
  contentTypes: string[]
  waitFor: (match: (span: ReceivedSpan) => boolean, what: string) => Promise<ReceivedSpan>
  close: () => Promise<void>
}

/** A fake OTLP/HTTP collector: POST /v1/traces, JSON bodies decoded into spans, anything else only counted. */
export async function startCollector(): Promise<Collector> {
  const spans: ReceivedSpan[] = []
  const contentTypes: string[] = []
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const type = request.headers['content-type'] ?? ''
      contentTypes.push(type)
      if (request.method === 'POST' && request.url === '/v1/traces' && type.startsWith('application/json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: { resource: { attributes: { key: string; value: OtlpValue }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[]
        }
        for (const resourceSpans of body.resourceSpans) {
          const service = resourceSpans.resource.attributes.find((attribute) => attribute.key === 'service.name')?.value.stringValue
          for (const scope of resourceSpans.scopeSpans) {
            for (const span of scope.spans) {
              spans.push({
                name: span.name,
                kind: span.kind,
                traceId: span.traceId,
                parentSpanId: span.parentSpanId || undefined,
                service,
                attributes: Object.fromEntries(span.attributes.map((attribute) => [attribute.key, plain(attribute.value)])),
              })
            }
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    waitFor: async (match, what) => {
      for (let i = 0; i < 100; i++) {
        const found = spans.find(match)
        if (found) return found
        await new Promise((done) => setTimeout(done, 50))
      }
      throw new Error(`no span ${what} among ${JSON.stringify(spans.map((span) => [span.name, span.kind, span.attributes['http.route']]))}`)
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  }
}

/** A collector that accepts connections and never answers: the worst case for an exporter. */
export async function startSilentCollector(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  const server = createTcpServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const address = server.address()
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((done) => server.close(() => done()))
    },
  }
}

export interface Service {
  base: string
  output: () => string
  /** SIGTERM, then resolves with how long the process took to exit. */
  stop: () => Promise<number>
}

export const children = new Set<ReturnType<typeof spawn>>()

/** The environment of a shell on a server: none of the test run's own variables. */
export function serviceEnv(install: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && !/^(VITEST|TEST_|OTEL_|NODE_OPTIONS)/.test(name)))
  return {
    ...clean,
    NODE_ENV: 'development',
    DATA_DIR: join(install, 'data'),
    JWT_SECRET: 'a-test-secret-with-many-different-chars-0123456789',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    LOG_LEVEL: 'warn',
    ...extra,
  }
}

/** Starts `node dist/server.js` (what `npm start` runs) and waits for /health. */
export async function startService(install: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<Service> {
  const port = 20000 + Math.floor(Math.random() * 20000)
  const child = spawn(process.execPath, [...nodeArgs, join(install, 'dist', 'server.js')], {
    cwd: install,
    env: { ...env, PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: `http://127.0.0.1:${port}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  let output = ''
  child.stdout?.on('data', (chunk) => (output += chunk))
  child.stderr?.on('data', (chunk) => (output += chunk))
  const exited = new Promise<void>((done) => child.on('exit', () => done()))
  const base = `http://127.0.0.1:${port}`
  let up = false
  // Up to a minute: with the tracing SDK loaded, a start took longer than 15 s on a loaded CI machine.
  const deadline = Date.now() + 60_000
  while (!up && child.exitCode === null && Date.now() < deadline) {
    up = (await fetch(`${base}/health`).catch(() => undefined))?.status === 200
    if (!up) await new Promise((done) => setTimeout(done, 50))
  }
  if (!up) throw new Error(`the service did not start:\n${output}`)
  return {
    base,
    output: () => output,
    stop: async () => {
      const started = Date.now()
      child.kill('SIGTERM')
      await exited
      children.delete(child)
      return Date.now() - started
    },
  }
}

export async function json(
  base: string,
  path: string,
  init: { method?: string; token?: string; body?: unknown } = {},
): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = {}
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  if (init.token) headers.authorization = `Bearer ${init.token}`
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })
  const text = await response.text()
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined }
}

/** `npm run build` into a folder of its own, with this checkout's packages and package.json beside it. */
export async function buildInstall(prefix: string): Promise<string> {
  const install = mkdtempSync(join(tmpdir(), prefix))
  await run(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', join(install, 'dist')])
  cpSync(join(ROOT, 'package.json'), join(install, 'package.json'))
  symlinkSync(join(ROOT, 'node_modules'), join(install, 'node_modules'), 'dir')
  return install
}

/** Runs `node dist/cli.js <args>` there. */
export async function cli(install: string, env: NodeJS.ProcessEnv, ...args: string[]): Promise<void> {
  await run(process.execPath, [join(install, 'dist', 'cli.js'), ...args], { cwd: install, env })
}
