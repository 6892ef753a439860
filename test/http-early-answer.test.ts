import type { AddressInfo, Socket } from 'node:net'
import { Worker } from 'node:worker_threads'
import { beforeAll, describe, it, vi } from 'vitest'
import { LINGER_MAX_BYTES, LINGER_MAX_MS } from '../src/plugins/errors.js'
import { messages } from '../src/shared/errors.js'
import { useTestApp } from './helpers/app.js'
import { bearer } from './helpers/factories.js'
import { openRawClient, parseRawResponse, type RawClient } from './helpers/raw-http.js'

// An answer given before the request's body has arrived (a 401, a 403, an image refused by its type) must reach
// the client: the service sends it, then goes on reading and discarding the body (a lingering close) up to
// LINGER_MAX_BYTES and LINGER_MAX_MS before it closes, so that the client, still sending, is not reset (EPIPE)
// before it has read the answer. Against a real listening server; the tests of each block run at once (each
// with its own `expect`, as Vitest asks of concurrent tests).
const t = useTestApp()
let port: number
/** The server's side of each connection, by the client's port. */
const serverSockets = new Map<number, Socket>()

/** The server's side of `client`'s connection (once the server has accepted it). */
function serverSide(client: RawClient): Promise<Socket> {
  const localPort = client.socket.localPort ?? -1
  return vi.waitUntil(
    () => {
      const socket = serverSockets.get(localPort)
      return socket && !socket.destroyed ? socket : undefined
    },
    { timeout: 2000 },
  )
}

/** Milliseconds until the server's side of a connection is closed, or null if it is still open after `limitMs`. */
function serverClosedWithin(socket: Socket, limitMs: number): Promise<number | null> {
  const started = performance.now()
  if (socket.destroyed) return Promise.resolve(0)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), limitMs)
    socket.once('close', () => {
      clearTimeout(timer)
      resolve(performance.now() - started)
    })
  })
}

beforeAll(async () => {
  t.app.server.on('connection', (socket: Socket) => {
    // A client port is reused once its connection is gone: an entry lives as long as its connection.
    const clientPort = socket.remotePort ?? 0
    serverSockets.set(clientPort, socket)
    socket.once('close', () => {
      if (serverSockets.get(clientPort) === socket) serverSockets.delete(clientPort)
    })
  })
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  port = (t.app.server.address() as AddressInfo).port
})

/** One kind of upload: its headers and its image part's file name and type. */
interface UploadKind {
  headers: Record<string, string>
  filename: string
  type: string
}

interface UploadPlan {
  url: string
  tries: number
  parallel: number
  /** Bytes of each form; sent in 64 KiB chunks with `pauseMs` between them. */
  bytes: number
  pauseMs: number
  /** Try i is of kind `kinds[i % kinds.length]`. */
  kinds: UploadKind[]
}

/**
 * The client, run on a thread of its own: a client in the server's own event loop never loses the race
 * (the server's reset only comes after the client's turn, once the answer is read); the failure shows
 * between two loops, as between two processes. Self-contained: the worker gets it as its source text.
 */
function uploadClient(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { parentPort, workerData } = require('node:worker_threads') as typeof import('node:worker_threads')
  const plan = workerData as UploadPlan
  const boundary = '----shop-early-answer'
  const chunk = 64 * 1024
  const form = (kind: UploadKind): Buffer => {
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nLámpara\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="${kind.filename}"\r\nContent-Type: ${kind.type}\r\n\r\n`,
    )
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
    return Buffer.concat([head, Buffer.alloc(plan.bytes - head.length - tail.length, 7), tail])
  }
  const paced = (body: Buffer): ReadableStream<Uint8Array> => {
    let sent = 0
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent > 0) await new Promise((resolve) => setTimeout(resolve, plan.pauseMs))
        controller.enqueue(new Uint8Array(body.subarray(sent, sent + chunk)))
        sent += chunk
        if (sent >= body.length) controller.close()
      },
    })
  }
  const forms = plan.kinds.map(form)
  const one = async (i: number): Promise<string> => {
    const kind = plan.kinds[i % plan.kinds.length] as UploadKind
    try {
      const response = await fetch(plan.url, {
        method: 'POST',
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, ...kind.headers },
        body: paced(forms[i % forms.length] as Buffer),
        duplex: 'half',
      } as RequestInit)
      return `${response.status} ${await response.text()}`
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause
      return `client error ${cause?.code ?? cause?.message ?? String(error)}`
    }
  }
  const outcomes: Record<string, number> = {}
  let next = 0
  const lane = async () => {
    while (next < plan.tries) {
      next += 1
      const outcome = await one(next - 1)
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
    }
  }
  void Promise.all(Array.from({ length: plan.parallel }, lane)).then(() => parentPort?.postMessage(outcomes))
}

/** Runs `plan` on another thread; the count of each outcome (`<status> <body>`, or `client error <code>`). */
function uploadsFromAnotherThread(plan: Omit<UploadPlan, 'url'>): Promise<Record<string, number>> {
  const worker = new Worker(`(${uploadClient.toString()})()`, { eval: true, workerData: { ...plan, url: `http://127.0.0.1:${port}/products` } })
  return new Promise((resolve, reject) => {
    worker.once('message', (outcomes: Record<string, number>) => {
      resolve(outcomes)
      void worker.terminate()
    })
    worker.once('error', reject)
  })
}

const answer = (status: number, error: string) => `${status} ${JSON.stringify({ error })}`
const png = { filename: 'big.png', type: 'image/png' }

describe.concurrent('an answer given while an upload is still arriving reaches the client', () => {
  // Without the lingering close about half of these tries fail (EPIPE): many tries, so that a change that lets
  // only a few fail is caught too.
  it('300 paced 3 MB uploads with fetch, half without a token (401), half as a customer (403): no client error (slow: 900 MB sent, paced)', async ({
    expect,
  }) => {
    const started = performance.now()
    const outcomes = await uploadsFromAnotherThread({
      tries: 300,
      parallel: 6,
      bytes: 3 * 1024 * 1024,
      pauseMs: 1,
      kinds: [
        { headers: {}, ...png },
        { headers: bearer(t.customer), ...png },
      ],
    })
    expect(outcomes).toEqual({ [answer(401, messages.noUser)]: 150, [answer(403, messages.requiresRoles(['admin']))]: 150 })
    expect(performance.now() - started).toBeLessThan(20_000)
  })

  it('100 paced 3 MB uploads as an admin of an image of a refused type (500 by the image rules): no client error (slow: 300 MB sent, paced)', async ({
    expect,
  }) => {
    const outcomes = await uploadsFromAnotherThread({
      tries: 100,
      parallel: 4,
      bytes: 3 * 1024 * 1024,
      pauseMs: 1,
      kinds: [{ headers: bearer(t.admin), filename: 'big.bmp', type: 'image/bmp' }],
    })
    expect(outcomes).toEqual({ [answer(500, messages.invalidImageType('image/bmp'))]: 100 })
  })
})

const UPLOAD_HEAD = (contentLength: number) =>
  `POST /products HTTP/1.1\r\nHost: shop.test\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: ${contentLength}\r\n\r\n`

/** Writes `total` bytes of body as fast as the socket takes them, until done or the server closes; what was written. */
async function flood(client: RawClient, total: number): Promise<number> {
  const { socket } = client
  const chunk = Buffer.alloc(64 * 1024, 7)
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  let written = 0
  while (written < total && socket.writable) {
    written += chunk.length
    if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed])
  }
  return written
}

describe.concurrent('the lingering close is bounded', () => {
  it('a body that ends after the answer is read to its end, then the connection is closed', async ({ expect }) => {
    const client = await openRawClient(port, { allowHalfOpen: true })
    const server = await serverSide(client)
    const half = 100 * 1024
    client.socket.write(UPLOAD_HEAD(2 * half) + 'x'.repeat(half))
    await expect.poll(() => client.received().includes('\r\n\r\n{'), { timeout: 3000 }).toBe(true)
    const response = parseRawResponse(client.received())
    expect(response.status).toBe(401)
    expect(response.headers.connection).toBe('close')
    expect(JSON.parse(response.body)).toEqual({ error: messages.noUser })
    expect(response.rest).toBe('')
    // Answered (and its sending side ended), the connection is still read: the rest of the body is taken, not
    // reset, and then the server closes. (This client keeps its own side open: it is the server that closes.)
    expect(server.destroyed).toBe(false)
    client.socket.write('x'.repeat(half))
    expect(await serverClosedWithin(server, 1000)).not.toBeNull()
    expect(server.bytesRead).toBe(Buffer.byteLength(UPLOAD_HEAD(2 * half)) + 2 * half)
    expect(parseRawResponse(client.received()).rest).toBe('')
    client.socket.destroy()
  })

  it(`a client sending far more than ${LINGER_MAX_BYTES} bytes after the answer has its connection closed`, async ({ expect }) => {
    const client = await openRawClient(port, { allowHalfOpen: true })
    const server = await serverSide(client)
    const total = 64 * 1024 * 1024
    client.socket.write(UPLOAD_HEAD(total))
    const written = await flood(client, total)
    expect(await client.closedWithin(LINGER_MAX_MS / 2)).not.toBeNull()
    expect(server.destroyed).toBe(true)
    expect(written).toBeLessThan(total)
    expect(parseRawResponse(client.received()).status).toBe(401)
    // It was read on past the answer, up to the bound, and no further than the one read that crossed it.
    expect(server.bytesRead).toBeGreaterThan(LINGER_MAX_BYTES)
    expect(server.bytesRead).toBeLessThan(LINGER_MAX_BYTES + 512 * 1024)
  })

  it(`a client still sending ${LINGER_MAX_MS / 1000} s after the answer has its connection closed (slow: it waits out the ${LINGER_MAX_MS / 1000} s bound)`, async ({
    expect,
  }) => {
    const client = await openRawClient(port, { allowHalfOpen: true })
    const server = await serverSide(client)
    client.socket.write(UPLOAD_HEAD(1024 * 1024) + 'x'.repeat(1024))
    await expect.poll(() => client.received().includes('\r\n\r\n{'), { timeout: 3000 }).toBe(true)
    const answeredAt = performance.now()
    // 10 KiB a second: far under the bound of bytes, and never silent long enough for any timeout.
    client.dribble('x'.repeat(1024), 100)
    expect(await serverClosedWithin(server, LINGER_MAX_MS + 5000)).not.toBeNull()
    const closedAfter = performance.now() - answeredAt
    expect(closedAfter).toBeGreaterThan(LINGER_MAX_MS - 500)
    expect(closedAfter).toBeLessThan(LINGER_MAX_MS + 2000)
    // The client hears of it at its next write (a reset: it was told to stop long ago).
    expect(await client.closedWithin(2000)).not.toBeNull()
    expect(parseRawResponse(client.received()).status).toBe(401)
  })
})
