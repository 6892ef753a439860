import type { FastifyInstance } from 'fastify'
import { createUser } from '../../src/modules/users/users.service.js'

let sequence = 0

/** A unique e-mail for this test process. */
export function uniqueEmail(prefix = 'user'): string {
  sequence += 1
  return `${prefix}${sequence}-${process.pid}@shop.test`
}

export interface TestUser {
  id: number
  email: string
  password: string
  token: string
}

/** Makes a user directly through the service (no rate limit involved) and signs a token for it. */
export async function makeUser(app: FastifyInstance, role: 'customer' | 'admin' = 'customer', name = 'Test User'): Promise<TestUser> {
  const email = uniqueEmail(role)
  const password = 'secret123'
  const user = await createUser(app.db, { name, email, password, role })
  return { id: user.id, email, password, token: app.signToken(user) }
}

export function bearer(user: { token: string }): { authorization: string } {
  return { authorization: `Bearer ${user.token}` }
}
