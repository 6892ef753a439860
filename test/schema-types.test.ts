import Fastify from 'fastify'
import { describe, expectTypeOf, it } from 'vitest'
import { ListOrdersQuery, type Order } from '../src/modules/orders/orders.schemas.js'
import { CreateUserBody, type CreateUserInput, type UpdateUserInput, User } from '../src/modules/users/users.schemas.js'
import { IdParams, type SchemaTypes } from '../src/shared/validation.js'
import type { StaffRole } from '../src/modules/staff/permissions.js'

// Checked by the type check (`npm run typecheck`): a route's types are its schemas', written once.
describe('route types come from the route schemas', () => {
  it('body, params, query and response of a route are typed from its schemas', async () => {
    const app = Fastify().withTypeProvider<SchemaTypes>()
    app.post('/users/:id', {
      schema: { params: IdParams, querystring: ListOrdersQuery, body: CreateUserBody, response: { 200: User } },
      handler: async (request) => {
        expectTypeOf(request.params.id).toEqualTypeOf<number>()
        // `default` makes a query field always present; `enum` is a union of its values.
        expectTypeOf(request.query.limit).toEqualTypeOf<number>()
        expectTypeOf(request.query.status).toEqualTypeOf<Order['status'] | undefined>()
        // `errorMessages` on a field changes nothing of its type.
        expectTypeOf(request.body).toEqualTypeOf<{ name: string; email: string; password: string; role: 'customer' | 'admin'; staffRole?: StaffRole }>()
        return { id: request.params.id, name: 'a', email: 'a@b.c', role: 'customer' as const, staffRole: null, createdAt: '' }
      },
    })
    // @ts-expect-error: an answer must be what the response schema says (the id is an integer)
    app.get('/users/me', {
      schema: { response: { 200: User } },
      handler: async () => ({ id: '1', name: 'a', email: 'a@b.c', role: 'customer' as const, staffRole: null, createdAt: '' }),
    })
    await app.close()
  })

  it('services take the types of the schemas they are handed', () => {
    expectTypeOf<CreateUserInput>().toEqualTypeOf<{ name: string; email: string; password: string; role: 'customer' | 'admin'; staffRole?: StaffRole }>()
    expectTypeOf<UpdateUserInput>().toEqualTypeOf<{ name?: string; email?: string; role?: 'customer' | 'admin'; staffRole?: StaffRole; password?: string }>()
  })
})
