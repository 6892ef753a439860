import type { Middleware } from 'openapi-fetch'
import { HttpError } from 'react-admin'
import { createShopClient } from '../../../clients/typescript/index.js'
import type { Api } from './resource'

/** What the dashboard keeps of a signed-in admin, in localStorage. */
export interface Session {
  token: string
  /** Given by services with sessions (POST /auth/refresh): a 401 first tries to renew the token with it. */
  refreshToken?: string
  user: { id: string; name: string; email: string; role: string }
  /**
   * The staff role's permissions (GET /auth/me), read once at sign-in: a staff role change ends the admin's
   * sessions, so they come back through sign-in with the new ones.
   */
  permissions?: string[]
}

const SESSION_KEY = 'shop-admin.session'

/** The typed client's Accept, for the calls made with fetch itself (renewing and ending the session). */
export const ACCEPT = 'application/json, application/problem+json'

export function readSession(): Session | null {
  try {
    const raw = localStorage.getItem(SESSION_KEY)
    return raw ? (JSON.parse(raw) as Session) : null
  } catch {
    return null
  }
}

export function writeSession(session: Session | null): void {
  if (session) localStorage.setItem(SESSION_KEY, JSON.stringify(session))
  else localStorage.removeItem(SESSION_KEY)
}

export const UNREACHABLE = 'The shop API cannot be reached. Check that the service is running, then try again.'
export const NOT_SIGNED_IN = 'Sign in to use the dashboard.'

/** The one call the dashboard makes without a token: the sign-in itself. */
const SIGN_IN_PATH = '/auth/login'

const bearer: Middleware = {
  onRequest({ request }) {
    const session = readSession()
    if (session && !request.headers.has('Authorization')) request.headers.set('Authorization', `Bearer ${session.token}`)
    return request
  },
}

/** How long the dashboard waits for any answer of the API before saying it cannot be reached. */
const API_TIMEOUT_MS = 30_000

let refreshing: Promise<boolean> | null = null

/**
 * Renews the access token with the refresh token, once for every call that got a 401 at the same time.
 * False when there is nothing to renew with, or the service says no (the session ended): then the 401 stands.
 */
function refreshSession(): Promise<boolean> {
  const session = readSession()
  if (!session?.refreshToken) return Promise.resolve(false)
  refreshing ??= (async () => {
    try {
      const response = await fetch(`${window.location.origin}/auth/refresh`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: ACCEPT },
        body: JSON.stringify({ refreshToken: session.refreshToken }),
        signal: AbortSignal.timeout(API_TIMEOUT_MS),
      })
      if (!response.ok) return false
      const pair = (await response.json()) as { token?: unknown; refreshToken?: unknown }
      if (typeof pair.token !== 'string') return false
      writeSession({ ...session, token: pair.token, refreshToken: typeof pair.refreshToken === 'string' ? pair.refreshToken : undefined })
      return true
    } catch {
      return false
    } finally {
      refreshing = null
    }
  })()
  return refreshing
}

/**
 * The client's fetch: a bounded wait, "no answer at all" as one clear message, and a 401 retried once with a renewed
 * token when the session can be renewed (sign-in itself excepted).
 *
 * No call but the sign-in leaves without the admin's token. react-admin renders a page (and its lists ask for their
 * rows) while it is still finding out that nobody is signed in; such a call fails here, as the API would answer it
 * (401, so react-admin goes on to the sign-in page), without reaching the service, whose log would show a 401 for it.
 */
async function reachingFetch(input: Request): Promise<Response> {
  if (!input.headers.has('Authorization') && new URL(input.url).pathname !== SIGN_IN_PATH) {
    throw new HttpError(NOT_SIGNED_IN, 401, { error: NOT_SIGNED_IN })
  }
  const again = input.clone()
  const send = async (request: Request) => {
    try {
      return await fetch(request, { signal: AbortSignal.timeout(API_TIMEOUT_MS) })
    } catch {
      throw new HttpError(UNREACHABLE, 0, { error: UNREACHABLE })
    }
  }
  const response = await send(input)
  // The sign-in, renewal and sign-out calls answer for the session itself; the caller's own record (/auth/me: the
  // permissions read after a sign-in) is an ordinary call.
  const path = new URL(input.url).pathname
  if (response.status !== 401 || (path.startsWith('/auth/') && path !== '/auth/me') || !(await refreshSession())) return response
  again.headers.set('Authorization', `Bearer ${readSession()?.token ?? ''}`)
  return send(again)
}

/**
 * The service's API through its typed client (clients/typescript), typed from its own OpenAPI document (schema.d.ts).
 * Same origin: the service serves the dashboard. Like every request of that client, the dashboard's ask for errors as
 * problem details (`Accept: application/json, application/problem+json`): answers.ts reads their `code` and `field`.
 */
export const api: Api = createShopClient({ baseUrl: window.location.origin, fetch: reachingFetch })
api.use(bearer)
