import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { AppError } from '../../shared/errors.js'
import { ErrorResponse, type SchemaTypes } from '../../shared/validation.js'

const Status = { type: 'object', required: ['status'], properties: { status: { type: 'string' } } } as const

/** /ready answers within this long whatever the database does (a load balancer's check times out at about 2 s). */
const READY_TIMEOUT_MS = 1500

export async function healthRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  app.get('/health', {
    schema: { tags: ['operations'], summary: 'The process is alive', response: { 200: Status } },
    handler: async () => ({ status: 'ok' }),
  })

  app.get('/ready', {
    schema: { tags: ['operations'], summary: 'The database answers', response: { 200: Status, 503: ErrorResponse } },
    handler: async (request) => {
      // Lost databases are logged once by the database plugin, not on every check.
      if (!app.databaseStatus.available) throw new AppError(503, 'notReady')
      let timer: NodeJS.Timeout | undefined
      try {
        await Promise.race([
          sql`select 1`.execute(app.db),
          new Promise((_resolve, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS)
          }),
        ])
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed')
        throw new AppError(503, 'notReady')
      } finally {
        clearTimeout(timer)
      }
      return { status: 'ready' }
    },
  })
}
