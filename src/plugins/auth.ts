import { createSigner, createVerifier } from 'fast-jwt'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { createOrderTokens, type OrderTokens } from '../modules/orders/order-token.js'
import { findSessionState } from '../modules/sessions/sessions.repository.js'
import { findUserAuthState } from '../modules/users/users.repository.js'
import { createApiKeyAuthenticator, isApiKeySecret } from '../modules/staff/api-key-auth.js'
import { firstMissing, type Permission, type StaffRole } from '../modules/staff/permissions.js'
import { AppError } from '../shared/errors.js'

export type Role = 'customer' | 'admin'

/** What a token carries: the user id as subject, the role, and the issue time in milliseconds. */
export interface TokenPayload {
  sub: string
  role?: Role
  /** Milliseconds: `iat` has only seconds, too coarse to compare with a password or role change. */
  iat_ms: number
  /** The session the token belongs to (src/modules/sessions); absent on tokens issued before sessions existed. */
  sid?: number
}

/** The caller, as established by the token or the API key. */
export interface AuthUser {
  /** The user's id; for an API key, the key's id. */
  id: number
  role: Role | undefined
  /** The token's session; undefined for a token from before sessions existed, and for an API key. */
  sessionId: number | undefined
  /** The admin's staff role, read from the user's record (or the key's) per request; null for customers. */
  staffRole: StaffRole | null
  /** Set when the caller is an API key (then `role` is `admin` and `id` is the key's id). */
  apiKey?: { id: number; name: string }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The staff permission (or permissions) the route needs, declared where the route is. The auth plugin puts the
     * `admin` role's and the permission's checks before the route's own onRequest hooks.
     */
    permission?: Permission | readonly Permission[]
  }
  interface FastifyRequest {
    /** Set by `authenticate` and `requireRole`; routes without them never read it. */
    user: AuthUser
    /**
     * Set by `orderAccess` when the request opened its order with an order token (a guest's link) instead of a
     * bearer: the order the token opens, which is the route's `:id`. Undefined otherwise (then `user` is set).
     */
    orderToken: { orderId: number } | undefined
  }
  interface FastifyInstance {
    /**
     * onRequest hooks of the routes for any signed-in user: 401 unless the request carries a valid
     * token of an existing user, then 403 unless the token carries one of the service's roles.
     */
    authenticate: onRequestHookHandler[]
    /**
     * onRequest hooks: authenticate, then 403 unless the token's role is one of `roles`. An API key passes only
     * where `roles` is `admin` alone: routes open to customers act on the caller's own data, and refuse keys (403).
     */
    requireRole: (...roles: Role[]) => onRequestHookHandler[]
    /**
     * onRequest hooks of a staff route: the `admin` role, then every permission of `permissions` (403 naming the
     * first missing, in the table's order). Routes declare theirs as `config: { permission }`, and the auth plugin
     * adds these hooks (onRoute): that is the one place permissions are enforced.
     */
    requirePermission: (...permissions: Permission[]) => onRequestHookHandler[]
    /**
     * onRequest hooks of a route customers use on their own data and staff on everyone's (the orders list): signed in,
     * and an admin or API key acting as staff needs `needed` (403 naming the first missing).
     */
    ownOrStaff: (...needed: Permission[]) => onRequestHookHandler[]
    /** `orderAccess` for a route of one order that staff use too: `ownOrStaff`'s rule, or the order's link. */
    orderOwnOrStaff: (...needed: Permission[]) => onRequestHookHandler[]
    /**
     * The signed-in user of a public route that shows more to some (a draft product to an admin): the user when
     * the request carries a token that holds, undefined otherwise (no token, or one that does not hold: the
     * request is then answered as anyone's).
     */
    viewer: (request: FastifyRequest) => Promise<AuthUser | undefined>
    /**
     * The signed-in user (customer or admin) of an `Authorization` header, answered from memory only: the user's
     * id when the token verifies and the auth caches already say it holds, undefined in every other case (then
     * `authenticate` decides, with its queries and its 401s). For answers given before Fastify (the cart view).
     */
    bearerUser: (header: string) => number | undefined
    /**
     * An access token for the user, in the session `sessionId` (every token the service hands out has one),
     * issued at `issuedAt` (ms; now by default). The same arguments sign the same token.
     */
    signToken: (user: { id: number; role: Role }, sessionId?: number, issuedAt?: number) => string
    /** Order tokens (src/modules/orders/order-token.ts): sign one for a guest's order, or check one. */
    orderTokens: OrderTokens
    /**
     * onRequest hooks of the routes of one order (`:id`) that a guest's link opens: with an order token (`?token=`
     * or `X-Order-Token`), the token alone decides (401 `invalidOrderLink` unless it is a valid, unexpired token
     * of this order) and sets `request.orderToken`; without one, `authenticate`.
     */
    orderAccess: onRequestHookHandler[]
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i
const BEARER_WITH_SOMETHING = /^Bearer\s+\S/i

/** A user's token state seen this long ago is read again: the bound for changes made outside the service. */
const STATE_LIFETIME_MS = 10_000
const MAX_STATES = 100_000
/** Verified tokens kept by fast-jwt (each is checked again against its `exp` on every use). */
const VERIFIED_TOKENS = 10_000

/** A user's auth state: when their credentials last changed (ms), and their staff role. */
interface CredentialsState {
  changedAt: number
  staffRole: StaffRole | null
}

/**
 * When each user's credentials last changed (role, password), by user id: the revocation check of
 * every authenticated request, without a query each time. Emptied by every user change made through
 * the service, here and (through the change feed) on the other instances; a lookup started before an
 * emptying is not stored (generation number), so a stale state is never put back.
 */
class CredentialsChangedCache {
  private entries = new Map<number, { state: CredentialsState; storedAt: number }>()
  generation = 0

  get(id: number, now: number): CredentialsState | undefined {
    const entry = this.entries.get(id)
    if (entry === undefined) return undefined
    if (now - entry.storedAt > STATE_LIFETIME_MS) {
      this.entries.delete(id)
      return undefined
    }
    return entry.state
  }

  set(id: number, state: CredentialsState, now: number): void {
    this.entries.delete(id)
    // Oldest first (a Map iterates in insertion order).
    if (this.entries.size >= MAX_STATES) this.entries.delete(this.entries.keys().next().value as number)
    this.entries.set(id, { state, storedAt: now })
  }

  clear(): void {
    this.generation += 1
    this.entries.clear()
  }
}

/** What the auth check keeps of a session: whose it is, the credentials it lives under (ms), whether it ended. */
interface SessionState {
  userId: number
  credentialsAt: number
  ended: boolean
}

/**
 * Each session's state, by session id, kept as the credentials are: read again after STATE_LIFETIME_MS,
 * emptied by every session or user change made through the service (here and, through the change feed,
 * on the other instances), a lookup started before an emptying never stored. An unknown session (its user
 * was deleted) is kept as ended: session ids are never reused.
 */
class SessionStateCache {
  private entries = new Map<number, { state: SessionState; storedAt: number }>()
  generation = 0

  get(id: number, now: number): SessionState | undefined {
    const entry = this.entries.get(id)
    if (entry === undefined) return undefined
    if (now - entry.storedAt > STATE_LIFETIME_MS) {
      this.entries.delete(id)
      return undefined
    }
    return entry.state
  }

  set(id: number, state: SessionState, now: number): void {
    this.entries.delete(id)
    if (this.entries.size >= MAX_STATES) this.entries.delete(this.entries.keys().next().value as number)
    this.entries.set(id, { state, storedAt: now })
  }

  clear(): void {
    this.generation += 1
    this.entries.clear()
  }
}

async function authPlugin(app: FastifyInstance, options: { config: Config; cacheCredentials?: boolean }): Promise<void> {
  const { jwtSecret, jwtExpiresIn } = options.config
  const sign = createSigner({ key: jwtSecret, algorithm: 'HS256', expiresIn: jwtExpiresIn })
  const verify = createVerifier({ key: jwtSecret, algorithms: ['HS256'], cache: VERIFIED_TOKENS })

  // `iat` given rather than read from the clock by the signer: `exp` follows from it, so the token is a function of its arguments.
  app.decorate('signToken', (user: { id: number; role: Role }, sessionId?: number, issuedAt = Date.now()) =>
    sign({ sub: String(user.id), role: user.role, iat_ms: issuedAt, ...(sessionId === undefined ? {} : { sid: sessionId }), iat: Math.floor(issuedAt / 1000) }),
  )

  const states = new CredentialsChangedCache()
  const feed = app.changeFeed
  const cacheCredentials = options.cacheCredentials ?? true
  // Any change to a user through the service (role, password, deletion) empties the cache everywhere: those
  // routes declare `invalidates: ['users']` (plugins/invalidation.ts).
  feed.subscribe('users', () => states.clear())
  // Sessions end through logout, logout-all, a password change or reset, a reused refresh token (topic
  // `sessions`); a password change also carries the caller's session over, with a `users` change.
  const sessions = new SessionStateCache()
  feed.subscribe('sessions', () => sessions.clear())
  feed.subscribe('users', () => sessions.clear())
  // Keys' states, cached alike and emptied by every rotation and revocation (topic `apiKeys`).
  const apiKeys = createApiKeyAuthenticator(app.db, feed, { cache: cacheCredentials })

  /** When the user's credentials last changed (ms) and their staff role, or undefined for a user that no longer exists. */
  const credentialsState = async (id: number): Promise<CredentialsState | undefined> => {
    const usable = cacheCredentials && feed.live
    const now = Date.now()
    if (usable) {
      const cached = states.get(id, now)
      if (cached !== undefined) return cached
    }
    const generation = states.generation
    const state = await findUserAuthState(app.db, id)
    if (!state) return undefined
    const credentials = { changedAt: Date.parse(state.credentials_changed_at), staffRole: state.staff_role }
    if (usable && generation === states.generation) states.set(id, credentials, now)
    return credentials
  }

  const sessionState = async (id: number): Promise<SessionState> => {
    const usable = cacheCredentials && feed.live
    const now = Date.now()
    if (usable) {
      const cached = sessions.get(id, now)
      if (cached !== undefined) return cached
    }
    const generation = sessions.generation
    const row = await findSessionState(app.db, id)
    const state = row
      ? { userId: row.user_id, credentialsAt: Date.parse(row.credentials_at), ended: row.ended_at !== null }
      : { userId: 0, credentialsAt: 0, ended: true }
    if (usable && generation === sessions.generation) sessions.set(id, state, now)
    return state
  }

  /**
   * The user's current credentials when the token still holds: its user exists, and its session lives (not ended,
   * under the user's current credentials). A token without a session (from before sessions) holds unless it was
   * issued before the user's last credentials change. Undefined when it does not hold.
   */
  const tokenHolds = async (id: number, payload: TokenPayload): Promise<CredentialsState | undefined> => {
    const sid = payload.sid
    if (sid === undefined) {
      const credentials = await credentialsState(id)
      return credentials !== undefined && payload.iat_ms >= credentials.changedAt ? credentials : undefined
    }
    // The steady state: both in memory, no promise made.
    const now = Date.now()
    const cached = cacheCredentials && feed.live
    let session = cached ? sessions.get(sid, now) : undefined
    let credentials = cached ? states.get(id, now) : undefined
    if (session === undefined || credentials === undefined) {
      ;[session, credentials] = await Promise.all([session ?? sessionState(sid), credentials ?? credentialsState(id)])
    }
    const holds = credentials !== undefined && !session.ended && session.userId === id && session.credentialsAt >= credentials.changedAt
    return holds ? credentials : undefined
  }

  const authenticate = async (request: FastifyRequest, _reply?: FastifyReply): Promise<void> => {
    const header = request.headers.authorization
    if (!header) throw new AppError(401, 'noUser')
    const match = BEARER.exec(header)
    // "Bearer" with something that is not one token ("Bearer a b") is a malformed token; another scheme
    // (or "Bearer" alone) brings no bearer token at all.
    if (!match?.[1]) throw new AppError(401, BEARER_WITH_SOMETHING.test(header) ? 'invalidToken' : 'noUser')
    // An integration's key, not a person's token.
    if (isApiKeySecret(match[1])) {
      request.user = await apiKeys.authenticate(match[1])
      return
    }
    let payload: TokenPayload
    try {
      payload = verify(match[1]) as TokenPayload
    } catch {
      throw new AppError(401, 'invalidToken')
    }
    const id = Number(payload.sub)
    const sid = payload.sid
    if (!Number.isSafeInteger(id) || id < 1 || typeof payload.iat_ms !== 'number' || (sid !== undefined && (!Number.isSafeInteger(sid) || sid < 1))) {
      throw new AppError(401, 'invalidToken')
    }
    // A deleted user, an ended session, or a token older than the user's last role or password change.
    const credentials = await tokenHolds(id, payload)
    if (credentials === undefined) throw new AppError(401, 'invalidToken')
    request.user = { id, role: payload.role, sessionId: sid, staffRole: payload.role === 'admin' ? credentials.staffRole : null }
  }

  // The front door's tokens already verified, by the whole header: a Map lookup instead of the verifier's own cache
  // (which hashes the token each time). Only what the signature vouches for is kept, with the token's expiry.
  const vouched = new Map<string, { id: number; sid: number; expiresAt: number }>()
  app.decorate('bearerUser', (header: string): number | undefined => {
    if (!cacheCredentials || !feed.live) return undefined
    const now = Date.now()
    let token = vouched.get(header)
    if (token === undefined) {
      const raw = BEARER.exec(header)?.[1]
      if (raw === undefined) return undefined
      let payload: TokenPayload & { exp?: number }
      try {
        payload = verify(raw) as TokenPayload & { exp?: number }
      } catch {
        return undefined
      }
      const id = Number(payload.sub)
      const sid = payload.sid
      if (!Number.isSafeInteger(id) || id < 1 || typeof payload.iat_ms !== 'number' || sid === undefined || !Number.isSafeInteger(sid) || sid < 1)
        return undefined
      if (payload.role !== 'customer' && payload.role !== 'admin') return undefined
      token = { id, sid, expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : Number.POSITIVE_INFINITY }
      if (vouched.size >= VERIFIED_TOKENS) vouched.delete(vouched.keys().next().value as string)
      vouched.set(header, token)
    }
    if (token.expiresAt <= now) {
      vouched.delete(header)
      return undefined
    }
    const session = sessions.get(token.sid, now)
    const credentials = states.get(token.id, now)
    if (session === undefined || credentials === undefined) return undefined
    return !session.ended && session.userId === token.id && session.credentialsAt >= credentials.changedAt ? token.id : undefined
  })

  app.decorateRequest('user', undefined as unknown as AuthUser)
  const roleHooks = (roles: Role[], keysAllowed: boolean): onRequestHookHandler[] => {
    const checkRole = async (request: FastifyRequest): Promise<void> => {
      const role = request.user?.role
      if (!role) throw new AppError(403, 'noRole')
      if (request.user.apiKey !== undefined && !keysAllowed) throw new AppError(403, 'apiKeyRoute')
      if (!roles.includes(role)) throw new AppError(403, 'requiresRoles', roles)
    }
    return [authenticate, checkRole]
  }
  // Keys act for the shop, never as a customer: a route open to customers is on the caller's own data, unless it is
  // also staff's (ownOrStaff).
  const requireRole = (...roles: Role[]): onRequestHookHandler[] => roleHooks(roles, roles.length > 0 && roles.every((role) => role === 'admin'))
  /** An admin (or key) acting as staff on a route customers use too needs `needed`; a customer or an order link nothing more. */
  const asStaff = (needed: readonly Permission[]): onRequestHookHandler =>
    async function checkAsStaff(request: FastifyRequest): Promise<void> {
      if (request.orderToken !== undefined || request.user?.role !== 'admin') return
      const missing = firstMissing(request.user.staffRole, needed)
      if (missing !== undefined) throw new AppError(403, 'requiresPermission', missing)
    }
  const requirePermission = (...permissions: Permission[]): onRequestHookHandler[] => {
    const checkPermission = async (request: FastifyRequest): Promise<void> => {
      const missing = firstMissing(request.user.staffRole, permissions)
      if (missing !== undefined) throw new AppError(403, 'requiresPermission', missing)
    }
    return [...requireRole('admin'), checkPermission]
  }
  app.decorate('requirePermission', requirePermission)
  // The one place: a route that declares `config: { permission }` gets the role and permission checks first.
  app.addHook('onRoute', (route) => {
    const declared = route.config?.permission
    if (declared === undefined) return
    const needed: readonly Permission[] = typeof declared === 'string' ? [declared] : declared
    const hooks = requirePermission(...needed)
    const own = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]
    route.onRequest = [...hooks, ...own]
  })
  const signedIn = requireRole('customer', 'admin')
  app.decorate('authenticate', signedIn)
  const signedInOrKey = roleHooks(['customer', 'admin'], true)
  app.decorate('ownOrStaff', (...needed: Permission[]) => [...signedInOrKey, asStaff(needed)])

  const orderTokens = createOrderTokens(jwtSecret, options.config.guests.orderLinkTtlMs)
  app.decorate('orderTokens', orderTokens)
  app.decorateRequest('orderToken', undefined)
  // The token decides when there is one, whatever bearer comes with it: a signed-in customer opening a guest's
  // link (their browser sends their bearer) sees that order, which their account does not own.
  const checkOrderToken =
    (bearer: onRequestHookHandler[]) =>
    async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const header = request.headers['x-order-token']
      const query = (request.query as Record<string, unknown> | undefined)?.token
      // `?token=a&token=b` is no token of any order.
      if (header === undefined && query !== undefined && typeof query !== 'string') throw new AppError(401, 'invalidOrderLink')
      const token = typeof header === 'string' ? header : typeof query === 'string' ? query : undefined
      if (token === undefined) {
        for (const hook of bearer) await (hook as (request: FastifyRequest, reply: FastifyReply) => Promise<void>).call(app, request, reply)
        return
      }
      const orderId = orderTokens.orderOf(token)
      const id = (request.params as { id?: unknown } | undefined)?.id
      if (orderId === undefined || String(orderId) !== id) throw new AppError(401, 'invalidOrderLink')
      request.orderToken = { orderId }
    }
  app.decorate('orderAccess', [checkOrderToken(signedIn)])
  app.decorate('orderOwnOrStaff', (...needed: Permission[]) => [checkOrderToken(signedInOrKey), asStaff(needed)])
  app.decorate('requireRole', requireRole)
  app.decorate('viewer', async (request: FastifyRequest): Promise<AuthUser | undefined> => {
    if (request.headers.authorization === undefined) return undefined
    try {
      await authenticate(request)
      return request.user
    } catch (error) {
      if (error instanceof AppError) return undefined
      throw error
    }
  })
}

export default fp(authPlugin, { name: 'auth', dependencies: ['database', 'change-feed'] })
