import type { FastifyInstance } from 'fastify'
import { rejectBody } from '../../shared/no-body.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import { Address, AddressList, CreateAddressBody, UpdateAddressBody } from './addresses.schemas.js'
import * as service from './addresses.service.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 422: ErrorResponse }

/** The caller's own address book: every route acts on `request.user.id` only. */
export async function addressesRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['addresses']
  const security = [{ bearerAuth: [] }]
  const onRequest = app.authenticate
  // Orders keep snapshots and products do not depend on addresses: nothing cached changes.
  const config = { invalidates: [] }

  app.get('/addresses', {
    onRequest,
    schema: { tags, summary: 'The caller’s addresses', security, response: { 200: AddressList, ...errors } },
    handler: async (request) => service.listAddresses(app.db, request.user.id),
  })

  app.post('/addresses', {
    onRequest,
    config,
    schema: { tags, summary: 'Add an address', security, body: CreateAddressBody, response: { 201: Address, ...errors } },
    handler: async (request, reply) => reply.code(201).send(await service.createAddress(app.db, request.user.id, request.body)),
  })

  app.patch('/addresses/:id', {
    onRequest,
    config,
    schema: { tags, summary: 'Change an address', security, params: IdParams, body: UpdateAddressBody, response: { 200: Address, ...errors } },
    handler: async (request) => service.updateAddress(app.db, request.user.id, request.params.id, request.body),
  })

  app.delete('/addresses/:id', {
    onRequest,
    config,
    preValidation: rejectBody,
    schema: { tags, summary: 'Delete an address (orders keep their snapshot)', security, params: IdParams, response: { 200: MessageResponse, ...errors } },
    handler: async (request) => service.deleteAddress(app.db, request.user.id, request.params.id),
  })
}
