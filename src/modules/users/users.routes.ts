import { paged, rateLimited } from '../../shared/openapi.js'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { CartTokenHeader } from '../cart/cart.schemas.js'
import { mergeGuestCart } from '../cart/cart.service.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import type { Config } from '../../config.js'
import { sessionsRoutes } from '../sessions/sessions.routes.js'
import { startSession } from '../sessions/sessions.service.js'
import { assertPermissions } from '../staff/staff-access.js'
import { trimTextFields } from './trim-text-fields.js'
import { auditSource } from '../staff/audit-log.js'
import * as service from './users.service.js'
import { CreateUserBody, ListUsersQuery, LoginBody, LoginResponse, Me, RegisterBody, RegisterResponse, UpdateUserBody, User } from './users.schemas.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** RFC 8288 `Link` of GET /auth/users with `next`/`prev` when they exist, as on the other paged lists. */
function userPageLinks(publicUrl: string, query: { limit: number; offset: number; role?: string | undefined }, total: number): string | null {
  const role = query.role === undefined ? '' : `&role=${query.role}`
  const link = (offset: number, rel: string) => `<${publicUrl}/auth/users?limit=${query.limit}&offset=${offset}${role}>; rel="${rel}"`
  const links: string[] = []
  if (query.offset + query.limit < total) links.push(link(query.offset + query.limit, 'next'))
  if (query.offset > 0) links.push(link(Math.max(0, Math.min(query.offset - query.limit, total - query.limit)), 'prev'))
  return links.length > 0 ? links.join(', ') : null
}

export async function usersRoutes(fastify: FastifyInstance, options: { config: Config }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const { refreshTokenTtlMs } = options.config.sessions
  // Refresh, logout, the caller's own account and password reset: the rest of /auth.
  await app.register(sessionsRoutes, { config: options.config })
  const admin = app.requireRole('admin')
  /**
   * Acting on users, checked before the body's validation: what the body tells (an admin to make, a staff role to
   * set: `staff:manage`), else at least one of `customers:write` and `staff:manage`. The service checks the rest
   * once it has read the user (a customer's change or deletion is `customers:write`, an admin's `staff:manage`).
   */
  const actsOnUsers = async (request: FastifyRequest): Promise<void> => {
    const body = request.body as { role?: unknown; staffRole?: unknown } | null | undefined
    if (body?.role === 'admin' || body?.staffRole !== undefined) assertPermissions(request.user.staffRole, ['staff:manage'])
    else service.assertActsOnUsers(request.user)
  }
  const tags = ['auth']
  const secured = [{ bearerAuth: [] }]

  /** Register and login sent with `X-Cart-Token`: the guest cart moves into the user's (a stale token is ignored). */
  const mergeCartOf = async (request: FastifyRequest, userId: number): Promise<void> => {
    const token = request.headers[CartTokenHeader]
    if (typeof token === 'string') await mergeGuestCart(app.db, token, userId)
  }

  app.post('/auth/register', {
    onRequest: app.authRateLimit,
    config: { invalidates: [] },
    preValidation: trimTextFields,
    schema: { tags, summary: 'Register a customer', body: RegisterBody, response: rateLimited({ 201: RegisterResponse, ...errors, 429: ErrorResponse }) },
    handler: async (request, reply) => {
      const user = await service.registerCustomer(app.db, request.body)
      await mergeCartOf(request, user.id)
      // The documented register and login answers carry the id as a string.
      return reply.code(201).send({ message: 'Usuario registrado correctamente', user: { ...user, id: String(user.id) } })
    },
  })

  app.post('/auth/login', {
    onRequest: app.authRateLimit,
    config: { invalidates: [] },
    preValidation: trimTextFields,
    schema: {
      tags,
      summary: 'Exchange credentials for a token',
      body: LoginBody,
      response: rateLimited({ 200: LoginResponse, ...errors, 429: ErrorResponse }),
    },
    handler: async (request) => {
      const { user, credentialsChangedAt } = await service.authenticateCredentials(app.db, request.body.email, request.body.password)
      const session = await startSession(app.db, user.id, credentialsChangedAt, refreshTokenTtlMs)
      await mergeCartOf(request, user.id)
      return { token: app.signToken(user, session.sessionId), refreshToken: session.refreshToken, user: { ...user, id: String(user.id) } }
    },
  })

  // One route under two paths.
  for (const url of ['/auth/users', '/auth/create-user']) {
    app.post(url, {
      onRequest: admin,
      // A new user has no cached credentials yet.
      config: { invalidates: [] },
      // A customer is `customers:write`, an admin (or a body naming a staff role) `staff:manage`: the body tells which.
      preValidation: [
        async (request: FastifyRequest) => {
          const body = request.body as { role?: unknown; staffRole?: unknown } | null | undefined
          assertPermissions(request.user.staffRole, [service.userPermission(body?.role === 'admin' || body?.staffRole !== undefined)])
        },
        trimTextFields,
      ],
      schema: { tags, summary: 'Create a user with a role (admin)', security: secured, body: CreateUserBody, response: { 201: User, ...errors } },
      handler: async (request, reply) => reply.code(201).send(await service.createUser(app.db, request.body, auditSource(request))),
    })
  }

  app.get('/auth/me', {
    onRequest: app.authenticate,
    schema: { tags, summary: 'The caller, with their staff permissions (none for a customer)', security: secured, response: { 200: Me, ...errors } },
    handler: async (request) => service.getMe(app.db, request.user.id),
  })

  // Every user, customers and admins (with their staff role): `customers:read`.
  app.get('/auth/users', {
    config: { permission: 'customers:read' },
    schema: {
      tags,
      summary: 'List users by id, all or of one `role` (admin; X-Total-Count and Link headers)',
      security: secured,
      querystring: ListUsersQuery,
      response: { 200: paged({ type: 'array', items: User } as const), ...errors },
    },
    handler: async (request, reply) => {
      const { users, total } = await service.listUsers(app.db, request.query)
      reply.header('X-Total-Count', total)
      const links = userPageLinks(options.config.publicUrl, request.query, total)
      if (links) reply.header('Link', links)
      return users
    },
  })

  app.get('/auth/users/:id', {
    config: { permission: 'customers:read' },
    schema: { tags, summary: 'Get a user (admin)', security: secured, params: IdParams, response: { 200: User, ...errors } },
    handler: async (request) => service.getUser(app.db, request.params.id),
  })

  app.patch('/auth/users/:id', {
    onRequest: admin,
    // The cached credentials state of the user (plugins/auth.ts).
    config: { invalidates: ['users'] },
    preValidation: [actsOnUsers, trimTextFields],
    schema: { tags, summary: 'Change a user (admin)', security: secured, params: IdParams, body: UpdateUserBody, response: { 200: User, ...errors } },
    handler: async (request) => service.updateUser(app.db, request.user, request.params.id, request.body, auditSource(request)),
  })

  app.delete('/auth/users/:id', {
    onRequest: admin,
    config: { invalidates: ['users'] },
    preValidation: actsOnUsers,
    schema: { tags, summary: 'Delete a user (admin)', security: secured, params: IdParams, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await service.deleteUser(app.db, request.user, request.params.id, auditSource(request))
      return { message: 'Usuario eliminado correctamente' }
    },
  })
}
