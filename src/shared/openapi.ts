/**
 * What the OpenAPI document says of answers beyond their bodies: the headers a route sends. @fastify/swagger
 * takes a response schema's `headers` into the document's response; validation and serialization ignore them.
 */

/** The paged lists' headers (products, orders, a webhook's deliveries). */
const pageHeaders = {
  'X-Total-Count': { type: 'integer', minimum: 0, description: 'How many items match, before paging.' },
  Link: {
    type: 'string',
    description: 'RFC 8288 links to the first, previous, next and last pages (`rel="first"`, ...); absent when there is one page.',
  },
} as const

/** A paged list's answer: `schema` with the paging headers. */
export function paged<T extends object>(schema: T): T & { headers: typeof pageHeaders } {
  return { ...schema, headers: pageHeaders }
}

/** The IETF draft's rate-limit headers, on every answer of a rate-limited route (plugins/rate-limit.ts). */
const rateLimitHeaders = {
  'RateLimit-Limit': { type: 'integer', description: 'Attempts allowed in the window.' },
  'RateLimit-Remaining': { type: 'integer', description: 'Attempts left in the current window.' },
  'RateLimit-Reset': { type: 'integer', description: 'When the window ends, in seconds since the Unix epoch.' },
} as const

const retryAfter = { 'Retry-After': { type: 'integer', minimum: 1, description: 'Seconds to wait before trying again.' } } as const

type WithHeaders<R> = { [K in keyof R]: R[K] & { headers: object } }

/** A rate-limited route's answers: each with the rate-limit headers, and its 429 also with `Retry-After`. */
export function rateLimited<R extends Record<number, object>>(responses: R): WithHeaders<R> {
  return Object.fromEntries(
    Object.entries(responses).map(([status, schema]) => [
      status,
      { ...schema, headers: status === '429' ? { ...rateLimitHeaders, ...retryAfter } : rateLimitHeaders },
    ]),
  ) as WithHeaders<R>
}
