import { rateLimited } from '../../shared/openapi.js'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { messages } from '../../shared/errors.js'
import { rejectBody } from '../../shared/no-body.js'
import { ErrorResponse, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import { trimTextFields } from '../users/trim-text-fields.js'
import { UpdateAccountBody, User } from '../users/users.schemas.js'
import { updateOwnAccount } from '../users/users.service.js'
import { confirmPasswordReset, requestPasswordReset } from './password-reset.service.js'
import { LogoutBody, PasswordResetBody, PasswordResetConfirmBody, RefreshBody, TokenPair } from './sessions.schemas.js'
import { logout, logoutEverywhere, refreshSession } from './sessions.service.js'
import { successorKey } from './tokens.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** An absent body is an empty one (logout takes an optional refresh token). */
async function emptyBodyIsObject(request: FastifyRequest): Promise<void> {
  if (request.body === undefined || request.body === null) request.body = {}
}

/** Refresh, logout, the caller's own account, and password reset (docs/sessions.md). */
export async function sessionsRoutes(fastify: FastifyInstance, options: { config: Config }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const { refreshTokenTtlMs, refreshReuseGraceMs, resetTokenTtlMs, shopUrl } = options.config.sessions
  const refreshSettings = { ttlMs: refreshTokenTtlMs, graceMs: refreshReuseGraceMs, successorKey: successorKey(options.config.jwtSecret) }
  const tags = ['auth']
  const secured = [{ bearerAuth: [] }]

  app.post('/auth/refresh', {
    // Not under the login limit: it takes a refresh token, 256 random bits, nothing to guess.
    // A reused token ends its session, published by the service itself (the answer is a 401).
    config: { invalidates: [] },
    schema: { tags, summary: 'A new token pair for a refresh token, which is spent', body: RefreshBody, response: { 200: TokenPair, ...errors } },
    handler: async (request) => {
      const refreshed = await refreshSession(app.db, request.body.refreshToken, refreshSettings, () => app.changeFeed.publish('sessions'))
      // Signed as of the pair's issue: a duplicate of the refresh gets the very token the first one got.
      return { token: app.signToken(refreshed.user, refreshed.sessionId, refreshed.issuedAt), refreshToken: refreshed.refreshToken }
    },
  })

  app.post('/auth/logout', {
    onRequest: app.authenticate,
    // `users`: a token from before sessions ends every token of the user (sessions.service.ts logout).
    config: { invalidates: ['sessions', 'users'] },
    preValidation: emptyBodyIsObject,
    schema: { tags, summary: "End the caller's session", security: secured, body: LogoutBody, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await logout(app.db, request.user, request.body.refreshToken)
      return { message: messages.loggedOut }
    },
  })

  app.post('/auth/logout-all', {
    onRequest: app.authenticate,
    config: { invalidates: ['sessions', 'users'] },
    preValidation: rejectBody,
    schema: { tags, summary: 'End every session of the caller', security: secured, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => {
      await logoutEverywhere(app.db, request.user.id)
      return { message: messages.loggedOutEverywhere }
    },
  })

  app.patch('/auth/me', {
    onRequest: app.authenticate,
    config: { invalidates: ['users', 'sessions'] },
    preValidation: trimTextFields,
    schema: {
      tags,
      summary: "Change the caller's name, e-mail or password (currentPassword for the last two)",
      security: secured,
      body: UpdateAccountBody,
      response: { 200: User, ...errors },
    },
    handler: async (request) => updateOwnAccount(app.db, request.user, request.body),
  })

  app.post('/auth/password-reset', {
    onRequest: app.passwordResetRateLimit,
    config: { invalidates: [] },
    preValidation: trimTextFields,
    schema: {
      tags,
      summary: 'E-mail a password-reset link (the same 202 whether or not the e-mail is registered)',
      body: PasswordResetBody,
      response: rateLimited({ 202: MessageResponse, 422: ErrorResponse, 429: ErrorResponse }),
    },
    handler: async (request, reply) => {
      await requestPasswordReset(app.db, request.body.email, { ttlMs: resetTokenTtlMs, shopUrl })
      return reply.code(202).send({ message: messages.resetRequested })
    },
  })

  app.post('/auth/password-reset/confirm', {
    onRequest: app.passwordResetRateLimit,
    config: { invalidates: ['users', 'sessions'] },
    schema: {
      tags,
      summary: "Set a new password with a reset link's token; every session of the user ends",
      body: PasswordResetConfirmBody,
      response: rateLimited({ 200: MessageResponse, 400: ErrorResponse, 422: ErrorResponse, 429: ErrorResponse }),
    },
    handler: async (request) => {
      await confirmPasswordReset(app.db, request.body.token, request.body.password)
      return { message: messages.passwordUpdated }
    },
  })
}
