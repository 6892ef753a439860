import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type BuiltServer, buildServer, freePort, runServer, serverEnv } from './helpers/server-process.js'

// The service as a process (`node dist/server.js`, the Dockerfile's CMD; `npm run dev`): what an operator sees
// when it cannot start, what its output is made of, and what a signal leaves behind. SQLite only (the file
// name keeps it out of the other projects): nothing here depends on the database.
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

describe('the pieces, without a process', () => {
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
