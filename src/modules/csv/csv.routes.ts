import multipart from '@fastify/multipart'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { AppError, messages } from '../../shared/errors.js'
import { fulfillmentStatuses } from '../orders/fulfillments.schemas.js'
import { orderStatuses } from '../orders/orders.schemas.js'
import { shownPaymentStatuses } from '../payments/payments.schemas.js'
import { documentOnly, ErrorResponse, type SchemaTypes, ValidationError } from '../../shared/validation.js'
import { CUSTOMER_COLUMNS, customerPages, ORDER_COLUMNS, orderPages, PRODUCT_COLUMNS, productPages, type FulfillmentStatus } from './exports.js'
import { importProducts } from '../catalog/products-import.service.js'
import { auditSource } from '../staff/audit-log.js'
import { sendCsv } from './csv-format.js'

const CSV_FILE = {
  description: 'A CSV file (UTF-8 with a byte order mark, CRLF, a header row).',
  content: { 'text/csv': { schema: { type: 'string' } } },
} as const
const csvResponses = { 200: CSV_FILE, 401: ErrorResponse, 403: ErrorResponse, 422: ErrorResponse }

const ProductsExportQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { status: { type: 'string', enum: ['draft', 'active', 'archived', 'any'], default: 'any', description: 'Every product by default.' } },
} as const

const dateTime = { type: 'string', format: 'date-time' } as const
const OrdersExportQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    from: { ...dateTime, description: 'Orders created at or after this time.' },
    to: { ...dateTime, description: 'Orders created before this time.' },
    status: { type: 'string', enum: orderStatuses },
    paymentStatus: { type: 'string', enum: shownPaymentStatuses, description: 'The order’s `payment.status`.' },
    fulfillmentStatus: { type: 'string', enum: fulfillmentStatuses },
  },
} as const

const ImportQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    dryRun: { type: 'boolean', default: false, description: 'Check and count everything, write nothing.' },
    partial: { type: 'boolean', default: false, description: 'Write the products whose rows are all valid, even when others fail.' },
  },
} as const

const ImportForm = documentOnly({
  type: 'object',
  required: ['file'],
  properties: { file: { type: 'string', format: 'binary', description: 'The CSV file, in the products export’s columns.' } },
} as const)

const count = { type: 'integer' } as const
const ImportReport = {
  type: 'object',
  additionalProperties: false,
  required: ['dryRun', 'partial', 'applied', 'rows', 'created', 'updated', 'unchanged', 'errors'],
  properties: {
    dryRun: { type: 'boolean' },
    partial: { type: 'boolean' },
    applied: { type: 'boolean', description: 'Whether anything was written.' },
    rows: { ...count, description: 'Records after the header.' },
    created: { type: 'object', additionalProperties: false, required: ['products', 'variants'], properties: { products: count, variants: count } },
    updated: { type: 'object', additionalProperties: false, required: ['products', 'variants'], properties: { products: count, variants: count } },
    unchanged: { ...count, description: 'Rows that change nothing.' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['row', 'column', 'message'],
        properties: {
          row: { ...count, description: 'The record’s number, the header being 1.' },
          column: { type: ['string', 'null'] },
          message: { type: 'string' },
        },
      },
    },
  },
} as const

/** The uploaded file, whole (it is checked before any row is written), within IMPORT_MAX_BYTES: else 413. */
async function readUpload(request: FastifyRequest): Promise<Buffer> {
  if (!request.isMultipart()) throw new ValidationError(messages.importFileMissing, 'file')
  let file: Buffer | undefined
  try {
    for await (const part of request.parts()) {
      if (part.type !== 'file') continue
      const bytes = await part.toBuffer()
      if (part.fieldname === 'file' && file === undefined) file = bytes
    }
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'FST_REQ_FILE_TOO_LARGE' || code === 'FST_FILES_LIMIT' || code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') {
      throw new AppError(413, 'bodyTooLarge')
    }
    if (error instanceof AppError || error instanceof ValidationError) throw error
    throw new AppError(400, 'malformedMultipart')
  }
  if (file === undefined || file.length === 0) throw new ValidationError(messages.importFileMissing, 'file')
  return file
}

/**
 * CSV: the products, orders and customers exports (streamed, page by page) and the product import. Each route
 * declares its staff permission in its config.
 */
export async function csvRoutes(fastify: FastifyInstance, options: { config: Config }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  const { config } = options
  await app.register(multipart, { limits: { fileSize: config.importMaxBytes, files: 5, fields: 10, parts: 20 } })
  const tags = ['csv']
  const security = [{ bearerAuth: [] }]
  const stamp = () => new Date().toISOString().slice(0, 10)

  app.get('/exports/products.csv', {
    config: { permission: 'catalog:read' },
    schema: { tags, summary: 'Export the products as CSV, a row per variant (admin)', security, querystring: ProductsExportQuery, response: csvResponses },
    handler: async (request, reply) => {
      const { status } = request.query
      return sendCsv(reply, `products-${stamp()}.csv`, PRODUCT_COLUMNS, productPages(app.db, status))
    },
  })

  app.get('/exports/orders.csv', {
    config: { permission: 'orders:read' },
    schema: { tags, summary: 'Export the orders as CSV, a row per line (admin)', security, querystring: OrdersExportQuery, response: csvResponses },
    handler: async (request, reply) => {
      const query = request.query as { from?: string; to?: string; status?: string; paymentStatus?: string; fulfillmentStatus?: FulfillmentStatus }
      // Stored times are ISO 8601 UTC with milliseconds: the bounds are compared in that form.
      const iso = (text: string | undefined) => (text === undefined ? undefined : new Date(text).toISOString())
      const filter = { ...query, from: iso(query.from), to: iso(query.to) }
      const defaults = { provider: config.payments.provider, currency: config.payments.currency }
      return sendCsv(reply, `orders-${stamp()}.csv`, ORDER_COLUMNS, orderPages(app.db, filter, defaults))
    },
  })

  app.get('/exports/customers.csv', {
    config: { permission: 'customers:read' },
    schema: { tags, summary: 'Export the customers as CSV, with their orders count and total spent (admin)', security, response: csvResponses },
    handler: async (_request, reply) => sendCsv(reply, `customers-${stamp()}.csv`, CUSTOMER_COLUMNS, customerPages(app.db)),
  })

  app.post('/imports/products', {
    config: { permission: 'catalog:write', invalidates: ['catalog'] },
    schema: {
      tags,
      summary: 'Import products from CSV (admin, multipart/form-data `file`): all or nothing unless `partial`; `dryRun` writes nothing',
      security,
      querystring: ImportQuery,
      body: { content: { 'multipart/form-data': { schema: ImportForm } } },
      response: { 200: ImportReport, 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 413: ErrorResponse, 422: ErrorResponse },
    },
    handler: async (request) => {
      const { dryRun, partial } = request.query
      const file = await readUpload(request)
      return importProducts(
        {
          db: app.db,
          dialect: app.dialect,
          events: app.outbox,
          limits: { maxOptions: config.maxOptionsPerProduct, maxVariants: config.maxVariantsPerProduct },
          maxRows: config.importMaxRows,
          audit: auditSource(request),
        },
        file,
        { dryRun, partial },
      )
    },
  })
}
