// The Shop API's typed client: openapi-fetch over the paths of schema.d.ts (generated from the service's
// /openapi.json by `npm run openapi:types` in the service's repository). Types live in index.d.ts.
import createClient from 'openapi-fetch'

/**
 * A client for one service. `token` is the access token sent as `Authorization: Bearer`, or a function asked
 * before each request (so that a token obtained by logging in, or renewed, is used from then on).
 */
export function createShopClient({ token, ...options } = {}) {
  const client = createClient(options)
  if (token !== undefined) {
    client.use({
      onRequest({ request }) {
        const value = typeof token === 'function' ? token() : token
        if (value) request.headers.set('Authorization', `Bearer ${value}`)
        return request
      },
    })
  }
  return client
}
