import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.js'
import { messages } from '../../shared/errors.js'
import { rejectBody } from '../../shared/no-body.js'
import { paged } from '../../shared/openapi.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import { trimTextFields } from '../users/trim-text-fields.js'
import { ApiKeyList, ApiKeyWithSecret, CreateApiKeyBody, ListApiKeysQuery } from './api-keys.schemas.js'
import { auditSource } from './audit-log.js'
import * as service from './api-keys.service.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** RFC 8288 `Link` of GET /api-keys with `next`/`prev` when they exist, as on the other paged lists. */
function pageLinks(publicUrl: string, page: { limit: number; offset: number }, total: number): string | null {
  const link = (offset: number, rel: string) => `<${publicUrl}/api-keys?limit=${page.limit}&offset=${offset}>; rel="${rel}"`
  const links: string[] = []
  if (page.offset + page.limit < total) links.push(link(page.offset + page.limit, 'next'))
  if (page.offset > 0) links.push(link(Math.max(0, Math.min(page.offset - page.limit, total - page.limit)), 'prev'))
  return links.length > 0 ? links.join(', ') : null
}

/** Keys for integrations (docs/staff.md, "API keys"): owners only, through `staff:manage`, which no key has. */
export async function apiKeysRoutes(fastify: FastifyInstance, options: { config: Config }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const { publicUrl } = options.config
  const tags = ['staff']
  const security = [{ bearerAuth: [] }]
  const permission = 'staff:manage'

  app.get('/api-keys', {
    config: { permission },
    schema: {
      tags,
      summary: 'API keys, newest first, revoked ones included; never their secrets (X-Total-Count and Link headers)',
      security,
      querystring: ListApiKeysQuery,
      response: { 200: paged(ApiKeyList), ...errors },
    },
    handler: async (request, reply) => {
      const { keys, total } = await service.listApiKeys(app.db, request.query)
      reply.header('X-Total-Count', total)
      const links = pageLinks(publicUrl, { limit: request.query.limit ?? 100, offset: request.query.offset ?? 0 }, total)
      if (links) reply.header('Link', links)
      return keys
    },
  })

  app.post('/api-keys', {
    // A new key is in no cache: its first use reads it.
    config: { permission, invalidates: [] },
    preValidation: trimTextFields,
    schema: {
      tags,
      summary: 'Make an API key acting with a staff role (never owner); the answer is the only one with its secret',
      security,
      body: CreateApiKeyBody,
      response: { 201: ApiKeyWithSecret, ...errors },
    },
    handler: async (request, reply) => reply.code(201).send(await service.createApiKey(app.db, request.user.id, request.body, auditSource(request))),
  })

  app.post('/api-keys/:id/rotate', {
    // The old secret stops at once, here and on the other instances.
    config: { permission, invalidates: ['apiKeys'] },
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'A new secret for an API key, shown only in this answer; the old one stops working at once',
      security,
      params: IdParams,
      response: { 200: ApiKeyWithSecret, ...errors },
    },
    handler: async (request) => service.rotateApiKey(app.db, request.params.id, auditSource(request)),
  })

  app.delete('/api-keys/:id', {
    config: { permission, invalidates: ['apiKeys'] },
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'Revoke an API key: it stops working at once; its row stays, listed with `revokedAt`',
      security,
      params: IdParams,
      response: { 200: MessageResponse, ...errors },
    },
    handler: async (request) => {
      await service.revokeApiKey(app.db, request.params.id, auditSource(request))
      return { message: messages.apiKeyRevokedDone }
    },
  })
}
