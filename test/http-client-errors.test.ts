import type { AddressInfo } from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { messages } from '../src/shared/errors.js'
import { useTestApp } from './helpers/app.js'
import { openRawClient, parseRawResponse } from './helpers/raw-http.js'

// Requests Node's HTTP parser refuses never reach a route: they are answered by the server's
// clientErrorHandler, in the service's own shape, and the connection is closed. Raw sockets against a
// listening server, since app.inject bypasses the parser.
const t = useTestApp()
let port: number

beforeAll(async () => {
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  port = (t.app.server.address() as AddressInfo).port
})

/** Sends `raw`, waits (at most 3 s) for the server to close, and returns its answer. */
async function send(raw: string) {
  const client = await openRawClient(port)
  client.socket.write(raw)
  const closedAfter = await client.closedWithin(3000)
  expect(closedAfter, 'the server closes the connection').not.toBeNull()
  const response = parseRawResponse(client.received())
  // Exactly one response: nothing follows it.
  expect(response.rest).toBe('')
  return response
}

function expectAnswer(response: ReturnType<typeof parseRawResponse>, status: number, error: string): void {
  expect(response.status).toBe(status)
  expect(JSON.parse(response.body)).toEqual({ error })
  expect(response.headers.connection).toBe('close')
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8')
  expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.body))
  expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
}

describe('requests the HTTP parser refuses', () => {
  it.each([
    ['a malformed request line', 'GARBAGE\r\n\r\n'],
    ['a request line with a bad version', 'GET /health HTTP/9.Z\r\nHost: shop.test\r\n\r\n'],
    [
      'both Content-Length and Transfer-Encoding',
      'POST /auth/login HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    ['two Content-Length headers', 'POST /auth/login HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!'],
    ['a header name with a space', 'GET /health HTTP/1.1\r\nHost: shop.test\r\nBad Header: 1\r\n\r\n'],
    ['a NUL in a header value', 'GET /health HTTP/1.1\r\nHost: shop.test\r\nX-Name: a\u0000b\r\n\r\n'],
    ['a broken chunked body', 'POST /auth/login HTTP/1.1\r\nHost: shop.test\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
  ])('%s: 400 {"error"} and the connection closed', async (_label, raw) => {
    expectAnswer(await send(raw), 400, messages.malformedRequest)
  })

  it('a broken chunked body of a request that asks for problem details: problem details, and the connection closed', async () => {
    const response = await send(
      'POST /auth/login HTTP/1.1\r\nHost: shop.test\r\nAccept: application/problem+json\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    )
    expect([response.status, response.headers.connection, response.headers['content-type']]).toEqual([400, 'close', 'application/problem+json; charset=utf-8'])
    expect(JSON.parse(response.body)).toEqual({
      type: '/problems/malformed_request',
      title: 'Malformed HTTP request',
      status: 400,
      detail: messages.malformedRequest,
      code: 'malformed_request',
    })
    expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.body))
  })

  it('headers over the size limit: 431 {"error"} and the connection closed', async () => {
    const response = await send(`GET /health HTTP/1.1\r\nHost: shop.test\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    expectAnswer(response, 431, messages.headersTooLarge)
  })

  it('a refused request after a good one on the same connection: the first answer stands, then the 400', async () => {
    const client = await openRawClient(port)
    client.socket.write('GET /health HTTP/1.1\r\nHost: shop.test\r\n\r\n')
    await expect.poll(() => client.received().includes('{"status":"ok"}'), { timeout: 3000 }).toBe(true)
    client.socket.write('GARBAGE\r\n\r\n')
    expect(await client.closedWithin(3000)).not.toBeNull()
    const first = parseRawResponse(client.received())
    expect(first.status).toBe(200)
    const second = parseRawResponse(first.rest)
    expectAnswer(second, 400, messages.malformedRequest)
    expect(second.rest).toBe('')
  })

  it('the listening server still answers afterwards', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/health`)
    expect(res.status).toBe(200)
  })
})
