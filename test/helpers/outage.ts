import { spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { type AddressInfo, connect as netConnect, createServer, type Server, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import type { Config } from '../../src/config.js'
import { testConfig, openTestDatabase } from './app.js'

/** One line of the service's pino log, parsed. */
export interface LogLine {
  level: number
  msg: string
  [key: string]: unknown
}

export const WARN = 40
export const INFO = 30

/** A test app whose log lines are kept in `lines`, to count what the service said and how often. */
export async function createLoggedApp(
  env: Record<string, string>,
): Promise<{ app: FastifyInstance; config: Config; lines: LogLine[]; close: () => Promise<void> }> {
  const lines: LogLine[] = []
  const config = testConfig(env)
  const { handle, drop } = await openTestDatabase()
  const app = await buildApp(config, {
    database: handle,
    logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } },
  })
  await app.ready()
  return {
    app,
    config,
    lines,
    close: async () => {
      await app.close()
      await drop()
      rmSync(config.dataDir, { recursive: true, force: true })
    },
  }
}

/** A port on 127.0.0.1 that nothing listens on (taken from the system, then released). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A TCP server that accepts connections and never answers: a hung dependency. */
export async function silentServer(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  let accepted = 0
  const server: Server = createServer((socket) => {
    accepted += 1
    sockets.add(socket)
    socket.on('error', () => undefined)
    socket.on('close', () => sockets.delete(socket))
    // Reads whatever is sent (so the client's writes never block) and says nothing.
    socket.resume()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    connections: () => accepted,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** Runs `work` and returns its result with the milliseconds it took; fails after `limitMs` instead of hanging. */
export async function timed<T>(work: () => Promise<T>, limitMs = 5000): Promise<{ value: T; ms: number }> {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  const value = await Promise.race([
    work(),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still waiting after ${limitMs} ms`)), limitMs)
    }),
  ]).finally(() => clearTimeout(timer))
  return { value, ms: performance.now() - started }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A port whose connections are never accepted: a child process listens with a backlog of one and
 * blocks at once, and two connections fill the queue, so the next SYN goes unanswered, as with a
 * firewalled host. Returns the port and a function that ends the child.
 */
export async function unacceptingPort(): Promise<{ port: number; close: () => void }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer()
       s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
         process.stdout.write(String(s.address().port) + '\\n')
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)
       })`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const port = await new Promise<number>((resolve) => child.stdout.once('data', (data) => resolve(Number(String(data).trim()))))
  const fillers: Socket[] = []
  for (let i = 0; i < 2; i += 1) {
    const socket = netConnect(port, '127.0.0.1')
    socket.on('error', () => undefined)
    fillers.push(socket)
    await new Promise((resolve) => socket.once('connect', resolve))
  }
  return {
    port,
    close: () => {
      for (const socket of fillers) socket.destroy()
      child.kill('SIGKILL')
    },
  }
}

/**
 * A TCP relay to 127.0.0.1:`port` (or `host`) that can stop passing requests on while keeping every socket open, as a
 * server that hangs does; `freeze(false)` lets them through again.
 */
export async function freezableRelay(
  port: number,
  host = '127.0.0.1',
): Promise<{ port: number; freeze: (value: boolean) => void; close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  let frozen = false
  const server = createServer((downstream) => {
    const upstream = netConnect(port, host)
    for (const socket of [downstream, upstream]) {
      sockets.add(socket)
      socket.on('error', () => undefined)
      socket.on('close', () => {
        downstream.destroy()
        upstream.destroy()
      })
    }
    downstream.on('data', (data) => {
      if (!frozen) upstream.write(data)
    })
    upstream.pipe(downstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    freeze: (value: boolean) => {
      frozen = value
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
