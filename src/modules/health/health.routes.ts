import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { AppError, messages } from '../../shared/errors.js'
import { ErrorResponse, type SchemaTypes } from '../../shared/validation.js'

const Status = { type: 'object', required: ['status'], properties: { status: { type: 'string' } } } as const

export async function healthRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  app.get('/health', {
    schema: { tags: ['operations'], summary: 'The process is alive', response: { 200: Status } },
    handler: async () => ({ status: 'ok' }),
  })

  app.get('/ready', {
    schema: { tags: ['operations'], summary: 'The database answers', response: { 200: Status, 503: ErrorResponse } },
    handler: async (request) => {
      try {
        await sql`select 1`.execute(app.db)
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed')
        throw new AppError(503, messages.notReady)
      }
      return { status: 'ready' }
    },
  })
}
