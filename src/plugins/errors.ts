import { randomUUID } from 'node:crypto'
import { STATUS_CODES, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, messages } from '../shared/errors.js'

/** Fastify's own client errors, by code, with the message the service answers. */
const frameworkErrors: Record<string, { status: number; message: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, message: messages.unsupportedMediaType },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, message: messages.malformedJson },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, message: messages.bodyTooLarge },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, message: messages.malformedJson },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, message: messages.malformedJson },
  FST_ERR_CTP_EMPTY_TYPE: { status: 415, message: messages.unsupportedMediaType },
  FST_ERR_CTP_INVALID_TYPE: { status: 415, message: messages.unsupportedMediaType },
  // Raised by the router, before any hook: they reach `answerFrameworkError`, not the error handler.
  FST_ERR_BAD_URL: { status: 400, message: messages.badUrl },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, message: messages.urlTooLong },
}

/**
 * Fastify's `frameworkErrors` option: the router's own errors (a URL that does not decode, a path
 * segment over `maxParamLength`) answered like every other error, `{"error": "..."}`.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (bodyUnread(request)) void nextTurn().then(() => sendFrameworkError(error, request, reply))
  else sendFrameworkError(error, request, reply)
}

function sendFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  closeIfBodyUnread(request, reply)
  const known = frameworkErrors[error.code]
  reply.header('X-Request-Id', request.id)
  if (known) {
    void reply.code(known.status).send({ error: known.message })
    return
  }
  request.log.error({ err: error }, 'unexpected router error')
  void reply.code(500).send({ error: messages.internal })
}

/**
 * The one error handler: every error body is exactly {"error": "..."}.
 * A 500 never shows its cause; the cause goes to the log.
 */
async function errorsPlugin(app: FastifyInstance): Promise<void> {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if (!bodyUnread(request)) return answerError(error, request, reply)
    return nextTurn().then(() => {
      closeIfBodyUnread(request, reply)
      return answerError(error, request, reply)
    })
  })

  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: messages.routeNotFound }))
}

type ErrorBody = { error: string }

/** Sets the status and returns the body, which Fastify sends (returned, not sent: the handler may be async). */
function answer(reply: FastifyReply, status: number, error: string): ErrorBody {
  reply.code(status)
  return { error }
}

/** The status and `{"error": "..."}` of an error: the documented ones, Fastify's client errors, or a hidden 500. */
function answerError(error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply): ErrorBody {
  if (error instanceof AppError) {
    return answer(reply, error.statusCode, error.message)
  }
  const fastifyError = error
  if (fastifyError.validation || fastifyError.name === 'ValidationError') {
    return answer(reply, 422, fastifyError.message)
  }
  const known = fastifyError.code ? frameworkErrors[fastifyError.code] : undefined
  if (known) return answer(reply, known.status, known.message)
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) {
    return answer(reply, 400, messages.malformedJson)
  }
  const status = fastifyError.statusCode ?? 500
  if (status >= 400 && status < 500) {
    // Other client errors raised by Fastify or a plugin: keep the status, the message is not an internal detail.
    return answer(reply, status, fastifyError.message)
  }
  request.log.error({ err: error }, 'unexpected error')
  return answer(reply, 500, messages.internal)
}

/**
 * An answer given before the request's body was read (a 401 from the auth hook, a 415, a 413 from the
 * Content-Length) closes the connection after it. Kept alive, Node would go on reading a body nobody
 * wants, for as long as a slow client dribbles it. Only errors pay for this check; the happy path does not.
 */
function closeIfBodyUnread(request: FastifyRequest, reply: FastifyReply): void {
  if (bodyUnread(request)) reply.header('Connection', 'close')
}

function bodyUnread(request: FastifyRequest): boolean {
  const { headers } = request.raw
  const hasBody = (headers['content-length'] !== undefined && headers['content-length'] !== '0') || headers['transfer-encoding'] !== undefined
  // `complete` is Node's "the whole message was read"; injected requests (tests) have none and are left alone.
  return hasBody && request.raw.complete === false
}

/**
 * One turn of the event loop. A hook may fail while Node is still parsing the packet that carries the
 * body: waiting for the parser to finish tells a body that has arrived from one that is still coming.
 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/** Errors the HTTP parser or the server's timeouts raise before there is a request, by Node's code. */
const clientErrors: Record<string, { status: number; message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, message: messages.requestTimeout },
  HPE_HEADER_OVERFLOW: { status: 431, message: messages.headersTooLarge },
}

/**
 * Fastify's `clientErrorHandler`: a request the HTTP parser refused (a malformed request line, both
 * Content-Length and Transfer-Encoding, a duplicate Content-Length…), headers over the size limit (431) or a
 * client too slow for the server's timeouts (408) is answered `{"error": "..."}` like every other error, and
 * the connection closed: after such an error nothing more on it can be trusted.
 */
export function answerClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  // A response already under way on this socket cannot be followed by another one: just close.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy()
    return
  }
  const { status, message } = (error.code && clientErrors[error.code]) || { status: 400, message: messages.malformedRequest }
  const id = randomUUID()
  const body = JSON.stringify({ error: message })
  // A timed-out connection is often a browser's unused spare one: not worth a line at info.
  this.log[status === 408 ? 'debug' : 'info']({ reqId: id, code: error.code, status, remoteAddress: socket.remoteAddress }, 'client error')
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  )
  // end() sends the answer and half-closes; the socket is freed once the answer is out, or after 5 s of a
  // client that reads nothing (Node took the socket's own timeout off before calling this handler).
  socket.once('finish', () => socket.destroy())
  socket.setTimeout(5000, () => socket.destroy())
}

export default fp(errorsPlugin, { name: 'errors' })
