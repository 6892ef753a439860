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
    if (error instanceof AppError) {
      return reply.code(error.statusCode).send({ error: error.message })
    }
    const fastifyError = error
    if (fastifyError.validation || fastifyError.name === 'ValidationError') {
      return reply.code(422).send({ error: fastifyError.message })
    }
    const known = fastifyError.code ? frameworkErrors[fastifyError.code] : undefined
    if (known) return reply.code(known.status).send({ error: known.message })
    if (error instanceof SyntaxError && fastifyError.statusCode === 400) {
      return reply.code(400).send({ error: messages.malformedJson })
    }
    const status = fastifyError.statusCode ?? 500
    if (status >= 400 && status < 500) {
      // Other client errors raised by Fastify or a plugin: keep the status, the message is not an internal detail.
      return reply.code(status).send({ error: fastifyError.message })
    }
    request.log.error({ err: error }, 'unexpected error')
    return reply.code(500).send({ error: messages.internal })
  })

  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: messages.routeNotFound }))
}

export default fp(errorsPlugin, { name: 'errors' })
