import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from './helpers/app.js'
import { bearer, type TestUser } from './helpers/factories.js'

// Numbers in query strings and paths are text, read as decimal numbers in one place (src/shared/validation.ts).
// Whatever else JavaScript would read as a number (an infinity, a number too large for a double, hexadecimal)
// is a bad number: 422 with the message every bad number of that parameter gets, on every route and database.
// The parameters come from /openapi.json, so a route added later is covered too.
const t = useTestApp()

interface NumericParameter {
  method: string
  /** The OpenAPI path, `{name}` for path parameters. */
  path: string
  in: 'query' | 'path'
  name: string
  type: 'integer' | 'number'
}

interface OpenApiParameter {
  in: string
  name: string
  schema?: { type?: string | string[] }
}

async function numericParameters(): Promise<NumericParameter[]> {
  const doc = (await t.app.inject({ url: '/openapi.json' })).json<{ paths: Record<string, Record<string, { parameters?: OpenApiParameter[] }>> }>()
  const found: NumericParameter[] = []
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const parameter of operation.parameters ?? []) {
        const type = parameter.schema?.type
        if ((type === 'integer' || type === 'number') && (parameter.in === 'query' || parameter.in === 'path')) {
          found.push({ method: method.toUpperCase(), path, in: parameter.in, name: parameter.name, type })
        }
      }
    }
  }
  return found
}

/** The URL with `value` (as written, already encoded) in the parameter, and valid values in the path's others. */
function urlWith(parameter: NumericParameter, value: string): string {
  const path = parameter.path.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
    if (parameter.in === 'path' && name === parameter.name) return value
    return name === 'deliveryId' ? '0190a0e0-0000-7000-8000-000000000000' : '1'
  })
  return parameter.in === 'query' ? `${path}?${parameter.name}=${value}` : path
}

/** As an admin, or as a customer on the routes of customers only: every check before validation passes. */
async function send(method: string, url: string) {
  const inject = (user: TestUser) => t.app.inject({ method: method as 'GET', url, headers: bearer(user) })
  const response = await inject(t.admin)
  return response.statusCode === 403 ? inject(t.customer) : response
}

const BAD_NUMBERS = [
  ['Infinity', 'Infinity'],
  ['-Infinity', '-Infinity'],
  ['NaN', 'NaN'],
  ['1e400', '1e400'],
  ['hexadecimal', '0x10'],
  ['binary', '0b11'],
  ['octal', '0o7'],
  ['a leading space', '%205'],
  ['letters', 'abc'],
] as const

describe('a bad number in a query string or a path is a 422, never a 500 or a number read some other way', () => {
  let parameters: NumericParameter[]
  beforeAll(async () => {
    parameters = await numericParameters()
  })

  it('finds the numeric parameters of every route in /openapi.json', () => {
    const names = parameters.map((p) => `${p.method} ${p.path} ${p.in}:${p.name}`)
    for (const expected of [
      'GET /products query:limit',
      'GET /products query:offset',
      'GET /products query:categoryId',
      'GET /products query:minPrice',
      'GET /products query:maxPrice',
      'GET /orders query:limit',
      'GET /orders query:offset',
      'GET /auth/users query:limit',
      'GET /admin/api/stats query:days',
      'PUT /products/{id} path:id',
      'DELETE /products/{id} path:id',
    ]) {
      expect(names).toContain(expected)
    }
  })

  it.each(BAD_NUMBERS)('%s (%s): 422 with the bad-number message, on every numeric parameter', async (_label, value) => {
    const answers: string[] = []
    for (const parameter of parameters) {
      const response = await send(parameter.method, urlWith(parameter, value))
      const message = `${parameter.name} must be ${parameter.type === 'integer' ? 'an integer number' : 'a number'}`
      answers.push(`${parameter.method} ${urlWith(parameter, value)} → ${response.statusCode} ${response.body}`)
      expect.soft(`${response.statusCode} ${response.body}`, answers.at(-1)).toBe(`422 ${JSON.stringify({ error: message })}`)
    }
    expect(answers.length).toBeGreaterThan(20)
  })

  it('GET /orders?offset=Infinity and ?limit=Infinity: 422 like offset=abc', async () => {
    for (const query of ['offset=Infinity', 'limit=Infinity', 'offset=abc']) {
      const response = await t.app.inject({ url: `/orders?${query}`, headers: bearer(t.customer) })
      expect(response.statusCode).toBe(422)
      expect(response.json()).toEqual({ error: `${query.split('=')[0]} must be an integer number` })
    }
  })

  it('numbers written in decimal still read as before: leading zeros, a zero fraction, an exponent, a sign', async () => {
    const products = await t.app.inject({ url: '/products?limit=010&offset=2.0&minPrice=1e1&maxPrice=%2B19.99&categoryId=01' })
    expect(products.statusCode).toBe(200)
    expect((await t.app.inject({ url: '/orders?limit=1e1&offset=0', headers: bearer(t.customer) })).statusCode).toBe(200)
    expect((await send('GET', '/admin/api/stats?days=3.0')).statusCode).toBe(200)
    expect((await t.app.inject({ url: '/products/0001' })).json()).toEqual({ error: 'Producto no encontrado' })
  })
})
