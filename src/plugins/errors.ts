import { randomUUID } from 'node:crypto'
import { type IncomingMessage, STATUS_CODES, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { MAX_IMAGE_BYTES } from '../modules/images/image-upload.js'
import { AppError, type AppErrorKey, type ErrorCode, errorCodes, messageCodes, messages } from '../shared/errors.js'
import { ValidationError } from '../shared/validation.js'

/** An error the service answers with a fixed message: its status, code and message, from the tables of shared/errors.ts. */
interface Fixed {
  status: number
  code: ErrorCode
  message: string
}

type FixedKey = { [K in AppErrorKey]: (typeof messages)[K] extends string ? K : never }[AppErrorKey]

function fixed(key: FixedKey): Fixed {
  const code = messageCodes[key]
  return { status: errorCodes[code].status, code, message: messages[key] }
}

/** Fastify's own client errors, by code, with the error the service answers. */
const frameworkErrors: Record<string, Fixed> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: fixed('unsupportedMediaType'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: fixed('malformedJson'),
  FST_ERR_CTP_BODY_TOO_LARGE: fixed('bodyTooLarge'),
  FST_ERR_CTP_EMPTY_JSON_BODY: fixed('malformedJson'),
  FST_ERR_CTP_INVALID_JSON_BODY: fixed('malformedJson'),
  FST_ERR_CTP_EMPTY_TYPE: fixed('unsupportedMediaType'),
  FST_ERR_CTP_INVALID_TYPE: fixed('unsupportedMediaType'),
  // Raised by the router, before any hook: they reach `answerFrameworkError`, not the error handler.
  FST_ERR_BAD_URL: fixed('badUrl'),
  FST_ERR_MAX_PARAM_LENGTH: fixed('urlTooLong'),
}
const internalError = fixed('internal')
const routeNotFound = fixed('routeNotFound')
const malformedJson = fixed('malformedJson')

/** The media type of problem details (RFC 9457). */
export const PROBLEM_JSON = 'application/problem+json'
const MENTIONS_PROBLEM = /problem\+json/i

/**
 * Whether an Accept header lists `application/problem+json` with a q above 0 (alone, or beside `application/json`).
 * A header that does not mention it, or no header at all, costs one test: the plain body is the default.
 */
export function wantsProblem(accept: string | undefined): boolean {
  if (accept === undefined || !MENTIONS_PROBLEM.test(accept)) return false
  for (const range of accept.split(',')) {
    const [mediaType = '', ...parameters] = range.split(';')
    if (mediaType.trim().toLowerCase() !== PROBLEM_JSON) continue
    const q = parameters.find((parameter) => /^\s*q\s*=/i.test(parameter))
    // No q is q=1; a q that is not a number is no preference at all.
    if (q === undefined || Number(q.slice(q.indexOf('=') + 1).trim()) > 0) return true
  }
  return false
}

/** The problem details of an error (docs/api.md, "Problem details"), serialized. */
export function problemDetails(status: number, code: ErrorCode, message: string, field: string | undefined): string {
  const problem = { type: `/problems/${code}`, title: errorCodes[code].title, status, detail: message, code }
  return JSON.stringify(field === undefined ? problem : { ...problem, field })
}

type ErrorBody = { error: string }

/**
 * Sets the status and returns the body, which Fastify sends (returned, not sent: the handler may be async): exactly
 * {"error": "..."}, or problem details when the client's Accept asks for them. Either way the answer varies on Accept.
 */
function answer(request: FastifyRequest, reply: FastifyReply, status: number, code: ErrorCode, message: string, field?: string): ErrorBody | string {
  reply.code(status)
  const vary = reply.getHeader('vary')
  if (vary === undefined) reply.header('Vary', 'Accept')
  else if (!/\baccept\b/i.test(String(vary))) reply.header('Vary', `${String(vary)}, Accept`)
  if (!wantsProblem(request.headers.accept)) return { error: message }
  // A string is sent as it is: the route's schema for the status (ErrorResponse) does not serialize it.
  reply.type(PROBLEM_JSON)
  return problemDetails(status, code, message, field)
}

/**
 * Fastify's `frameworkErrors` option: the router's own errors (a URL that does not decode, a path
 * segment over `maxParamLength`) answered like every other error.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (bodyUnread(request)) void nextTurn().then(() => sendFrameworkError(error, request, reply))
  else sendFrameworkError(error, request, reply)
}

function sendFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  closeIfBodyUnread(request, reply)
  reply.header('X-Request-Id', request.id)
  let known = frameworkErrors[error.code]
  if (!known) {
    request.log.error({ err: error }, 'unexpected router error')
    known = internalError
  }
  void reply.send(answer(request, reply, known.status, known.code, known.message))
}

/**
 * The one error handler: every error body is exactly {"error": "..."}, or its problem details when asked for.
 * A 500 never shows its cause; the cause goes to the log.
 */
async function errorsPlugin(app: FastifyInstance): Promise<void> {
  app.setErrorHandler((error: FastifyError | AppError | ValidationError, request, reply) => {
    if (!bodyUnread(request)) return answerError(error, request, reply)
    return nextTurn().then(() => {
      closeIfBodyUnread(request, reply)
      return answerError(error, request, reply)
    })
  })

  app.setNotFoundHandler((request, reply) => reply.send(answer(request, reply, routeNotFound.status, routeNotFound.code, routeNotFound.message)))
}

/** The answer to an error: the documented ones, Fastify's client errors, or a hidden 500. */
function answerError(error: FastifyError | AppError | ValidationError, request: FastifyRequest, reply: FastifyReply): ErrorBody | string {
  if (error instanceof AppError) return answer(request, reply, error.statusCode, error.code, error.message, error.field)
  if (error instanceof ValidationError) return answer(request, reply, 422, 'validation_failed', error.message, error.field)
  const fastifyError = error
  if (fastifyError.validation) {
    // Every schema's failure is a ValidationError (schemaErrorFormatter); this is the part, should one slip through.
    return answer(request, reply, 422, 'validation_failed', fastifyError.message, fastifyError.validationContext ?? 'body')
  }
  const known = fastifyError.code ? frameworkErrors[fastifyError.code] : undefined
  if (known) return answer(request, reply, known.status, known.code, known.message)
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) {
    return answer(request, reply, malformedJson.status, malformedJson.code, malformedJson.message)
  }
  const status = fastifyError.statusCode ?? 500
  if (status >= 400 && status < 500) {
    // Other client errors raised by Fastify or a plugin: keep the status, the message is not an internal detail.
    return answer(request, reply, status, 'client_error', fastifyError.message)
  }
  request.log.error({ err: error }, 'unexpected error')
  return answer(request, reply, internalError.status, internalError.code, internalError.message)
}

/**
 * An answer given before the request's body was read (a 401 from the auth hook, a 415, a 413 from the
 * Content-Length, an image refused by its type halfway through an upload) closes the connection after it,
 * with a lingering close (see `lingerThenClose`). Kept alive, Node would go on reading a body nobody wants,
 * for as long as a slow client dribbles it. Only errors pay for this check; the happy path does not.
 */
function closeIfBodyUnread(request: FastifyRequest, reply: FastifyReply): void {
  if (!bodyUnread(request)) return
  reply.header('Connection', 'close')
  lingerThenClose(request.raw)
}

/**
 * The bounds of a lingering close: after the answer, at most this many more bytes of the body are read and
 * discarded (the upload limit plus 1 MiB, so a whole refused upload fits)…
 */
export const LINGER_MAX_BYTES = MAX_IMAGE_BYTES + 1024 * 1024
/** …for at most this long from the answer; then the socket is destroyed whatever the client is still sending. */
export const LINGER_MAX_MS = 10_000

const lingering = new WeakSet<IncomingMessage>()

/**
 * nginx's lingering close. Closing a socket while the client's bytes are still arriving makes the kernel
 * answer them with a reset, and a reset can reach the client before it has read the answer: it sees EPIPE
 * or ECONNRESET instead of the 401 (Node's fetch in 3–7 % of paced uploads, curl now and then). So the
 * answer is sent, the sending side is half-closed (FIN after the answer), and the rest of the body is read
 * and thrown away until it ends (then the socket is closed, nothing left to reset), or until
 * LINGER_MAX_BYTES more bytes or LINGER_MAX_MS have gone by (then it is destroyed: a client that sends
 * without end is not read forever). HTTP_REQUEST_TIMEOUT_MS and HTTP_SOCKET_TIMEOUT_MS still apply.
 *
 * Node closes a `Connection: close` response's socket with `socket.destroySoon()` once the answer is
 * written (resOnFinish in node:_http_server); that one call is replaced, on this socket only, by the
 * half-close. test/http-early-answer.test.ts fails if a Node version stops calling it.
 */
function lingerThenClose(req: IncomingMessage): void {
  const socket = req.socket as Socket | null
  if (!socket || socket.destroyed || lingering.has(req)) return
  lingering.add(req)
  let answered = false
  let read = 0
  const destroySoon = socket.destroySoon.bind(socket)
  const destroy = () => {
    clearTimeout(timer)
    socket.destroy()
  }
  const timer = setTimeout(destroy, LINGER_MAX_MS)
  socket.once('close', () => clearTimeout(timer))
  socket.destroySoon = () => {
    Reflect.deleteProperty(socket, 'destroySoon')
    answered = true
    if (req.complete) {
      clearTimeout(timer)
      destroySoon()
    } else if (socket.writable) {
      socket.end()
    }
  }
  // Whoever was reading the body has given up (a failed multipart handler may still be piped to busboy):
  // from here on it is read only to be counted and dropped.
  req.unpipe()
  req.removeAllListeners('data')
  req.on('data', (chunk: Buffer) => {
    read += chunk.length
    if (read > LINGER_MAX_BYTES) destroy()
  })
  // The body is all in: close as Node would have (once the answer is out). Before the answer, Node's own
  // destroySoon will find the request complete.
  req.once('end', () => {
    if (!answered) return
    clearTimeout(timer)
    destroySoon()
  })
  req.on('error', () => {})
  req.resume()
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
const clientErrors: Record<string, Fixed> = {
  ERR_HTTP_REQUEST_TIMEOUT: fixed('requestTimeout'),
  HPE_HEADER_OVERFLOW: fixed('headersTooLarge'),
}
const malformedRequest = fixed('malformedRequest')

/**
 * An error answered outside Fastify (the HTTP server's own, the metrics port): the status line's headers and body,
 * `{"error": "..."}` or, when `accept` asks for them, problem details.
 */
export function rawErrorAnswer(accept: string | undefined, error: Fixed): { contentType: string; body: string } {
  if (!wantsProblem(accept)) return { contentType: 'application/json; charset=utf-8', body: JSON.stringify({ error: error.message }) }
  return { contentType: `${PROBLEM_JSON}; charset=utf-8`, body: problemDetails(error.status, error.code, error.message, undefined) }
}

/** The errors the metrics port answers (plugins/metrics.ts). */
export const rawErrors = { routeNotFound, internal: internalError }

/**
 * Fastify's `clientErrorHandler`: a request the HTTP parser refused (a malformed request line, both
 * Content-Length and Transfer-Encoding, a duplicate Content-Length…), headers over the size limit (431) or a
 * client too slow for the server's timeouts (408) is answered `{"error": "..."}` like every other error (problem
 * details if the request's headers were read and ask for them), and the connection closed: after such an error
 * nothing more on it can be trusted. These answers are not cacheable (400, 408, 431): no `Vary`.
 */
export function answerClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  // A response already under way on this socket cannot be followed by another one: just close.
  const inFlight = (socket as Socket & { _httpMessage?: (ServerResponse & { req?: IncomingMessage }) | null })._httpMessage
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy()
    return
  }
  const answer = (error.code && clientErrors[error.code]) || malformedRequest
  const { status } = answer
  const id = randomUUID()
  // The request whose body was too slow, or broken, has its headers; one cut short in its headers has none.
  const { contentType, body } = rawErrorAnswer(inFlight?.req?.headers.accept, answer)
  // A timed-out connection is often a browser's unused spare one: not worth a line at info.
  this.log[status === 408 ? 'debug' : 'info']({ reqId: id, code: error.code, status, remoteAddress: socket.remoteAddress }, 'client error')
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      `Content-Type: ${contentType}\r\n` +
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
