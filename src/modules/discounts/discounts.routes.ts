import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { messages } from '../../shared/errors.js'
import { rejectBody } from '../../shared/no-body.js'
import { paged } from '../../shared/openapi.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes, ValidationError } from '../../shared/validation.js'
import {
  CreateDiscountCodeBody,
  DiscountCode,
  DiscountCodeList,
  DiscountRedemptionList,
  ListDiscountCodesQuery,
  ListRedemptionsQuery,
  UpdateDiscountCodeBody,
} from './discounts.schemas.js'
import { auditSource } from '../staff/audit-log.js'
import * as service from './discounts.service.js'

/** PATCH: a code's text never changes (unknown fields are dropped elsewhere; this one is refused, as documented). */
async function refuseCode(request: FastifyRequest): Promise<void> {
  const body = request.body
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.hasOwn(body, 'code')) {
    throw new ValidationError('property code should not exist', 'code')
  }
}

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** RFC 8288 `Link` with `next`/`prev` when they exist, the list's parameters kept in one fixed order, as on the other lists. */
function pageLinks(publicUrl: string, path: string, query: { limit: number; offset: number }, extra: Record<string, string>, total: number): string | null {
  const link = (offset: number, rel: string) => {
    const search = new URLSearchParams({ limit: String(query.limit), offset: String(offset), ...extra })
    return `<${publicUrl}${path}?${search.toString()}>; rel="${rel}"`
  }
  const links: string[] = []
  if (query.offset + query.limit < total) links.push(link(query.offset + query.limit, 'next'))
  if (query.offset > 0) links.push(link(Math.max(0, Math.min(query.offset - query.limit, total - query.limit)), 'prev'))
  return links.length > 0 ? links.join(', ') : null
}

/**
 * The admin's discount codes, every route `discounts:write`.
 * Applying a code (the cart and checkout) is the service's `checkCode`, `redeem` and `release`.
 */
export async function discountsRoutes(fastify: FastifyInstance, options: { config: Config }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const { publicUrl } = options.config
  const tags = ['discounts']
  const security = [{ bearerAuth: [] }]
  // Codes are not part of any cache. Reading the codes and their redemptions is also `discounts:write`: the
  // permission covers the codes, and no other role has any use for them.
  const config = { permission: 'discounts:write' as const, invalidates: [] }
  const reading = { permission: 'discounts:write' as const }

  app.get('/discount-codes', {
    config: reading,
    schema: {
      tags,
      summary: 'Discount codes, newest first, by part of the code and active or not (admin; X-Total-Count and Link headers)',
      security,
      querystring: ListDiscountCodesQuery,
      response: { 200: paged(DiscountCodeList), ...errors },
    },
    handler: async (request, reply) => {
      const { codes, total } = await service.listDiscountCodes(app.db, request.query)
      const query = request.query
      const extra: Record<string, string> = {}
      if (query.q !== undefined) extra.q = query.q
      if (query.active !== undefined) extra.active = String(query.active)
      reply.header('X-Total-Count', total)
      const links = pageLinks(publicUrl, '/discount-codes', { limit: query.limit ?? 100, offset: query.offset ?? 0 }, extra, total)
      if (links) reply.header('Link', links)
      return codes
    },
  })

  app.post('/discount-codes', {
    config,
    schema: { tags, summary: 'Add a discount code (admin)', security, body: CreateDiscountCodeBody, response: { 201: DiscountCode, ...errors } },
    handler: async (request, reply) => reply.code(201).send(await service.createDiscountCode(app.db, request.body, auditSource(request))),
  })

  app.get('/discount-codes/:id', {
    config: reading,
    schema: { tags, summary: 'One discount code (admin)', security, params: IdParams, response: { 200: DiscountCode, ...errors } },
    handler: async (request) => service.getDiscountCode(app.db, request.params.id),
  })

  app.patch('/discount-codes/:id', {
    config,
    preValidation: refuseCode,
    schema: {
      tags,
      summary: 'Change a discount code: any field but `code` (admin)',
      security,
      params: IdParams,
      body: UpdateDiscountCodeBody,
      response: { 200: DiscountCode, ...errors },
    },
    handler: async (request) => service.updateDiscountCode(app.db, request.params.id, request.body, auditSource(request)),
  })

  app.delete('/discount-codes/:id', {
    config,
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'Delete a discount code never used (admin; a used one is deactivated instead)',
      security,
      params: IdParams,
      response: { 200: MessageResponse, ...errors },
    },
    handler: async (request) => {
      await service.deleteDiscountCode(app.db, request.params.id, auditSource(request))
      return { message: messages.discountCodeDeleted }
    },
  })

  app.get('/discount-codes/:id/redemptions', {
    config: reading,
    schema: {
      tags,
      summary: 'The orders that used a code, newest first (admin; X-Total-Count and Link headers)',
      security,
      params: IdParams,
      querystring: ListRedemptionsQuery,
      response: { 200: paged(DiscountRedemptionList), ...errors },
    },
    handler: async (request, reply) => {
      const { redemptions, total } = await service.listRedemptions(app.db, request.params.id, request.query)
      reply.header('X-Total-Count', total)
      const page = { limit: request.query.limit ?? 100, offset: request.query.offset ?? 0 }
      const links = pageLinks(publicUrl, `/discount-codes/${request.params.id}/redemptions`, page, {}, total)
      if (links) reply.header('Link', links)
      return redemptions
    },
  })
}
