import fastifyJwt from '@fastify/jwt'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { findUserAuthState } from '../modules/users/users.repository.js'
import { AppError, messages } from '../shared/errors.js'

export type Role = 'customer' | 'admin'

/** What a token carries: the user id as subject, the role, and the issue time in milliseconds. */
export interface TokenPayload {
  sub: string
  role?: Role
  /** Milliseconds: `iat` has only seconds, too coarse to compare with a password or role change. */
  iat_ms: number
}

/** The caller, as established by the token. */
export interface AuthUser {
  id: number
  role: Role | undefined
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenPayload
    user: AuthUser
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook: 401 unless the request carries a valid token of an existing user. */
    authenticate: onRequestHookHandler
    /** onRequest hooks: authenticate, then 403 unless the token's role is one of `roles`. */
    requireRole: (...roles: Role[]) => onRequestHookHandler[]
    signToken: (user: { id: number; role: Role }) => string
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

async function authPlugin(app: FastifyInstance, options: { config: Config }): Promise<void> {
  await app.register(fastifyJwt, {
    secret: options.config.jwtSecret,
    sign: { algorithm: 'HS256', expiresIn: options.config.jwtExpiresIn },
    verify: { algorithms: ['HS256'] },
  })

  app.decorate('signToken', (user: { id: number; role: Role }) =>
    app.jwt.sign({ sub: String(user.id), role: user.role, iat_ms: Date.now() }),
  )

  const authenticate = async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const header = request.headers.authorization
    if (!header) throw new AppError(401, messages.noUser)
    const match = BEARER.exec(header)
    if (!match?.[1]) throw new AppError(401, messages.noUser)
    let payload: TokenPayload
    try {
      payload = app.jwt.verify<TokenPayload>(match[1])
    } catch {
      throw new AppError(401, messages.invalidToken)
    }
    const id = Number(payload.sub)
    if (!Number.isSafeInteger(id) || id < 1 || typeof payload.iat_ms !== 'number') {
      throw new AppError(401, messages.invalidToken)
    }
    const state = await findUserAuthState(app.db, id)
    // A deleted user, or a token older than the user's last role or password change.
    if (!state || payload.iat_ms < Date.parse(state.credentials_changed_at)) {
      throw new AppError(401, messages.invalidToken)
    }
    request.user = { id, role: payload.role }
  }

  app.decorate('authenticate', authenticate)
  app.decorate('requireRole', (...roles: Role[]) => {
    const checkRole = async (request: FastifyRequest): Promise<void> => {
      const role = request.user?.role
      if (!role) throw new AppError(403, messages.noRole)
      if (!roles.includes(role)) throw new AppError(403, messages.requiresRoles(roles))
    }
    return [authenticate, checkRole]
  })
}

export default fp(authPlugin, { name: 'auth', dependencies: ['database'] })
