import type { FastifyRequest } from 'fastify'
import { ValidationError } from './validation.js'

/**
 * preValidation hook for endpoints that take no body (POST /orders, DELETE ...): an absent or empty
 * body, `null` or `{}` is accepted; anything else is refused with 422 before any change is made.
 */
export async function rejectBody(request: FastifyRequest): Promise<void> {
  const body = request.body
  if (body === undefined || body === null) return
  if (typeof body === 'object' && !Array.isArray(body)) {
    const first = Object.keys(body)[0]
    if (first === undefined) return
    throw new ValidationError(`property ${first} should not exist`, first)
  }
  throw new ValidationError('body should be empty', 'body')
}
