import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

/** The service as `npm run start:prod` runs it, in a process of its own: start-up failures, logs, signals. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

export interface BuiltServer {
  /** The folder: package.json, dist/, node_modules linked to this checkout's. */
  readonly dir: string
  readonly remove: () => void
}

/** Builds src/ into a temporary folder (scripts/build.mjs, under a second) that runs like a checkout's dist/. */
export async function buildServer(): Promise<BuiltServer> {
  const dir = mkdtempSync(join(tmpdir(), 'shop-built-'))
  await promisify(execFile)(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', join(dir, 'dist')])
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'shop-api', type: 'module' }))
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** The environment of a shell on a server: nothing of the test run (NODE_ENV=test, TEST_*, VITEST*, npm_*). */
export function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm_|VITEST|TEST_|NODE_ENV$)/i.test(name)))
  return { ...clean, NODE_ENV: 'development', LOG_LEVEL: 'info', HOST: '127.0.0.1', ...extra }
}

export interface ServerRun {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
  /** From the spawn to the exit. */
  readonly ms: number
}

/** A server process: its output so far, the wait for its exit, and a way to stop it. */
export interface ServerProcess {
  readonly pid: number
  readonly output: () => { stdout: string; stderr: string }
  readonly exited: Promise<ServerRun>
  /** SIGTERM, then the exit (SIGKILL after `graceMs`). */
  readonly stop: (graceMs?: number) => Promise<ServerRun>
}

/** Spawns `node dist/server.js` (the Dockerfile's CMD) in `server.dir` with `env`. */
export function spawnServer(server: BuiltServer, env: NodeJS.ProcessEnv): ServerProcess {
  const started = performance.now()
  const child = spawn(process.execPath, ['--enable-source-maps', 'dist/server.js'], { cwd: server.dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => (stdout += chunk))
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise<ServerRun>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, ms: Math.round(performance.now() - started) })),
  )
  return {
    pid: child.pid as number,
    output: () => ({ stdout, stderr }),
    exited,
    stop: async (graceMs = 10_000) => {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      const run = await exited
      clearTimeout(timer)
      return run
    },
  }
}

/** Runs the server until it exits by itself; killed after `timeoutMs` (then `signal` says SIGKILL). */
export async function runServer(server: BuiltServer, env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<ServerRun> {
  const process = spawnServer(server, env)
  const timer = setTimeout(() => void process.stop(0), timeoutMs)
  const run = await process.exited
  clearTimeout(timer)
  return run
}

/** Waits until GET /health answers 200 on `port`, for at most `timeoutMs`. */
export async function waitForHealth(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const res = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined)
    if (res?.status === 200) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`no answer on port ${port} within ${timeoutMs} ms`)
}

/** A port on 127.0.0.1 that nothing listens on now (the system picks it). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}
