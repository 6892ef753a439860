import { execFile, execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket, connect as connectTcp } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/**
 * A PostgreSQL cluster of the test's own, in a temporary folder on a free port, that the test may
 * stop and start (never the shared one on 5432). As root it runs as the `postgres` user, since
 * PostgreSQL refuses to run as root.
 */
export interface ThrowawayPostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string
  readonly port: number
  stop(): Promise<void>
  start(): Promise<void>
  destroy(): Promise<void>
}

/**
 * Where initdb and pg_ctl are (TEST_PG_BINDIR, else Debian's /usr/lib/postgresql/<version>/bin, else
 * the PATH), or why a throw-away cluster cannot be made on this machine.
 */
export function findPostgresBinaries(): { bin: string } | { skip: string } {
  const root = '/usr/lib/postgresql'
  const candidates = process.env.TEST_PG_BINDIR
    ? [process.env.TEST_PG_BINDIR]
    : [
        ...(existsSync(root)
          ? readdirSync(root)
              .sort((a, b) => Number(b) - Number(a))
              .map((version) => join(root, version, 'bin'))
          : []),
        ...(process.env.PATH ?? '').split(':').filter(Boolean),
      ]
  const bin = candidates.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl')))
  if (bin === undefined) return { skip: `no PostgreSQL server binaries (initdb, pg_ctl) in ${candidates.length ? candidates.join(', ') : root}` }
  if (process.getuid?.() === 0 && !existsSync('/usr/sbin/runuser') && !existsSync('/sbin/runuser')) {
    return { skip: 'running as root, and no runuser to become the postgres user (PostgreSQL refuses to run as root)' }
  }
  if (process.getuid?.() === 0) {
    try {
      postgresIds()
    } catch {
      return { skip: 'running as root, and no postgres user to run the cluster as (PostgreSQL refuses to run as root)' }
    }
  }
  return { bin }
}

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

export async function startThrowawayPostgres(bin: string): Promise<ThrowawayPostgres> {
  const asRoot = process.getuid?.() === 0
  const dir = mkdtempSync(join(tmpdir(), 'shop-pg-'))
  if (asRoot) chownSync(dir, ...postgresIds())
  const data = join(dir, 'data')
  const port = await freePort()
  const exec = (tool: string, args: string[]) => (asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args))
  await exec('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions'])
  // fsync off: the cluster lives for seconds; -k: its socket in its own folder, not /var/run.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=50`
  const start = async () => {
    await exec('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '30', 'start'])
  }
  const stop = async () => {
    await exec('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop'])
  }
  await start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    destroy: async () => {
      await exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function postgresIds(): [number, number] {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
  return [uid, gid]
}

/**
 * A TCP proxy in front of a database that can go silent: it keeps accepting connections, and the
 * ones it has, but passes nothing on (a server that hangs, a network that drops packets).
 */
export interface SilentProxy {
  readonly port: number
  silence(): void
  /** Forwards again; connections opened or stalled while silent are cut, as after a partition. */
  restore(): void
  close(): Promise<void>
}

export async function startSilentProxy(targetPort: number): Promise<SilentProxy> {
  let silent = false
  const pairs = new Set<[Socket, Socket | undefined]>()
  const server: Server = createServer((socket) => {
    socket.on('error', () => {})
    if (silent) {
      // Accept, read and drop everything, answer nothing.
      const pair: [Socket, undefined] = [socket, undefined]
      pairs.add(pair)
      socket.on('data', () => {})
      socket.on('close', () => pairs.delete(pair))
      return
    }
    const upstream = connectTcp(targetPort, '127.0.0.1')
    upstream.on('error', () => socket.destroy())
    const pair: [Socket, Socket] = [socket, upstream]
    pairs.add(pair)
    socket.on('data', (chunk) => {
      if (!silent) upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (!silent) socket.write(chunk)
    })
    socket.on('close', () => {
      upstream.destroy()
      pairs.delete(pair)
    })
    upstream.on('close', () => socket.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return {
    port: address.port,
    silence: () => {
      silent = true
    },
    restore: () => {
      silent = false
      for (const [socket, upstream] of pairs) {
        socket.destroy()
        upstream?.destroy()
      }
      pairs.clear()
    },
    close: async () => {
      for (const [socket, upstream] of pairs) {
        socket.destroy()
        upstream?.destroy()
      }
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
