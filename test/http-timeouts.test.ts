import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'
import { messages } from '../src/shared/errors.js'
import { useTestApp } from './helpers/app.js'
import { bearer } from './helpers/factories.js'
import { openRawClient, parseRawResponse } from './helpers/raw-http.js'

// Slow clients against a real listening server on 127.0.0.1, with timeouts small enough that the whole file
// takes seconds. Every wait of the test is bounded: a socket still open at its limit is a failure, not a hang.
const HEADERS_MS = 500
const REQUEST_MS = 1500
const KEEP_ALIVE_MS = 300
// The server checks its open requests every tenth of the shorter timeout (50 ms here): a timeout fires at most
// that late, plus the scheduling of a machine shared with other tests.
const SLACK_MS = 700
// Node closes an idle kept-alive socket up to 1 s after the Keep-Alive timeout it announced, so that a
// client never reuses a socket at the very moment the server closes it.
const KEEP_ALIVE_BUFFER_MS = 1000

const t = useTestApp({
  HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
  HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
  HTTP_SOCKET_TIMEOUT_MS: '5000',
})
let port: number

beforeAll(async () => {
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  port = (t.app.server.address() as AddressInfo).port
})

function expectTimeoutAnswer(raw: string): void {
  const response = parseRawResponse(raw)
  expect(response.status).toBe(408)
  expect(response.headers.connection).toBe('close')
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8')
  expect(JSON.parse(response.body)).toEqual({ error: messages.requestTimeout })
}

describe('slow clients are timed out', () => {
  it('headers that never end: 408 and closed at the headers timeout', async () => {
    const client = await openRawClient(port)
    client.socket.write('GET /health HTTP/1.1\r\nHost: shop.test\r\n')
    client.dribble('x-slow: 1\r\n', 50)
    const closedAfter = await client.closedWithin(HEADERS_MS + SLACK_MS + 2000)
    expect(closedAfter).not.toBeNull()
    expect(closedAfter).toBeGreaterThanOrEqual(HEADERS_MS - 50)
    expect(closedAfter).toBeLessThan(HEADERS_MS + SLACK_MS)
    expectTimeoutAnswer(client.received())
  })

  it('a connection that sends nothing: 408 and closed at the headers timeout', async () => {
    const client = await openRawClient(port)
    const closedAfter = await client.closedWithin(HEADERS_MS + SLACK_MS + 2000)
    expect(closedAfter).not.toBeNull()
    expect(closedAfter).toBeLessThan(HEADERS_MS + SLACK_MS)
    expectTimeoutAnswer(client.received())
  })

  it('a body that trickles in: 408 and closed at the request timeout, and nothing was written', async () => {
    const before = await t.app.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    const client = await openRawClient(port)
    client.socket.write('POST /auth/register HTTP/1.1\r\nHost: shop.test\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{"name":"Slow",')
    client.dribble(' ', 50)
    const closedAfter = await client.closedWithin(REQUEST_MS + SLACK_MS + 2000)
    expect(closedAfter).not.toBeNull()
    expect(closedAfter).toBeGreaterThanOrEqual(REQUEST_MS - 50)
    expect(closedAfter).toBeLessThan(REQUEST_MS + SLACK_MS)
    expectTimeoutAnswer(client.received())
    const after = await t.app.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    expect(Number(after.n)).toBe(Number(before.n))
  })

  it('a body that trickles in, of a request that asks for problem details: 408 as problem details', async () => {
    const client = await openRawClient(port)
    client.socket.write(
      'POST /auth/register HTTP/1.1\r\nHost: shop.test\r\nAccept: application/problem+json\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{',
    )
    client.dribble(' ', 50)
    expect(await client.closedWithin(REQUEST_MS + SLACK_MS + 2000)).not.toBeNull()
    const response = parseRawResponse(client.received())
    expect([response.status, response.headers.connection, response.headers['content-type']]).toEqual([408, 'close', 'application/problem+json; charset=utf-8'])
    expect(JSON.parse(response.body)).toMatchObject({ status: 408, code: 'request_timeout', detail: messages.requestTimeout })
  })

  it('100 slow-body sockets at once are all closed at the request timeout', async () => {
    const clients = await Promise.all(Array.from({ length: 100 }, () => openRawClient(port)))
    for (const client of clients) {
      // An admin route: its body is read (the rate-limited /auth routes would answer 429 to the 11th).
      client.socket.write(
        `POST /categories HTTP/1.1\r\nHost: shop.test\r\nAuthorization: ${bearer(t.admin).authorization}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{`,
      )
      client.dribble(' ', 100)
    }
    const closed = await Promise.all(clients.map((client) => client.closedWithin(REQUEST_MS + SLACK_MS + 3000)))
    expect(closed.filter((ms) => ms === null)).toHaveLength(0)
    expect(Math.max(...(closed as number[]))).toBeLessThan(REQUEST_MS + SLACK_MS + 1000)
    for (const client of clients) expectTimeoutAnswer(client.received())
    const categories = await t.app.db
      .selectFrom('categories')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    expect(Number(categories.n)).toBe(0)
  })

  it('an answer sent before the body was read (401) closes the connection at once', async () => {
    const client = await openRawClient(port)
    client.socket.write('POST /categories HTTP/1.1\r\nHost: shop.test\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"name":')
    client.dribble(' ', 50)
    const closedAfter = await client.closedWithin(REQUEST_MS + SLACK_MS + 2000)
    expect(closedAfter).not.toBeNull()
    // Long before the request timeout: the server ends its side after the answer, and this client, like
    // Node's sockets, ends its own then. (One that goes on sending is read on, within bounds, before the
    // socket is closed: test/http-early-answer.test.ts.)
    expect(closedAfter).toBeLessThan(REQUEST_MS / 2)
    const response = parseRawResponse(client.received())
    expect(response.status).toBe(401)
    expect(response.headers.connection).toBe('close')
    expect(JSON.parse(response.body)).toEqual({ error: messages.noUser })
  })

  it.each([
    ['a URL that does not decode (router error)', 'PUT /categories/% HTTP/1.1', 'application/json', 400, 'La URL no es válida'],
    ['a content type not accepted (415)', 'POST /auth/login HTTP/1.1', 'text/plain', 415, messages.unsupportedMediaType],
  ])('%s before the body was read closes the connection at once', async (_label, requestLine, type, status, error) => {
    const client = await openRawClient(port)
    client.socket.write(`${requestLine}\r\nHost: shop.test\r\nContent-Type: ${type}\r\nContent-Length: 100000\r\n\r\nab`)
    client.dribble(' ', 50)
    const closedAfter = await client.closedWithin(REQUEST_MS + SLACK_MS + 2000)
    expect(closedAfter).not.toBeNull()
    expect(closedAfter).toBeLessThan(REQUEST_MS / 2)
    const response = parseRawResponse(client.received())
    expect(response.status).toBe(status)
    expect(response.headers.connection).toBe('close')
    expect(JSON.parse(response.body)).toEqual({ error })
  })

  it('an error answer to a request whose body did arrive keeps the connection', async () => {
    const client = await openRawClient(port)
    const body = '{"name":"x"}'
    client.socket.write(`POST /categories HTTP/1.1\r\nHost: shop.test\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    // Kept alive, then closed by the keep-alive timeout rather than at once.
    const closedAfter = await client.closedWithin(KEEP_ALIVE_MS + KEEP_ALIVE_BUFFER_MS + SLACK_MS + 2000)
    expect(closedAfter).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 50)
    const response = parseRawResponse(client.received())
    expect(response.status).toBe(401)
    expect(response.headers.connection).toBe('keep-alive')
  })

  it('an idle kept-alive connection is closed at the keep-alive timeout', async () => {
    const client = await openRawClient(port)
    client.socket.write('GET /health HTTP/1.1\r\nHost: shop.test\r\n\r\n')
    const closedAfter = await client.closedWithin(KEEP_ALIVE_MS + KEEP_ALIVE_BUFFER_MS + SLACK_MS + 2000)
    expect(closedAfter).not.toBeNull()
    expect(closedAfter).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 50)
    expect(closedAfter).toBeLessThan(KEEP_ALIVE_MS + KEEP_ALIVE_BUFFER_MS + SLACK_MS)
    const response = parseRawResponse(client.received())
    expect(response.status).toBe(200)
    expect(response.headers.connection).toBe('keep-alive')
  })
})

describe('the socket timeout', () => {
  // Long request timeouts, a short socket timeout: only the socket's silence can close it.
  const quiet = useTestApp({ HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '20000', HTTP_SOCKET_TIMEOUT_MS: '400' })
  let quietPort: number
  beforeAll(async () => {
    await quiet.app.listen({ port: 0, host: '127.0.0.1' })
    quietPort = (quiet.app.server.address() as AddressInfo).port
  })

  it('closes a socket that went silent in the middle of a request', async () => {
    const client = await openRawClient(quietPort)
    client.socket.write('POST /auth/login HTTP/1.1\r\nHost: shop.test\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{')
    const closedAfter = await client.closedWithin(400 + SLACK_MS + 2000)
    expect(closedAfter).not.toBeNull()
    expect(closedAfter).toBeGreaterThanOrEqual(350)
    expect(closedAfter).toBeLessThan(400 + SLACK_MS)
  })
})

describe('configuration of the HTTP timeouts', () => {
  const base = { NODE_ENV: 'test', JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-000', DATA_DIR: tmpdir() }

  it('has production defaults', () => {
    expect(loadConfig(base).http).toEqual({ headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 72_000, socketTimeoutMs: 30_000 })
  })

  it('refuses bad values, one line each', () => {
    let error: unknown
    try {
      loadConfig({ ...base, HTTP_HEADERS_TIMEOUT_MS: 'soon', HTTP_KEEP_ALIVE_TIMEOUT_MS: '0', HTTP_SOCKET_TIMEOUT_MS: '-1' })
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).problems).toEqual([
      'HTTP_HEADERS_TIMEOUT_MS must be an integer between 100 and 3600000 (got "soon")',
      'HTTP_KEEP_ALIVE_TIMEOUT_MS must be an integer between 100 and 3600000 (got "0")',
      'HTTP_SOCKET_TIMEOUT_MS must be an integer between 100 and 3600000 (got "-1")',
    ])
  })

  it('refuses headers allowed to take longer than the whole request', () => {
    expect(() => loadConfig({ ...base, HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '1000' })).toThrow(
      'HTTP_HEADERS_TIMEOUT_MS must not be greater than HTTP_REQUEST_TIMEOUT_MS (5000 > 1000)',
    )
  })
})
