// The baseline: a bare node:http server that answers each request with the exact bytes (status,
// headers, body) the service returned for the same request. It does no work per request beyond a
// Map lookup, so it is the physical limit of this machine for those responses. Started by the
// orchestrator with fork(): argv[2] is a JSON file of recordings; it reports its port over IPC.
//
// With argv[3] = `fastify`, the same answers come from a bare Fastify instead (no plugins, no
// hooks, no logger, one route): the framework's own ceiling, between the baseline and the service.
import { readFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { type Recording, requestKey } from './recording.js'

async function main(): Promise<void> {
  const file = process.argv[2]
  if (!file) throw new Error('usage: baseline.ts <recordings.json>')
  const recordings = JSON.parse(readFileSync(file, 'utf8')) as Recording[]
  const responses = new Map<string, { status: number; headers: string[]; body: Buffer }>()
  for (const r of recordings) {
    responses.set(r.key, { status: r.status, headers: r.rawHeaders, body: Buffer.from(r.bodyBase64, 'base64') })
  }

  if (process.argv[3] === 'fastify') {
    const app = Fastify({ logger: false })
    app.all('/*', (request, reply) => {
      const found = responses.get(requestKey(request.method, request.url, request.headers.authorization))
      if (!found) return reply.code(404).send()
      for (let i = 0; i < found.headers.length; i += 2) {
        const name = found.headers[i] as string
        if (name.toLowerCase() !== 'content-length') reply.header(name, found.headers[i + 1])
      }
      return reply.code(found.status).send(found.body)
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    process.send?.({ port: (app.server.address() as AddressInfo).port })
    process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
    process.on('disconnect', () => process.exit(0))
    return
  }

  const server = http.createServer((request, response) => {
    const found = responses.get(requestKey(request.method ?? 'GET', request.url ?? '/', request.headers.authorization))
    if (!found) {
      response.writeHead(404).end()
      return
    }
    response.writeHead(found.status, found.headers)
    response.end(found.body)
  })
  // Fastify's defaults, so the Connection/Keep-Alive headers match the service's byte for byte.
  server.keepAliveTimeout = 72_000
  server.listen(0, '127.0.0.1', () => {
    process.send?.({ port: (server.address() as AddressInfo).port })
  })
  process.on('SIGTERM', () => server.close(() => process.exit(0)))
  process.on('disconnect', () => process.exit(0))
}

await main()
