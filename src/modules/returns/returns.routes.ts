import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import type { AuthUser } from '../../plugins/auth.js'
import { messages } from '../../shared/errors.js'
import { rejectBody } from '../../shared/no-body.js'
import { paged, rateLimited } from '../../shared/openapi.js'
import { ErrorResponse, IdParams, type SchemaTypes } from '../../shared/validation.js'
import { OrderTokenHeaders, OrderTokenQuery } from '../orders/orders.schemas.js'
import { trimTextFields } from '../users/trim-text-fields.js'
import * as repo from './returns.repository.js'
import {
  CreateReturnBody,
  ListReturnsQuery,
  ListWithdrawalsQuery,
  ReceiveReturnBody,
  ReceiveReturnHeaders,
  RejectReturnBody,
  Return,
  ReturnList,
  Withdrawal,
  WithdrawalBody,
  WithdrawalList,
  WithdrawalPreview,
  WithdrawalReceipt,
} from './returns.schemas.js'
import { auditSource } from '../staff/audit-log.js'
import * as returns from './returns.service.js'
import * as withdrawals from './withdrawals.service.js'
import { assertPermissions } from '../staff/staff-access.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** Whether a signed-in user acts as staff on an order's returns (any order; approved at once; no window). */
function isStaff(user: AuthUser): boolean {
  return user.role === 'admin'
}

/** `<path>?<params>` with the list's parameters in one fixed order, and RFC 8288 `Link` with `next`/`prev`. */
function pageLinks(
  publicUrl: string,
  path: string,
  params: Record<string, string | number | boolean | undefined>,
  page: { limit: number; offset: number },
  total: number,
) {
  const url = (offset: number) => {
    const search = new URLSearchParams({ limit: String(page.limit), offset: String(offset) })
    for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value))
    return `${publicUrl}${path}?${search.toString()}`
  }
  const links: string[] = []
  if (page.offset + page.limit < total) links.push(`<${url(page.offset + page.limit)}>; rel="next"`)
  if (page.offset > 0) links.push(`<${url(Math.max(0, Math.min(page.offset - page.limit, total - page.limit)))}>; rel="prev"`)
  return links.length > 0 ? links.join(', ') : null
}

export async function returnsRoutes(fastify: FastifyInstance, options: { config: Config; returns: returns.ReturnsDeps }): Promise<void> {
  const { publicUrl } = options.config
  const deps = options.returns
  const app = fastify.withTypeProvider<SchemaTypes>()
  const security = [{ bearerAuth: [] }]
  const orderSecurity: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { orderToken: [] }]

  /** Who opens an order's returns: a guest by its link, staff any order, a customer only their own. */
  const orderCaller = async (request: FastifyRequest, orderId: number): Promise<returns.OrderCaller> => {
    if (request.orderToken) {
      const contact = await repo.findOrderContact(deps.db, orderId)
      return { actor: { type: 'guest', id: null, name: contact?.email ?? contact?.user_email ?? null, staff: false, audit: null } }
    }
    const user = request.user
    if (!isStaff(user))
      return { actor: { type: 'user', id: user.id, name: await repo.findUserName(deps.db, user.id), staff: false, audit: null }, ownerId: user.id }
    return { actor: await staffActor(request) }
  }
  // An API key is staff under its own name: its id is the key's, never a user's.
  const staffActor = async (request: FastifyRequest): Promise<returns.Actor> => {
    const key = request.user.apiKey
    return {
      type: key === undefined ? 'user' : 'api_key',
      id: key === undefined ? request.user.id : key.id,
      name: key === undefined ? await repo.findUserName(deps.db, request.user.id) : key.name,
      staff: true,
      audit: auditSource(request),
    }
  }

  app.post('/orders/:id/returns', {
    // Staff create approved returns.
    onRequest: app.orderOwnOrStaff('returns:write'),
    config: { invalidates: [] },
    schema: {
      tags: ['returns'],
      summary: 'Ask to return shipped units (a customer their own order, a guest with its order token: `requested`; staff any order: `approved` at once)',
      security: orderSecurity,
      params: IdParams,
      querystring: OrderTokenQuery,
      headers: OrderTokenHeaders,
      body: CreateReturnBody,
      response: { 201: Return, ...errors },
    },
    handler: async (request, reply) => {
      const answer = await returns.createReturn(deps, await orderCaller(request, request.params.id), request.params.id, request.body)
      return reply.code(201).send(answer)
    },
  })

  app.get('/orders/:id/returns', {
    onRequest: app.orderOwnOrStaff('orders:read'),
    schema: {
      tags: ['returns'],
      summary: 'An order’s returns, oldest first (its customer, a guest with its order token, or staff)',
      security: orderSecurity,
      params: IdParams,
      querystring: OrderTokenQuery,
      headers: OrderTokenHeaders,
      response: { 200: ReturnList, ...errors },
    },
    handler: async (request) => returns.listOrderReturns(deps, await orderCaller(request, request.params.id), request.params.id),
  })

  app.get('/returns', {
    config: { permission: 'orders:read' },
    schema: {
      tags: ['returns'],
      summary: 'Every return, newest first (staff)',
      security,
      querystring: ListReturnsQuery,
      response: { 200: paged(ReturnList), ...errors },
    },
    handler: async (request, reply) => {
      const { returns: page, total } = await returns.listReturns(deps, request.query)
      reply.header('X-Total-Count', total)
      const links = pageLinks(publicUrl, '/returns', { status: request.query.status, orderId: request.query.orderId }, request.query, total)
      if (links) reply.header('Link', links)
      return page
    },
  })

  app.get('/returns/:id', {
    config: { permission: 'orders:read' },
    schema: { tags: ['returns'], summary: 'One return (staff)', security, params: IdParams, response: { 200: Return, ...errors } },
    handler: async (request) => returns.getReturn(deps, request.params.id),
  })

  app.post('/returns/:id/approve', {
    config: { permission: 'returns:write', invalidates: [] },
    preValidation: rejectBody,
    schema: { tags: ['returns'], summary: 'Approve a requested return (staff)', security, params: IdParams, response: { 200: Return, ...errors } },
    handler: async (request) => returns.approveReturn(deps, await staffActor(request), request.params.id),
  })

  app.post('/returns/:id/reject', {
    config: { permission: 'returns:write', invalidates: [] },
    schema: {
      tags: ['returns'],
      summary: 'Reject a requested return, saying why (staff)',
      security,
      params: IdParams,
      body: RejectReturnBody,
      response: { 200: Return, ...errors },
    },
    handler: async (request) => returns.rejectReturn(deps, await staffActor(request), request.params.id, request.body.reason),
  })

  app.post('/returns/:id/receive', {
    // `returns:write`, and `refunds:write` too for a receipt that refunds (unless `refund: false`): the body tells,
    // so the permissions are checked here rather than declared, still before the body's validation, and the 403
    // names the first missing of the two in the table's order.
    onRequest: app.requireRole('admin'),
    // Received units go back to stock.
    config: { invalidates: ['catalog'] },
    preValidation: async (request: FastifyRequest) => {
      if (request.body === undefined || request.body === null) request.body = {}
      const refunds = (request.body as { refund?: unknown }).refund !== false
      assertPermissions(request.user.staffRole, refunds ? ['returns:write', 'refunds:write'] : ['returns:write'])
    },
    schema: {
      tags: ['returns'],
      summary:
        'Record an approved return as received: its units back in stock (`restock`, default true) and refunded (`refund`, default true, with an Idempotency-Key) (staff)',
      security,
      params: IdParams,
      headers: ReceiveReturnHeaders,
      body: ReceiveReturnBody,
      response: { 200: Return, ...errors, 502: ErrorResponse },
    },
    handler: async (request) => returns.receiveReturn(deps, await staffActor(request), request.params.id, request.body, request.headers['idempotency-key']),
  })

  // ---- withdrawals ----

  const withdrawalRoute = {
    onRequest: app.guestOrderRateLimit,
    config: { invalidates: [] as [] },
    preValidation: trimTextFields,
  }

  app.post('/withdrawals/preview', {
    ...withdrawalRoute,
    schema: {
      tags: ['withdrawals'],
      summary: 'What withdrawing from (part of) an order would declare, and until when it can be done; changes nothing (public)',
      body: WithdrawalBody,
      response: rateLimited({ 200: WithdrawalPreview, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse, 429: ErrorResponse }),
    },
    handler: async (request) => withdrawals.previewWithdrawal(deps, request.body),
  })

  app.post('/withdrawals/confirm', {
    ...withdrawalRoute,
    schema: {
      tags: ['withdrawals'],
      summary: 'Withdraw from (part of) an order: recorded as declared, with a receipt by e-mail; the same request within 24 h answers the first (public)',
      body: WithdrawalBody,
      response: rateLimited({ 202: WithdrawalReceipt, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse, 429: ErrorResponse }),
    },
    handler: async (request, reply) => {
      const userAgent = request.headers['user-agent']
      const { withdrawal } = await withdrawals.confirmWithdrawal(deps, request.body, {
        ip: request.ip ?? null,
        userAgent: typeof userAgent === 'string' ? userAgent : null,
      })
      return reply.code(202).send({ ...withdrawal, message: messages.withdrawalReceived })
    },
  })

  app.get('/withdrawals', {
    config: { permission: 'orders:read' },
    schema: {
      tags: ['withdrawals'],
      summary: 'Every withdrawal, newest first, with the client’s address and user agent (staff)',
      security,
      querystring: ListWithdrawalsQuery,
      response: { 200: paged(WithdrawalList), ...errors },
    },
    handler: async (request, reply) => {
      const { withdrawals: page, total } = await withdrawals.listWithdrawals(deps, request.query)
      reply.header('X-Total-Count', total)
      const links = pageLinks(publicUrl, '/withdrawals', { orderId: request.query.orderId, converted: request.query.converted }, request.query, total)
      if (links) reply.header('Link', links)
      return page
    },
  })

  app.get('/withdrawals/:id', {
    config: { permission: 'orders:read' },
    schema: { tags: ['withdrawals'], summary: 'One withdrawal (staff)', security, params: IdParams, response: { 200: Withdrawal, ...errors } },
    handler: async (request) => withdrawals.getWithdrawal(deps, request.params.id),
  })

  app.post('/withdrawals/:id/return', {
    config: { permission: 'returns:write', invalidates: [] },
    preValidation: rejectBody,
    schema: {
      tags: ['withdrawals'],
      summary: 'Make an approved return of a withdrawal’s shipped units (staff)',
      security,
      params: IdParams,
      response: { 201: Return, ...errors },
    },
    handler: async (request, reply) => reply.code(201).send(await returns.returnWithdrawal(deps, await staffActor(request), request.params.id)),
  })
}
