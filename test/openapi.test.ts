import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { beforeAll, describe, expect, it } from 'vitest'
import { errorCodes } from '../src/shared/errors.js'
import { useTestApp } from './helpers/app.js'
import { bearer } from './helpers/factories.js'

// /openapi.json is complete enough to generate a client from (clients/typescript): every operation named and
// with its security, the shapes named, the headers of paged and rate-limited answers, and the product forms.
// What it says is checked against what the routes do.

interface Operation {
  operationId?: string
  security?: Record<string, string[]>[]
  requestBody?: { content: Record<string, { schema: Schema }> }
  responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema: Schema }> }>
}
interface Schema {
  $ref?: string
  type?: string
  items?: Schema
  required?: string[]
  properties?: Record<string, Schema>
  format?: string
}
interface Document {
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, Schema> }
}

// The routes anyone may call, without a token.
const PUBLIC = [
  'GET /health',
  'GET /ready',
  'POST /auth/register',
  'POST /carts',
  'POST /auth/login',
  'POST /auth/refresh',
  'POST /auth/password-reset',
  'POST /auth/password-reset/confirm',
  'GET /shipping-methods',
  'GET /categories',
  'GET /categories/{id}',
  'GET /products',
  'GET /products/{id}',
  'GET /products/facets',
  'GET /uploads/products/{name}',
  'POST /orders/lookup',
  'POST /withdrawals/preview',
  'POST /withdrawals/confirm',
].sort()

/** The routes of one order that a guest's link opens: a bearer, or the order's token. */
const ORDER_TOKEN = [
  'GET /orders/{id}',
  'POST /orders/{id}/cancel',
  'POST /orders/{id}/payment',
  'GET /orders/{id}/returns',
  'POST /orders/{id}/returns',
].sort()

const t = useTestApp()
let doc: Document
let operations: [key: string, method: string, path: string, operation: Operation][]

beforeAll(async () => {
  const response = await t.app.inject({ url: '/openapi.json' })
  expect(response.statusCode).toBe(200)
  doc = response.json()
  operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => [`${method.toUpperCase()} ${path}`, method.toUpperCase(), path, operation] as const),
  ) as typeof operations
})

/** `path` with its parameters filled in: an id that exists nowhere, an image name, a delivery id. */
const concrete = (path: string) =>
  path
    .replace('{name}', 'missing.png')
    .replace('{deliveryId}', '0190a000-0000-7000-8000-000000000000')
    .replace(/\{\w+\}/g, '999999')

describe('the OpenAPI document', () => {
  it('names every operation, each name once', () => {
    const ids = operations.map(([, , , operation]) => operation.operationId)
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true)
    expect(new Set(ids).size).toBe(ids.length)
    expect(operations.length).toBeGreaterThan(50)
    const byKey = Object.fromEntries(operations.map(([key, , , operation]) => [key, operation.operationId]))
    expect(byKey).toMatchObject({ 'GET /products': 'listProducts', 'POST /orders': 'createOrder', 'POST /auth/login': 'login' })
  })

  it('says which operations take a token, and they are the ones that answer 401 without one', async () => {
    const declared = operations.map(([key, , , operation]) => [key, JSON.stringify(operation.security)] as const)
    expect(declared.filter(([, security]) => security === undefined)).toEqual([])
    expect(
      declared
        .filter(([, security]) => security === '[]')
        .map(([key]) => key)
        .sort(),
    ).toEqual(PUBLIC)
    // A bearer, or for the cart's routes a bearer or a guest's cart token, or for a guest's order routes its order token.
    const cartRoutes = declared.filter(([key]) => / \/cart(\/|$)/.test(key) || key === 'POST /orders')
    expect(cartRoutes.length).toBeGreaterThanOrEqual(6)
    expect(cartRoutes.every(([, security]) => security === '[{"bearerAuth":[]},{"cartToken":[]}]')).toBe(true)
    expect(
      declared
        .filter(([, security]) => security === '[{"bearerAuth":[]},{"orderToken":[]}]')
        .map(([key]) => key)
        .sort(),
    ).toEqual(ORDER_TOKEN)
    expect(
      declared
        .filter(([key, security]) => security !== '[]' && !ORDER_TOKEN.includes(key) && !cartRoutes.some(([cart]) => cart === key))
        .every(([, security]) => security === '[{"bearerAuth":[]}]'),
    ).toBe(true)
    for (const [key, method, path] of operations) {
      const response = await t.app.inject({ method: method as 'GET', url: concrete(path), ...(method === 'GET' || method === 'DELETE' ? {} : { payload: {} }) })
      if (PUBLIC.includes(key)) expect(response.statusCode, `${key} without a token`).not.toBe(401)
      else expect({ key, status: response.statusCode }).toEqual({ key, status: 401 })
    }
  })

  it('names the shapes once, in components, and the operations refer to them', () => {
    for (const name of [
      'Error',
      'Problem',
      'Message',
      'Product',
      'Category',
      'User',
      'Cart',
      'CartItem',
      'Order',
      'OrderItem',
      'Address',
      'ShippingMethod',
      'Webhook',
      'WebhookDelivery',
      'TokenPair',
      'CountryCode',
    ]) {
      expect(doc.components.schemas[name], name).toBeDefined()
    }
    expect(doc.components.schemas.Product?.required).toEqual(expect.arrayContaining(['id', 'name', 'price', 'stock', 'imageUrl']))
    const json = (key: string, status: string) => operations.find(([k]) => k === key)?.[3].responses[status]?.content?.['application/json']?.schema
    expect(json('GET /products/{id}', '200')).toEqual({ $ref: '#/components/schemas/Product' })
    // A list shows products without their images, options and variants.
    expect(json('GET /products', '200')).toEqual({ type: 'array', items: { $ref: '#/components/schemas/ProductSummary' } })
    for (const name of ['ProductSummary', 'ProductImage', 'ProductOption', 'Variant']) expect(doc.components.schemas[name], name).toBeDefined()
    expect(json('GET /orders/{id}', '200')).toEqual({ $ref: '#/components/schemas/Order' })
    expect(json('GET /cart', '200')).toEqual({ $ref: '#/components/schemas/Cart' })
    expect(json('GET /products/{id}', '404')).toEqual({ $ref: '#/components/schemas/Error' })
    // Only OpenAPI keywords: the validator's messages are an extension.
    expect(JSON.stringify(doc)).not.toContain('"errorMessages"')
  })

  it('offers both bodies on every error answer: Error as application/json, Problem as application/problem+json', () => {
    let errors = 0
    for (const [key, , , operation] of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!/^[45]/.test(status)) continue
        errors += 1
        expect({ key, status, content: response.content }).toEqual({
          key,
          status,
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/Error' } },
            'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
          },
        })
      }
    }
    expect(errors).toBeGreaterThan(200)
    expect(doc.components.schemas.Problem?.required).toEqual(['type', 'title', 'status', 'detail', 'code'])
    expect(doc.components.schemas.Problem?.properties?.code).toMatchObject({ type: 'string', enum: Object.keys(errorCodes) })
  })

  it('describes the problem details the service answers (a validation error, a 404, a 401)', async () => {
    // ajv-formats is CommonJS with a default export; under NodeNext it arrives as the module object.
    const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv
    const ajv = addFormats(new Ajv({ strict: false }))
    const validate = ajv.compile(doc.components.schemas.Problem as object)
    const accept = { accept: 'application/problem+json' }
    for (const request of [
      { method: 'POST' as const, url: '/auth/register', payload: { name: 'Ana', email: 'x', password: 'secret123' }, headers: accept },
      { method: 'GET' as const, url: '/products/999999', headers: accept },
      { method: 'GET' as const, url: '/cart', headers: accept },
    ]) {
      const response = await t.app.inject(request)
      expect(response.headers['content-type'], request.url).toBe('application/problem+json; charset=utf-8')
      expect(validate(response.json()), `${request.url}: ${JSON.stringify(validate.errors)}`).toBe(true)
    }
  })

  it('documents the paging headers where the lists send them', async () => {
    const paged = operations.filter(([, , , operation]) => operation.responses['200']?.headers?.['X-Total-Count']).map(([key]) => key)
    expect(paged).toEqual([
      'GET /auth/users',
      'GET /orders',
      'GET /returns',
      'GET /withdrawals',
      'GET /discount-codes',
      'GET /discount-codes/{id}/redemptions',
      'GET /products',
      'GET /webhooks/{id}/deliveries',
      'GET /api-keys',
      'GET /audit-log',
    ])
    for (const key of paged) expect(Object.keys(operations.find(([k]) => k === key)?.[3].responses['200']?.headers ?? {})).toEqual(['X-Total-Count', 'Link'])
    // The file's admin and customer are the only users.
    for (const [url, count] of [
      ['/products', '0'],
      ['/orders', '0'],
      ['/auth/users', '2'],
      ['/discount-codes', '0'],
      ['/api-keys', '0'],
    ]) {
      const response = await t.app.inject({ url, headers: bearer(t.admin) })
      expect(response.headers['x-total-count'], url).toBe(count)
    }
  })

  it('documents the rate-limit headers on every answer of the rate-limited routes, and Retry-After on their 429', async () => {
    const limited = operations.filter(([, , , operation]) => operation.responses['429']).map(([key]) => key)
    expect(limited).toEqual([
      'POST /auth/password-reset',
      'POST /auth/password-reset/confirm',
      'POST /auth/register',
      'POST /auth/login',
      'POST /orders/lookup',
      'POST /withdrawals/preview',
      'POST /withdrawals/confirm',
    ])
    for (const key of limited) {
      const responses = operations.find(([k]) => k === key)?.[3].responses ?? {}
      for (const [status, response] of Object.entries(responses)) {
        const expected = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', ...(status === '429' ? ['Retry-After'] : [])]
        expect(Object.keys(response.headers ?? {}), `${key} ${status}`).toEqual(expected)
      }
    }
    const login = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'nobody@shop.test', password: 'not-a-password' } })
    expect(login.statusCode).toBe(401)
    expect(Object.keys(login.headers)).toEqual(expect.arrayContaining(['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']))
  })

  it('shows the product forms: multipart with the image as a file, and JSON (a draft, a change) without one', () => {
    const create = operations.find(([key]) => key === 'POST /products')?.[3]
    expect(Object.keys(create?.requestBody?.content ?? {})).toEqual(['multipart/form-data', 'application/json'])
    expect(create?.requestBody?.content['application/json']?.schema.properties?.image).toBeUndefined()
    const form = create?.requestBody?.content['multipart/form-data']?.schema
    expect(form?.required).toEqual(['name', 'price', 'image'])
    expect(form?.properties?.image).toMatchObject({ type: 'string', format: 'binary' })
    const update = operations.find(([key]) => key === 'PUT /products/{id}')?.[3]
    expect(Object.keys(update?.requestBody?.content ?? {})).toEqual(['multipart/form-data', 'application/json'])
    expect(update?.requestBody?.content['application/json']?.schema.properties?.image).toBeUndefined()
    const image = operations.find(([key]) => key === 'GET /uploads/products/{name}')?.[3]
    expect(Object.keys(image?.responses['200']?.content ?? {})).toEqual(['image/jpeg', 'image/png', 'image/webp', 'image/gif'])
  })
})
