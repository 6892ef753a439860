import type { FromSchema } from 'json-schema-to-ts'

const positiveId = { type: 'integer', minimum: 1, maximum: 2_147_483_647 } as const
/** An amount in the shop's currency, at most 2 decimals (read by parseCents: 12.5 or 12.50). */
const money = { type: 'number', minimum: 0, maximum: 9_999_999_999_999.99 } as const

/** `Idempotency-Key` of POST /orders/:id/refunds: required (its absence is checked first, before the body). */
export const RefundHeaders = {
  type: 'object',
  properties: {
    'idempotency-key': { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
  },
} as const

/** The body of a refund and of its preview: the units of some lines, some shipping, or an amount. */
export const RefundBody = {
  type: 'object',
  properties: {
    items: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        required: ['orderItemId', 'quantity'],
        properties: {
          orderItemId: positiveId,
          quantity: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
          restock: { type: 'boolean', description: 'Put the units back into stock (default false).' },
        },
        additionalProperties: false,
      },
    },
    shippingAmount: { ...money, description: 'Shipping to give back; at most what is left of what the order paid for shipping.' },
    amount: {
      ...money,
      minimum: 0.01,
      description: 'Exactly this amount (the items are still recorded); without it, the items and shipping, capped at what is refundable.',
    },
    reason: { type: 'string', maxLength: 500 },
  },
  additionalProperties: false,
} as const

const RefundItem = {
  title: 'RefundItem',
  type: 'object',
  required: ['orderItemId', 'quantity', 'amount', 'tax', 'restock'],
  properties: {
    orderItemId: { type: 'integer' },
    quantity: { type: 'integer' },
    amount: { type: 'number' },
    tax: { type: 'number' },
    restock: { type: 'boolean' },
  },
} as const

/** A refund, in `order.refunds` and as POST /orders/:id/refunds answers it. */
export const Refund = {
  title: 'Refund',
  type: 'object',
  required: ['id', 'orderId', 'amount', 'items', 'shippingAmount', 'taxAmount', 'reason', 'provider', 'createdAt', 'actor'],
  properties: {
    id: { type: 'integer' },
    orderId: { type: 'integer' },
    amount: { type: 'number' },
    items: { type: 'array', items: RefundItem },
    shippingAmount: { type: 'number' },
    taxAmount: { type: 'number' },
    reason: { type: ['string', 'null'] },
    provider: { type: 'string', enum: ['manual', 'stripe'] },
    createdAt: { type: 'string', format: 'date-time' },
    actor: {
      type: 'object',
      required: ['type', 'id', 'name'],
      properties: {
        type: {
          type: 'string',
          enum: ['user', 'api_key', 'system'],
          description: 'Who refunded: a staff member, an API key (its id and name), or the shop (a dashboard refund, a job).',
        },
        id: { type: ['integer', 'null'] },
        name: { type: ['string', 'null'] },
      },
    },
  },
} as const

/** What POST /orders/:id/refunds/preview answers: the refund it would make, and what is refundable now. */
export const RefundPreview = {
  title: 'RefundPreview',
  type: 'object',
  required: ['amount', 'items', 'shippingAmount', 'taxAmount', 'refundable'],
  properties: {
    amount: { type: 'number' },
    items: {
      type: 'array',
      items: {
        type: 'object',
        required: ['orderItemId', 'quantity', 'amount', 'tax'],
        properties: { orderItemId: { type: 'integer' }, quantity: { type: 'integer' }, amount: { type: 'number' }, tax: { type: 'number' } },
      },
    },
    shippingAmount: { type: 'number' },
    taxAmount: { type: 'number' },
    refundable: { type: 'number', description: 'payment.amount − payment.refundedAmount, before this refund.' },
  },
} as const

export type RefundInput = FromSchema<typeof RefundBody>
export type Refund = FromSchema<typeof Refund>
export type RefundPreview = FromSchema<typeof RefundPreview>
