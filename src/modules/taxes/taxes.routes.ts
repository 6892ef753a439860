import type { FastifyInstance } from 'fastify'
import { rejectBody } from '../../shared/no-body.js'
import { ErrorResponse, IdParams, MessageResponse, NoQuery, type SchemaTypes } from '../../shared/validation.js'
import { catalogUsesTaxClass } from '../catalog/products.service.js'
import { shippingUsesTaxClass } from '../shipping/shipping.service.js'
import {
  CreateTaxClassBody,
  CreateTaxRateBody,
  ListTaxRatesQuery,
  TaxClass,
  TaxClassList,
  TaxClassParams,
  TaxRate,
  TaxRateList,
  UpdateTaxClassBody,
  UpdateTaxRateBody,
} from './taxes.schemas.js'
import { auditSource } from '../staff/audit-log.js'
import * as service from './taxes.service.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }

/** What else may name a class: it is then not deleted. */
const usages = [catalogUsesTaxClass, shippingUsesTaxClass]

export async function taxesRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const tags = ['taxes']
  const security = [{ bearerAuth: [] }]
  // Reading is for any admin (a product's tax class is chosen from them); writing is `settings:write`.
  const admin = app.requireRole('admin')
  // Not part of the cached catalog: totals read the rates when they are computed.
  // Rates are kept in memory by pricing (taxRatesCache): every write here empties it, on every instance.
  const config = { permission: 'settings:write' as const, invalidates: ['taxes'] as const }

  app.get('/tax-classes', {
    onRequest: admin,
    schema: { tags, summary: 'Tax classes (admin)', security, querystring: NoQuery, response: { 200: TaxClassList, ...errors } },
    handler: async () => service.listTaxClasses(app.db),
  })

  app.post('/tax-classes', {
    config,
    schema: { tags, summary: 'Add a tax class (admin: settings:write)', security, body: CreateTaxClassBody, response: { 201: TaxClass, ...errors } },
    handler: async (request, reply) => reply.code(201).send(await service.createTaxClass(app.db, request.body, auditSource(request))),
  })

  app.patch('/tax-classes/:code', {
    config,
    schema: {
      tags,
      summary: 'Rename a tax class (admin: settings:write)',
      security,
      params: TaxClassParams,
      body: UpdateTaxClassBody,
      response: { 200: TaxClass, ...errors },
    },
    handler: async (request) => service.updateTaxClass(app.db, request.params.code, request.body, auditSource(request)),
  })

  app.delete('/tax-classes/:code', {
    config,
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'Delete a tax class no rate, product, variant or shipping method names; never `standard` (admin: settings:write)',
      security,
      params: TaxClassParams,
      response: { 200: MessageResponse, ...errors },
    },
    handler: async (request) => service.deleteTaxClass(app.db, request.params.code, usages, auditSource(request)),
  })

  app.get('/tax-rates', {
    onRequest: admin,
    schema: {
      tags,
      summary: 'Tax rates, by country and class when given (admin)',
      security,
      querystring: ListTaxRatesQuery,
      response: { 200: TaxRateList, ...errors },
    },
    handler: async (request) => service.listTaxRates(app.db, request.query),
  })

  app.post('/tax-rates', {
    config,
    schema: { tags, summary: 'Add a tax rate (admin: settings:write)', security, body: CreateTaxRateBody, response: { 201: TaxRate, ...errors } },
    handler: async (request, reply) => reply.code(201).send(await service.createTaxRate(app.db, request.body, auditSource(request))),
  })

  app.patch('/tax-rates/:id', {
    config,
    schema: {
      tags,
      summary: 'Change a tax rate (admin: settings:write; orders keep their taxes)',
      security,
      params: IdParams,
      body: UpdateTaxRateBody,
      response: { 200: TaxRate, ...errors },
    },
    handler: async (request) => service.updateTaxRate(app.db, request.params.id, request.body, auditSource(request)),
  })

  app.delete('/tax-rates/:id', {
    config,
    preValidation: rejectBody,
    schema: {
      tags,
      summary: 'Delete a tax rate (admin: settings:write; orders keep their taxes)',
      security,
      params: IdParams,
      response: { 200: MessageResponse, ...errors },
    },
    handler: async (request) => service.deleteTaxRate(app.db, request.params.id, auditSource(request)),
  })
}
