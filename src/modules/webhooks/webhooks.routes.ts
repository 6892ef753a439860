import { paged } from '../../shared/openapi.js'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.js'
import { rejectBody } from '../../shared/no-body.js'
import { ErrorResponse, IdParams, MessageResponse, NoQuery, type SchemaTypes } from '../../shared/validation.js'
import {
  CreatedWebhook,
  CreateWebhookBody,
  DeliveryList,
  DeliveryParams,
  Delivery,
  ListDeliveriesQuery,
  UpdateWebhookBody,
  Webhook,
  WebhookList,
} from './webhooks.schemas.js'
import { auditSource } from '../staff/audit-log.js'
import * as service from './webhooks.service.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 422: ErrorResponse }

/** `/webhooks/:id/deliveries` with the list's parameters in one fixed order (what `Link` points to). */
function deliveriesPath(id: number, query: { limit: number; offset: number; status?: string | undefined }, offset: number): string {
  const search = new URLSearchParams({ limit: String(query.limit), offset: String(offset) })
  if (query.status) search.set('status', query.status)
  return `/webhooks/${id}/deliveries?${search.toString()}`
}

/** RFC 8288 `Link` with `next`/`prev` when they exist, as on the other lists. */
function pageLinks(publicUrl: string, id: number, query: { limit: number; offset: number; status?: string | undefined }, total: number): string | null {
  const link = (offset: number, rel: string) => `<${publicUrl}${deliveriesPath(id, query, offset)}>; rel="${rel}"`
  const links: string[] = []
  if (query.offset + query.limit < total) links.push(link(query.offset + query.limit, 'next'))
  if (query.offset > 0) links.push(link(Math.max(0, Math.min(query.offset - query.limit, total - query.limit)), 'prev'))
  return links.length > 0 ? links.join(', ') : null
}

/** The admin's webhook endpoints and their deliveries; the deliveries themselves are the outbox's (webhooks.plugin.ts). */
export interface WebhooksRoutesOptions {
  config: Config
  policy: service.WebhookPolicy
}

export async function webhooksRoutes(fastify: FastifyInstance, options: WebhooksRoutesOptions): Promise<void> {
  const { publicUrl } = options.config
  const { policy } = options
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['webhooks']
  const security = [{ bearerAuth: [] }]
  // Every route `settings:write`: the endpoints are settings, and their deliveries carry the shop's data.
  // A webhook's creation, change or deletion empties every instance's subscriptions (webhooks.service.ts).
  const config = { permission: 'settings:write' as const, invalidates: ['webhooks'] as const }
  const reading = { permission: 'settings:write' as const }
  // A retry changes a delivery, nothing cached.
  const retryConfig = { permission: 'settings:write' as const, invalidates: [] }

  app.post('/webhooks', {
    config,
    schema: {
      tags,
      summary: 'Add a webhook endpoint (admin); the answer shows its signing secret, the only time it is shown',
      security,
      body: CreateWebhookBody,
      response: { 201: CreatedWebhook, ...errors, 503: ErrorResponse },
    },
    handler: async (request, reply) => reply.code(201).send(await service.createWebhook(app.db, request.body, policy, auditSource(request))),
  })

  app.get('/webhooks', {
    config: reading,
    schema: { tags, summary: 'Webhook endpoints (admin; no secrets)', security, querystring: NoQuery, response: { 200: WebhookList, ...errors } },
    handler: async () => service.listWebhooks(app.db),
  })

  app.get('/webhooks/:id', {
    config: reading,
    schema: { tags, summary: 'One webhook endpoint (admin; no secret)', security, params: IdParams, response: { 200: Webhook, ...errors } },
    handler: async (request) => service.getWebhook(app.db, request.params.id),
  })

  app.patch('/webhooks/:id', {
    config,
    schema: {
      tags,
      summary: 'Change a webhook endpoint (admin): url, events, description, active',
      security,
      params: IdParams,
      body: UpdateWebhookBody,
      response: { 200: Webhook, ...errors, 503: ErrorResponse },
    },
    handler: async (request) => service.updateWebhook(app.db, request.params.id, request.body, policy, auditSource(request)),
  })

  app.delete('/webhooks/:id', {
    config,
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'Delete a webhook endpoint (admin); its deliveries go with it, pending ones are not sent',
      security,
      params: IdParams,
      response: { 200: MessageResponse, ...errors },
    },
    handler: async (request) => service.deleteWebhook(app.db, request.params.id, auditSource(request)),
  })

  app.get('/webhooks/:id/deliveries', {
    config: reading,
    schema: {
      tags,
      summary: 'A webhook’s deliveries, newest first (admin)',
      security,
      params: IdParams,
      querystring: ListDeliveriesQuery,
      response: { 200: paged(DeliveryList), ...errors },
    },
    handler: async (request, reply) => {
      const query = { limit: request.query.limit ?? 100, offset: request.query.offset ?? 0, status: request.query.status }
      const { deliveries, total } = await service.listDeliveries(app.db, request.params.id, query)
      reply.header('X-Total-Count', total)
      const links = pageLinks(publicUrl, request.params.id, query, total)
      if (links) reply.header('Link', links)
      return deliveries
    },
  })

  app.post('/webhooks/:id/deliveries/:deliveryId/retry', {
    config: retryConfig,
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'Send a delivery again now, with the same id and body (admin)',
      security,
      params: DeliveryParams,
      response: { 202: Delivery, ...errors, 409: ErrorResponse },
    },
    handler: async (request, reply) =>
      reply.code(202).send(await service.retryDelivery(app.db, request.params.id, request.params.deliveryId, auditSource(request))),
  })
}
