import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.js'
import { ErrorResponse, type SchemaTypes } from '../../shared/validation.js'
import { Stats, StatsQuery } from './admin.schemas.js'
import { getStats } from './admin.service.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 422: ErrorResponse }

/** The API of the admin dashboard (its pages are served by plugins/admin-ui.ts). */
export async function adminRoutes(fastify: FastifyInstance, options: { config: Config }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const { lowStockThreshold, payments } = options.config

  app.get('/admin/api/stats', {
    config: { permission: 'orders:read' },
    schema: {
      tags: ['admin'],
      summary: 'The dashboard overview: orders and revenue per UTC day, orders to ship, orders per status, products low on stock (admin)',
      security: [{ bearerAuth: [] }],
      querystring: StatsQuery,
      response: { 200: Stats, ...errors },
    },
    handler: async (request) => getStats(app.db, { days: request.query.days, currency: payments.currency, lowStockThreshold }),
  })
}
