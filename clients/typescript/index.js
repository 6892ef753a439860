// The Shop API's typed client: openapi-fetch over the paths of schema.d.ts (generated from the service's
// /openapi.json by `npm run openapi:types` in the service's repository). Types live in index.d.ts.
import createClient from 'openapi-fetch'

/** What every request accepts: JSON, and errors as problem details (RFC 9457), which carry a `code`. */
const ACCEPT = 'application/json, application/problem+json'

/**
 * A client for one service. `token` is the access token sent as `Authorization: Bearer`, or a function asked
 * before each request (so that a token obtained by logging in, or renewed, is used from then on). Requests ask for
 * problem details (`Accept`), unless they set an Accept header of their own.
 */
export function createShopClient({ token, ...options } = {}) {
  const client = createClient(options)
  client.use({
    onRequest({ request }) {
      if (!request.headers.has('Accept')) request.headers.set('Accept', ACCEPT)
      if (token !== undefined) {
        const value = typeof token === 'function' ? token() : token
        if (value) request.headers.set('Authorization', `Bearer ${value}`)
      }
      return request
    },
  })
  return client
}

/** Whether an answer's `error` is problem details (`{type, title, status, detail, code, field?}`). */
export function isProblem(error) {
  return typeof error === 'object' && error !== null && typeof error.code === 'string' && typeof error.detail === 'string'
}
