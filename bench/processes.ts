// The processes the benchmark starts: the built service, the baseline server, the load
// generator and the direct checkout driver; and the memory sampler that watches a server.
import { type ChildProcess, fork, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Recording } from './recording.js'
import type { LoadResult, LoadSpec } from './types.js'

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url))
export const ROOT = dirname(BENCH_DIR)

/** Children run TypeScript through tsx's loader (it only costs at module load time). */
const TSX = ['--import', 'tsx']

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function waitForHealth(origin: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited with code ${child.exitCode}:\n${output()}`)
    try {
      const response = await fetch(`${origin}/health`)
      if (response.ok) return
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  throw new Error(`service did not become healthy within 60 s:\n${output()}`)
}

export interface RunningServer {
  readonly origin: string
  readonly pid: number
  stop(): Promise<void>
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

export interface ServiceOptions {
  databaseUrl: string
  dataDir: string
  uploadDir: string
  jwtSecret: string
  /** More environment for the service (the webhook scenario's Stripe settings). */
  env?: Record<string, string>
}

/**
 * The node flags of `npm run start:prod` (e.g. the young generation's size), so the benchmark runs
 * the service exactly as production starts it.
 */
function productionNodeFlags(): string[] {
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  const command = scripts['start:prod'] ?? ''
  return command.split(/\s+/).filter((word) => word.startsWith('--'))
}

/** Starts `node dist/server.js` as `npm run start:prod` does, in production mode, and waits until /health answers. */
export async function startService(options: ServiceOptions): Promise<RunningServer> {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  // e.g. BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/profiles" profiles the service under load.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '')
  const child = spawn(process.execPath, [...productionNodeFlags(), ...nodeArgs, join(ROOT, 'dist', 'server.js')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: origin,
      DATABASE_URL: options.databaseUrl,
      DATA_DIR: options.dataDir,
      UPLOAD_DIR: options.uploadDir,
      STORAGE_DRIVER: 'local',
      JWT_SECRET: options.jwtSecret,
      LOG_LEVEL: 'warn',
      AUTH_RATE_LIMIT_MAX: '1000000',
      // METRICS_ENABLED=true npm run bench … measures the service with /metrics on (docs/operations.md).
      ...(process.env.METRICS_ENABLED ? { METRICS_ENABLED: process.env.METRICS_ENABLED } : {}),
      // OTEL_EXPORTER_OTLP_ENDPOINT=… npm run bench … measures it with traces on (docs/operations.md#traces).
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('OTEL_'))),
      ...options.env,
    },
  })
  let output = ''
  // BENCH_SERVICE_LOG=<file> keeps everything the service prints (with BENCH_NODE_ARGS="--trace-gc", its GC).
  const logFile = process.env.BENCH_SERVICE_LOG
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000)
    if (logFile) appendFileSync(logFile, chunk)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  await waitForHealth(origin, child, () => output)
  if (child.pid === undefined) throw new Error('service has no pid')
  child.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`service exited unexpectedly (code ${code}, signal ${signal}):\n${output}\n`)
  })
  let stopping = false
  return {
    origin,
    pid: child.pid,
    stop: () => {
      stopping = true
      return stopChild(child)
    },
  }
}

/** Starts the bare node:http baseline (or a bare Fastify) answering with `recordings`. */
export async function startBaseline(recordings: Recording[], scratchDir: string, server: 'node' | 'fastify' = 'node'): Promise<RunningServer> {
  const file = join(scratchDir, `recordings-${randomBytes(4).toString('hex')}.json`)
  writeFileSync(file, JSON.stringify(recordings))
  const child = fork(join(BENCH_DIR, 'baseline.ts'), [file, server], { cwd: ROOT, execArgv: TSX, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { port: number }) => resolve(message.port))
    child.once('exit', (code) => reject(new Error(`baseline exited with code ${code}`)))
  })
  if (child.pid === undefined) throw new Error('baseline has no pid')
  return { origin: `http://127.0.0.1:${port}`, pid: child.pid, stop: () => stopChild(child) }
}

/** Runs a TypeScript module of bench/ in a child process: sends `input`, resolves with its answer. */
export function runChild<I, O>(module: string, input: I): Promise<O> {
  const child = fork(join(BENCH_DIR, module), [], { cwd: ROOT, execArgv: TSX, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  return new Promise<O>((resolve, reject) => {
    let answered = false
    child.once('message', (message: { ok: boolean; result?: O; error?: string }) => {
      answered = true
      if (message.ok) resolve(message.result as O)
      else reject(new Error(`${module}: ${message.error}`))
    })
    child.once('exit', (code) => {
      if (!answered) reject(new Error(`${module} exited with code ${code} without an answer`))
    })
    child.send(input as object)
  })
}

/**
 * Load generators waiting for their next run. Each run still has a process to itself (runs that
 * overlap, as in login-storm, get one each), but a process serves one run after another instead
 * of being forked, and its TypeScript loaded, for every measuring window.
 */
const idleLoaders: ChildProcess[] = []

/** One autocannon run in a process of its own. */
export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const child = idleLoaders.pop() ?? fork(join(BENCH_DIR, 'load.ts'), [], { cwd: ROOT, execArgv: TSX, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  return new Promise<LoadResult>((resolve, reject) => {
    const onMessage = (message: { ok: boolean; result?: LoadResult; error?: string }) => {
      child.off('exit', onExit)
      if (message.ok) {
        idleLoaders.push(child)
        resolve(message.result as LoadResult)
      } else {
        child.kill()
        reject(new Error(`load.ts: ${message.error}`))
      }
    }
    const onExit = (code: number | null) => {
      child.off('message', onMessage)
      reject(new Error(`load.ts exited with code ${code} without an answer`))
    }
    child.once('message', onMessage)
    child.once('exit', onExit)
    child.send(spec)
  })
}

/** Ends the idle load generators (at the end of a run). */
export function stopLoaders(): void {
  for (const child of idleLoaders.splice(0)) child.kill()
}

function readStatusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) : 0
  } catch {
    return 0
  }
}

/** Current resident memory of a process, MiB. */
export function rssMiB(pid: number): number {
  return readStatusKiB(pid, 'VmRSS') / 1024
}

/**
 * Watches a process's peak resident memory over a window: resets the kernel's high-water mark
 * (VmHWM) when it can, and also samples VmRSS every 20 ms in case it cannot.
 */
export function watchMemory(pid: number): { stop(): number } {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
  } catch {
    // Not allowed here: VmHWM then covers the process's whole life; the samples still hold.
  }
  let peak = readStatusKiB(pid, 'VmRSS')
  let hwmReset = readStatusKiB(pid, 'VmHWM') <= peak + 1024
  const timer = setInterval(() => {
    peak = Math.max(peak, readStatusKiB(pid, 'VmRSS'))
  }, 20)
  return {
    stop() {
      clearInterval(timer)
      peak = Math.max(peak, readStatusKiB(pid, 'VmRSS'))
      if (hwmReset) peak = Math.max(peak, readStatusKiB(pid, 'VmHWM'))
      hwmReset = false
      return peak / 1024
    },
  }
}
