import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders
  /** The body exactly as received. */
  body: string
  url: string
}

/** What the receiver does with a request once it has read it; by default it answers 204. */
export type ReceiverBehaviour = (response: ServerResponse, request: ReceivedWebhook) => void

export interface WebhookReceiver {
  url: string
  port: number
  received: ReceivedWebhook[]
  /** Requests whose headers arrived, read or not. */
  connections: number
  behave: (behaviour: ReceiverBehaviour) => void
  /** Resolves when `count` webhooks have been received. */
  waitFor: (count: number, timeoutMs?: number) => Promise<ReceivedWebhook[]>
  close: () => Promise<void>
}

/** A webhook receiver on 127.0.0.1 (a free port, or `port` to come back on the one it had), recording every request it is sent. */
export async function startWebhookReceiver(port = 0): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = []
  const sockets = new Set<Socket>()
  let behaviour: ReceiverBehaviour = (response) => response.writeHead(204).end()
  let connections = 0
  const waiters: (() => void)[] = []
  const server = createServer((request, response) => {
    connections += 1
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const entry = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), url: request.url ?? '' }
      received.push(entry)
      for (const wake of waiters.splice(0)) wake()
      behaviour(response, entry)
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const bound = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    received,
    get connections() {
      return connections
    },
    behave: (next) => {
      behaviour = next
    },
    waitFor: async (count, timeoutMs = 5000) => {
      const deadline = Date.now() + timeoutMs
      while (received.length < count) {
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`expected ${count} webhooks, received ${received.length}`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          waiters.push(() => {
            clearTimeout(timer)
            resolve()
          })
        })
      }
      return received
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
