import { connect, type Socket } from 'node:net'

/** A raw TCP client of a listening test server: what it sent is exactly what the test wrote. */
export interface RawClient {
  socket: Socket
  /** Everything the server wrote so far. */
  received: () => string
  /** Milliseconds from connect until the server closed the socket, or null if it is still open after `limitMs`. */
  closedWithin: (limitMs: number) => Promise<number | null>
  /** Writes `chunk` every `everyMs` until the socket closes (a slow client). */
  dribble: (chunk: string, everyMs: number) => void
}

/**
 * `allowHalfOpen`: the client goes on sending after the server has ended its side (a client still uploading
 * when it is answered); by default, as Node's sockets do, it ends its own side when the server's ends.
 */
export async function openRawClient(port: number, options: { allowHalfOpen?: boolean } = {}): Promise<RawClient> {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: options.allowHalfOpen ?? false })
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  const opened = performance.now()
  let data = ''
  let closedAt: number | null = null
  let timer: NodeJS.Timeout | undefined
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    data += chunk
  })
  // A reset from the server is a close too; the test looks at what arrived before it.
  socket.on('error', () => {})
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closedAt = performance.now()
      clearInterval(timer)
      resolve()
    }),
  )
  return {
    socket,
    received: () => data,
    closedWithin: async (limitMs) => {
      const limit = new Promise<void>((resolve) => setTimeout(resolve, limitMs).unref())
      await Promise.race([closed, limit])
      if (closedAt === null) {
        clearInterval(timer)
        socket.destroy()
        return null
      }
      return closedAt - opened
    },
    dribble: (chunk, everyMs) => {
      timer = setInterval(() => {
        if (!socket.destroyed && socket.writable) socket.write(chunk)
      }, everyMs)
    },
  }
}

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** What the server wrote after this response (latin1, as received). */
  rest: string
}

/** The first HTTP response in `raw` (latin1 as received; the body is decoded as UTF-8). */
export function parseRawResponse(raw: string): RawResponse {
  const end = raw.indexOf('\r\n\r\n')
  if (end === -1) throw new Error(`no complete response in ${JSON.stringify(raw.slice(0, 200))}`)
  const [statusLine = '', ...lines] = raw.slice(0, end).split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
  }
  const bytes = Buffer.from(raw.slice(end + 4), 'latin1')
  const length = headers['content-length'] === undefined ? bytes.length : Number(headers['content-length'])
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: bytes.subarray(0, length).toString('utf8'),
    rest: bytes.subarray(length).toString('latin1'),
  }
}
