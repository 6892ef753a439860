import swagger, { type SwaggerTransform } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ProblemResponse } from '../shared/validation.js'

/**
 * Every operation's `operationId`, by method and route: the names a generated client calls its methods by
 * (openapi-typescript's `operations`, `paths`). In one list so that they read as one vocabulary; a route missing
 * here fails the document (and the test that reads it) instead of going out unnamed.
 */
const operationIds: Record<string, string> = {
  'GET /health': 'getHealth',
  'GET /ready': 'getReadiness',
  'POST /auth/register': 'register',
  'POST /auth/login': 'login',
  'POST /auth/refresh': 'refreshSession',
  'POST /auth/logout': 'logout',
  'POST /auth/logout-all': 'logoutAll',
  'GET /auth/me': 'getMe',
  'PATCH /auth/me': 'updateMe',
  'POST /auth/password-reset': 'requestPasswordReset',
  'POST /auth/password-reset/confirm': 'confirmPasswordReset',
  'GET /auth/users': 'listUsers',
  'POST /auth/users': 'createUser',
  'POST /auth/create-user': 'createUserWithRole',
  'GET /auth/users/:id': 'getUser',
  'PATCH /auth/users/:id': 'updateUser',
  'DELETE /auth/users/:id': 'deleteUser',
  'POST /carts': 'createGuestCart',
  'GET /cart': 'getCart',
  'PATCH /cart': 'updateCart',
  'POST /cart/discount': 'applyCartDiscount',
  'DELETE /cart/discount': 'removeCartDiscount',
  'POST /cart/add': 'addCartItem',
  'PUT /cart/item/:id': 'updateCartItem',
  'DELETE /cart/item/:id': 'removeCartItem',
  'DELETE /cart/clear': 'clearCart',
  'GET /orders': 'listOrders',
  'POST /orders': 'createOrder',
  'GET /orders/:id': 'getOrder',
  'POST /orders/:id/cancel': 'cancelOrder',
  'POST /orders/lookup': 'lookupOrder',
  'POST /orders/:id/payment': 'payOrder',
  'POST /orders/:id/returns': 'createReturn',
  'GET /orders/:id/returns': 'listOrderReturns',
  'GET /returns': 'listReturns',
  'GET /returns/:id': 'getReturn',
  'POST /returns/:id/approve': 'approveReturn',
  'POST /returns/:id/reject': 'rejectReturn',
  'POST /returns/:id/receive': 'receiveReturn',
  'POST /withdrawals/preview': 'previewWithdrawal',
  'POST /withdrawals/confirm': 'confirmWithdrawal',
  'GET /withdrawals': 'listWithdrawals',
  'GET /withdrawals/:id': 'getWithdrawal',
  'POST /withdrawals/:id/return': 'returnWithdrawal',
  'POST /orders/:id/refunds/preview': 'previewRefund',
  'POST /orders/:id/refunds': 'createRefund',
  'PATCH /orders/:id/status': 'updateOrderStatus',
  'PUT /orders/:id/status': 'setOrderStatus',
  'POST /orders/:id/fulfillments': 'createFulfillment',
  'PATCH /fulfillments/:id': 'updateFulfillment',
  'POST /fulfillments/:id/delivered': 'markFulfillmentDelivered',
  'GET /orders/:id/events': 'listOrderEvents',
  'POST /orders/:id/notes': 'addOrderNote',
  'GET /addresses': 'listAddresses',
  'POST /addresses': 'createAddress',
  'PATCH /addresses/:id': 'updateAddress',
  'DELETE /addresses/:id': 'deleteAddress',
  'GET /shipping-methods': 'listShippingMethods',
  'POST /shipping-methods': 'createShippingMethod',
  'PATCH /shipping-methods/:id': 'updateShippingMethod',
  'DELETE /shipping-methods/:id': 'deleteShippingMethod',
  'GET /discount-codes': 'listDiscountCodes',
  'POST /discount-codes': 'createDiscountCode',
  'GET /discount-codes/:id': 'getDiscountCode',
  'PATCH /discount-codes/:id': 'updateDiscountCode',
  'DELETE /discount-codes/:id': 'deleteDiscountCode',
  'GET /discount-codes/:id/redemptions': 'listDiscountRedemptions',
  'GET /tax-classes': 'listTaxClasses',
  'POST /tax-classes': 'createTaxClass',
  'PATCH /tax-classes/:code': 'updateTaxClass',
  'DELETE /tax-classes/:code': 'deleteTaxClass',
  'GET /tax-rates': 'listTaxRates',
  'POST /tax-rates': 'createTaxRate',
  'PATCH /tax-rates/:id': 'updateTaxRate',
  'DELETE /tax-rates/:id': 'deleteTaxRate',
  'GET /categories': 'listCategories',
  'POST /categories': 'createCategory',
  'GET /categories/:id': 'getCategory',
  'PUT /categories/:id': 'replaceCategory',
  'PATCH /categories/:id': 'updateCategory',
  'DELETE /categories/:id': 'deleteCategory',
  'GET /products': 'listProducts',
  'POST /products': 'createProduct',
  'GET /products/facets': 'getProductFacets',
  'GET /products/:id': 'getProduct',
  'PUT /products/:id': 'updateProduct',
  'PATCH /products/:id': 'patchProduct',
  'DELETE /products/:id': 'deleteProduct',
  'GET /uploads/products/:name': 'getProductImage',
  'POST /products/:id/options': 'addProductOption',
  'PATCH /products/:id/options/:optionId': 'updateProductOption',
  'DELETE /products/:id/options/:optionId': 'deleteProductOption',
  'PATCH /products/:id/options/:optionId/values/:valueId': 'updateProductOptionValue',
  'DELETE /products/:id/options/:optionId/values/:valueId': 'deleteProductOptionValue',
  'POST /products/:id/variants': 'createVariants',
  'PATCH /variants/:id': 'updateVariant',
  'DELETE /variants/:id': 'deleteVariant',
  'POST /products/:id/images': 'addProductImages',
  'PATCH /products/:id/images/:imageId': 'updateProductImage',
  'DELETE /products/:id/images/:imageId': 'deleteProductImage',
  'PUT /products/:id/images/order': 'reorderProductImages',
  'GET /webhooks': 'listWebhooks',
  'POST /webhooks': 'createWebhook',
  'GET /webhooks/:id': 'getWebhook',
  'PATCH /webhooks/:id': 'updateWebhook',
  'DELETE /webhooks/:id': 'deleteWebhook',
  'GET /webhooks/:id/deliveries': 'listWebhookDeliveries',
  'POST /webhooks/:id/deliveries/:deliveryId/retry': 'retryWebhookDelivery',
  'GET /api-keys': 'listApiKeys',
  'POST /api-keys': 'createApiKey',
  'POST /api-keys/:id/rotate': 'rotateApiKey',
  'DELETE /api-keys/:id': 'revokeApiKey',
  'POST /payments/stripe/webhook': 'receiveStripeEvent',
  'GET /admin/api/stats': 'getDashboardStats',
  'GET /audit-log': 'listAuditLog',
  'GET /exports/products.csv': 'exportProductsCsv',
  'GET /exports/orders.csv': 'exportOrdersCsv',
  'GET /exports/customers.csv': 'exportCustomersCsv',
  'POST /imports/products': 'importProductsCsv',
}

/**
 * Each route's entry in the document: its operationId, and `security: []` when its schema names none (a public
 * route; the routes that need a token say `bearerAuth`). A test checks both against what the routes do.
 */
const describeRoute: SwaggerTransform = ({ schema, url, route }) => {
  const method = Array.isArray(route.method) ? route.method[0] : route.method
  if (!schema || schema.hide || method === 'HEAD') return { schema, url }
  const operationId = operationIds[`${method} ${route.url}`]
  if (!operationId) throw new Error(`docs: no operationId for ${method} ${route.url} (src/plugins/docs.ts)`)
  return { schema: { ...schema, operationId, security: schema.security ?? [] }, url }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
const COMPONENT_NAME = /^[A-Za-z0-9._-]+$/

/**
 * The document's named shapes: every schema with a `title` (Product, Order, Error, ...) goes once into
 * `components.schemas` under that name, and each place that had it refers to it. The route schemas stay plain
 * objects, which is what their TypeScript types are derived from (FromSchema); two different schemas with the same
 * title fail the document.
 */
function nameSchemas(document: Record<string, Json>): Record<string, Json> {
  const named: Record<string, Json> = {}
  const texts = new Map<string, string>()
  // `names`: the node is a map of names (a schema's `properties`), whose keys are not keywords.
  const lift = (node: Json, names = false): Json => {
    if (Array.isArray(node)) return node.map((item) => lift(item))
    if (node === null || typeof node !== 'object') return node
    const lifted = Object.fromEntries(
      // The validator's own messages (ajv-errors' `errorMessages`) are an extension to OpenAPI: `x-` named.
      Object.entries(node).map(([key, value]) => [!names && key === 'errorMessages' ? 'x-errorMessages' : key, lift(value, !names && key === 'properties')]),
    )
    const title = lifted.title
    if (typeof title !== 'string' || !COMPONENT_NAME.test(title) || !('type' in lifted || 'anyOf' in lifted || 'enum' in lifted)) return lifted
    const text = JSON.stringify(lifted)
    const known = texts.get(title)
    if (known !== undefined && known !== text) throw new Error(`docs: two different schemas are titled ${title}`)
    texts.set(title, text)
    named[title] = lifted
    return { $ref: `#/components/schemas/${title}` }
  }
  const paths = lift(document.paths ?? {})
  const components = (document.components ?? {}) as Record<string, Json>
  const schemas = Object.fromEntries(Object.entries(named).sort(([a], [b]) => a.localeCompare(b)))
  return { ...document, paths, components: { ...components, schemas: { ...((components.schemas as Record<string, Json>) ?? {}), ...schemas } } }
}

const ERROR_REF = '#/components/schemas/Error'
const PROBLEM_MEDIA_TYPE = 'application/problem+json'

/**
 * Every error answer may be either body: `Error` as `application/json` (the default), or `Problem` as
 * `application/problem+json` when the request's Accept asks for it (plugins/errors.ts). The routes declare `Error`
 * (what their 4xx and 5xx are serialized with); the second body is added here, to each of them, with the `Problem`
 * schema. An error answer declared with another body fails the document.
 */
function withProblemDetails(document: Record<string, Json>): Record<string, Json> {
  const paths = (document.paths ?? {}) as Record<string, Record<string, { responses?: Record<string, { content?: Record<string, Json> }> }>>
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (!/^[45]/.test(status)) continue
        const json = response.content?.['application/json'] as { schema?: { $ref?: string } } | undefined
        if (json?.schema?.$ref !== ERROR_REF) throw new Error(`docs: ${method.toUpperCase()} ${path} answers ${status} with another body than Error`)
        response.content = { 'application/json': json, [PROBLEM_MEDIA_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } }
      }
    }
  }
  const components = (document.components ?? {}) as Record<string, Json>
  const schemas = { ...((components.schemas as Record<string, Json>) ?? {}), Problem: ProblemResponse as unknown as Json }
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)))
  return { ...document, paths, components: { ...components, schemas: sorted } }
}

/** OpenAPI 3.1 generated from the route schemas, at /openapi.json, and an interactive page at /docs. */
async function docsPlugin(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Shop API',
        version: '1.0.0',
        description:
          'HTTP backend for an online shop. Every error is `{"error": "<message>"}` (application/json); a client whose Accept lists ' +
          'application/problem+json gets RFC 9457 problem details instead, with a stable `code` (and the `field` of a validation error).',
      },
      // Relative: "Try it out" calls whatever address the page was opened at (PUBLIC_URL, an internal
      // name, localhost through a tunnel), not only PUBLIC_URL. Absolute URLs in answers still use it.
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          // A guest cart (POST /carts); the order's link token for a guest's order.
          cartToken: { type: 'apiKey', in: 'header', name: 'X-Cart-Token' },
          // A guest's link to their order (docs/api.md, "Guest orders"); `?token=` works as well.
          orderToken: { type: 'apiKey', in: 'header', name: 'X-Order-Token' },
        },
      },
    },
    transform: describeRoute,
    transformObject: (document) =>
      'openapiObject' in document ? withProblemDetails(nameSchemas(document.openapiObject as Record<string, Json>)) : document.swaggerObject,
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}

export default fp(docsPlugin, { name: 'docs' })
