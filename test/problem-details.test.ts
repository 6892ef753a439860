import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { wantsProblem } from '../src/plugins/errors.js'
import { type ErrorCode, errorCodes, messages } from '../src/shared/errors.js'
import { createTestApp, useTestApp, buildTestApp } from './helpers/app.js'
import { makeProduct } from './helpers/catalog.js'
import { bearer } from './helpers/factories.js'

// Every kind of error, asked for both ways: without `Accept: application/problem+json` the body is exactly
// {"error": "..."} as the original specification has it; with it, RFC 9457 problem details carrying the same
// message as `detail`, a stable `code` and, for validation errors, the `field`.

const PROBLEM = { accept: 'application/problem+json' }

const t = useTestApp()

/** The plain answer: `status`, exactly `{"error": message}` (byte for byte), as JSON. */
function expectPlain(res: LightMyRequestResponse, status: number, message: string): void {
  expect(res.statusCode).toBe(status)
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
  expect(res.body).toBe(JSON.stringify({ error: message }))
  expect(res.headers.vary).toContain('Accept')
}

/** The problem details of the same error: type, title, status, detail, code (and field), as problem+json. */
function expectProblem(res: LightMyRequestResponse, status: number, code: ErrorCode, message: string, field?: string): void {
  expect(res.statusCode).toBe(status)
  expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8')
  expect(res.json()).toEqual({
    type: `/problems/${code}`,
    title: errorCodes[code].title,
    status,
    detail: message,
    code,
    ...(field === undefined ? {} : { field }),
  })
  expect(res.headers.vary).toContain('Accept')
}

/** Sends `request` without and with the Accept header and checks both answers. */
async function bothWays(request: InjectOptions, status: number, code: ErrorCode, message: string, field?: string): Promise<void> {
  expectPlain(await t.app.inject(request), status, message)
  expectProblem(await t.app.inject({ ...request, headers: { ...request.headers, ...PROBLEM } }), status, code, message, field)
}

describe('problem details, asked for with Accept: application/problem+json', () => {
  it('AppError 404: an unknown product', async () => {
    await bothWays({ url: '/products/999999' }, 404, 'product_not_found', messages.productNotFound)
  })

  it('AppError 409: more than the stock in the cart', async () => {
    const product = await makeProduct(t.app, { name: 'Lamp', stock: 1 })
    const request = { method: 'POST' as const, url: '/cart/add', headers: bearer(t.customer), payload: { productId: product.id, quantity: 5 } }
    await bothWays(request, 409, 'insufficient_stock', messages.insufficientStock)
  })

  it('AppError 409 with a built message: a status move the lifecycle refuses', async () => {
    const product = await makeProduct(t.app, { name: 'Mug', stock: 3 })
    await t.app.inject({ method: 'POST', url: '/cart/add', headers: bearer(t.customer), payload: { productId: product.id, quantity: 1 } })
    const order = (await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(t.customer) })).json()
    const request = { method: 'PATCH' as const, url: `/orders/${order.id}/status`, headers: bearer(t.admin), payload: { status: 'delivered' } }
    await bothWays(request, 409, 'transition_not_allowed', messages.transitionNotAllowed('pending', 'delivered'))
  })

  it.each([
    [
      'a body field (register: email)',
      { method: 'POST', url: '/auth/register', payload: { name: 'Ana', email: 'not-an-email', password: 'secret123' } },
      'email',
      messages.invalidEmail,
    ],
    [
      'a missing field (register: name)',
      { method: 'POST', url: '/auth/register', payload: { email: 'a@shop.test', password: 'secret123' } },
      'name',
      'name should not be empty',
    ],
    ['a query parameter (limit)', { url: '/products?limit=abc' }, 'limit', 'limit must be an integer number'],
    [
      'a path parameter (id)',
      // GET /categories/:idOrSlug reads 0 as an id (404); the admin routes keep integer ids. The token is read when sent.
      {
        method: 'DELETE',
        url: '/categories/0',
        get headers() {
          return bearer(t.admin)
        },
      },
      'id',
      'id must not be less than 1',
    ],
  ] as const)('validation 422 with its field: %s', async (_label, request, field, message) => {
    await bothWays(request as InjectOptions, 422, 'validation_failed', message, field)
  })

  it('validation 422 with its field: a body field of a signed-in route (cart: quantity) and a header (idempotency-key)', async () => {
    const quantity = { method: 'POST' as const, url: '/cart/add', headers: bearer(t.customer), payload: { productId: 1, quantity: 0 } }
    await bothWays(quantity, 422, 'validation_failed', 'quantity must not be less than 1', 'quantity')
    const key = { method: 'POST' as const, url: '/orders', headers: { ...bearer(t.customer), 'idempotency-key': 'x'.repeat(256) } }
    await bothWays(key, 422, 'validation_failed', 'idempotency-key must be shorter than or equal to 255 characters', 'idempotency-key')
  })

  it('validation 422 raised by a service, with its field (a body that is not allowed)', async () => {
    const request = { method: 'DELETE' as const, url: '/cart/clear', headers: bearer(t.customer), payload: { junk: 1 } }
    await bothWays(request, 422, 'validation_failed', 'property junk should not exist', 'junk')
  })

  it('a business 422 about one field carries it: an unknown category on a product', async () => {
    const product = await makeProduct(t.app, { name: 'Desk' })
    const request = { method: 'PUT' as const, url: `/products/${product.id}`, headers: bearer(t.admin), payload: { categoryId: 999999 } }
    await bothWays(request, 422, 'unknown_category', messages.categoryMissing, 'categoryId')
  })

  it('400: a JSON body that does not parse', async () => {
    const request = { method: 'POST' as const, url: '/auth/login', headers: { 'content-type': 'application/json' }, payload: '{"email": ' }
    await bothWays(request, 400, 'malformed_json', messages.malformedJson)
  })

  it('404: no such route', async () => {
    await bothWays({ url: '/no-such-route' }, 404, 'route_not_found', messages.routeNotFound)
  })

  it('413: a body over 1 MiB', async () => {
    const payload = JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(1_100_000) })
    await bothWays(
      { method: 'POST', url: '/auth/login', headers: { 'content-type': 'application/json' }, payload },
      413,
      'payload_too_large',
      messages.bodyTooLarge,
    )
  })

  it('415: a content type the route does not take', async () => {
    const request = { method: 'POST' as const, url: '/auth/login', headers: { 'content-type': 'text/plain' }, payload: 'email=a@b.co' }
    await bothWays(request, 415, 'unsupported_media_type', messages.unsupportedMediaType)
  })

  it('400 and 414: the router refuses the URL', async () => {
    await bothWays({ url: '/products/%zz' }, 400, 'malformed_url', messages.badUrl)
    await bothWays({ url: `/products/${'1'.repeat(300)}` }, 414, 'url_too_long', messages.urlTooLong)
  })

  it('401: no token, and a bad one', async () => {
    await bothWays({ url: '/cart' }, 401, 'unauthorized', messages.noUser)
    await bothWays({ url: '/cart', headers: { authorization: 'Bearer not-a-token' } }, 401, 'invalid_token', messages.invalidToken)
  })

  it('403: a customer on an admin route', async () => {
    await bothWays({ url: '/auth/users', headers: bearer(t.customer) }, 403, 'forbidden', messages.requiresRoles(['admin']))
  })

  it('429: over the rate limit of login', async () => {
    const limited = await createTestApp({ AUTH_RATE_LIMIT_MAX: '1' })
    try {
      const login = { method: 'POST' as const, url: '/auth/login', payload: { email: 'nobody@shop.test', password: 'secret123' } }
      expect((await limited.app.inject(login)).statusCode).toBe(401)
      const plain = await limited.app.inject(login)
      expectPlain(plain, 429, messages.tooManyAttempts)
      expect(plain.headers['retry-after']).toBeDefined()
      const problem = await limited.app.inject({ ...login, headers: PROBLEM })
      expectProblem(problem, 429, 'rate_limited', messages.tooManyAttempts)
      expect(problem.headers['retry-after']).toBeDefined()
    } finally {
      await limited.close()
    }
  })

  it('500: an unexpected failure, its cause in neither body', async () => {
    const { app, close } = await buildTestApp()
    try {
      app.get('/boom', async () => {
        throw new Error('secret database detail')
      })
      const plain = await app.inject({ url: '/boom' })
      expect([plain.statusCode, plain.body]).toEqual([500, JSON.stringify({ error: messages.internal })])
      const problem = await app.inject({ url: '/boom', headers: PROBLEM })
      expect(problem.statusCode).toBe(500)
      expect(problem.headers['content-type']).toBe('application/problem+json; charset=utf-8')
      expect(problem.json()).toEqual({
        type: '/problems/internal_error',
        title: 'Internal server error',
        status: 500,
        detail: messages.internal,
        code: 'internal_error',
      })
      expect(problem.body).not.toContain('secret database detail')
    } finally {
      await close()
    }
  })

  it('a success is the same whatever the Accept header says', async () => {
    const plain = await t.app.inject({ url: '/health' })
    const asked = await t.app.inject({ url: '/health', headers: { accept: 'application/json, application/problem+json' } })
    expect([asked.statusCode, asked.headers['content-type'], asked.body]).toEqual([plain.statusCode, plain.headers['content-type'], plain.body])
  })

  it('Vary keeps what CORS put there, and adds Accept', async () => {
    const cors = await createTestApp({ CORS_ORIGIN: 'https://shop.example' })
    try {
      const res = await cors.app.inject({ url: '/products/999999', headers: { origin: 'https://shop.example' } })
      expect(res.statusCode).toBe(404)
      expect(res.headers.vary).toBe('Origin, Accept')
    } finally {
      await cors.close()
    }
  })
})

describe('content negotiation (wantsProblem)', () => {
  it.each([
    'application/problem+json',
    'application/json, application/problem+json',
    'application/problem+json, application/json;q=0.9',
    'application/json;q=1, application/problem+json;q=0.5',
    'application/problem+json; charset=utf-8; q=0.001',
    'APPLICATION/Problem+JSON',
    ' text/html ,application/problem+json ; Q=1.0',
  ])('%j asks for problem details', (accept) => {
    expect(wantsProblem(accept)).toBe(true)
  })

  it.each([
    undefined,
    '',
    '*/*',
    'application/json',
    'application/*',
    'application/problem+json;q=0',
    'application/problem+json; q=0.000, application/json',
    'application/problem+json;q=abc',
    'application/problem+jsonx',
    'text/problem+json',
  ])('%j does not', (accept) => {
    expect(wantsProblem(accept)).toBe(false)
  })
})
