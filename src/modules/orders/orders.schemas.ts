import type { FromSchema } from 'json-schema-to-ts'
import { PageQueryProperties } from '../../shared/validation.js'
// Payments: `payment` on the order JSON, present when the shop takes payments through Stripe.
import { PaymentSummary } from '../payments/payments.schemas.js'

export const orderStatuses = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const
export type OrderStatus = (typeof orderStatuses)[number]

/** `Idempotency-Key`: 1 to 255 printable ASCII characters (header names are lower-case in Fastify schemas). */
export const PlaceOrderHeaders = {
  type: 'object',
  properties: {
    'idempotency-key': { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
  },
} as const

export const ListOrdersQuery = {
  type: 'object',
  properties: { ...PageQueryProperties, status: { type: 'string', enum: orderStatuses } },
  additionalProperties: false,
} as const

export const UpdateStatusBody = {
  type: 'object',
  required: ['status'],
  // No `type`: any value outside the list (a number, say) gets the enum's message.
  properties: { status: { enum: orderStatuses } },
  additionalProperties: false,
} as const

export const OrderItem = {
  type: 'object',
  required: ['id', 'orderId', 'productId', 'quantity', 'price'],
  properties: {
    id: { type: 'integer' },
    orderId: { type: 'integer' },
    productId: { type: 'integer' },
    quantity: { type: 'integer' },
    price: { type: 'number' },
    product: {
      type: 'object',
      required: ['id', 'name', 'imageUrl'],
      properties: { id: { type: 'integer' }, name: { type: 'string' }, imageUrl: { type: 'string' } },
    },
  },
} as const

export const Order = {
  type: 'object',
  required: ['id', 'userId', 'total', 'status', 'createdAt', 'updatedAt', 'items'],
  properties: {
    id: { type: 'integer' },
    userId: { type: 'integer' },
    total: { type: 'number' },
    status: { type: 'string', enum: orderStatuses },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    items: { type: 'array', items: OrderItem },
    // Payments (src/modules/payments): added by its hook when Stripe is on; absent with manual payments.
    payment: PaymentSummary,
  },
} as const

export const OrderList = { type: 'array', items: Order } as const

export type UpdateStatusInput = FromSchema<typeof UpdateStatusBody>
/** `product` is present while the product exists. */
export type OrderItem = FromSchema<typeof OrderItem>
export type Order = FromSchema<typeof Order>
export type ListOrdersQuery = FromSchema<typeof ListOrdersQuery>
