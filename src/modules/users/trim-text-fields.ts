import type { FastifyRequest } from 'fastify'

/** Trims `name` and `email` before validation, so "  ana@shop.test " is a valid e-mail and "  " an empty name. */
export async function trimTextFields(request: FastifyRequest): Promise<void> {
  const body = request.body as Record<string, unknown> | undefined
  if (!body || typeof body !== 'object') return
  for (const field of ['name', 'email']) {
    const value = body[field]
    if (typeof value === 'string') body[field] = value.trim()
  }
}
