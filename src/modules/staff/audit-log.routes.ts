import type { FastifyInstance } from 'fastify'
import { paged } from '../../shared/openapi.js'
import { ErrorResponse, type SchemaTypes } from '../../shared/validation.js'
import { AuditLogList, ListAuditLogQuery } from './audit-log.schemas.js'
import { listAuditLog } from './audit-log.service.js'

const FILTERS = ['entityType', 'entityId', 'actorType', 'actorId', 'action', 'from', 'to'] as const

/** GET /audit-log: read only; no route changes or deletes an entry (the retention job alone deletes old ones). */
export async function auditLogRoutes(fastify: FastifyInstance, options: { publicUrl: string }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()

  app.get('/audit-log', {
    config: { permission: 'audit:read' },
    schema: {
      tags: ['staff'],
      summary: 'The audit log: who changed what, newest first, by resource, actor, action and time (X-Total-Count and Link headers)',
      security: [{ bearerAuth: [] }],
      querystring: ListAuditLogQuery,
      response: { 200: paged(AuditLogList), 401: ErrorResponse, 403: ErrorResponse, 422: ErrorResponse },
    },
    handler: async (request, reply) => {
      const query = request.query
      const { entries, total } = await listAuditLog(app.db, query)
      const limit = query.limit ?? 100
      const offset = query.offset ?? 0
      // The filters as sent, in one fixed order, kept in the links.
      const link = (at: number, rel: string) => {
        const search = new URLSearchParams({ limit: String(limit), offset: String(at) })
        for (const name of FILTERS) if (query[name] !== undefined) search.set(name, String(query[name]))
        return `<${options.publicUrl}/audit-log?${search.toString()}>; rel="${rel}"`
      }
      const links: string[] = []
      if (offset + limit < total) links.push(link(offset + limit, 'next'))
      if (offset > 0) links.push(link(Math.max(0, Math.min(offset - limit, total - limit)), 'prev'))
      reply.header('X-Total-Count', total)
      if (links.length > 0) reply.header('Link', links.join(', '))
      return entries
    },
  })
}
