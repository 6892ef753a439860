import type { FromSchema } from 'json-schema-to-ts'

export const paymentStatuses = ['unpaid', 'processing', 'paid', 'failed', 'refunded'] as const
export type PaymentStatus = (typeof paymentStatuses)[number]

/** `payment` on the order JSON (when the shop takes payments through Stripe). */
export const PaymentSummary = {
  title: 'Payment',
  type: 'object',
  required: ['provider', 'status', 'amount', 'currency'],
  properties: {
    provider: { type: 'string', enum: ['manual', 'stripe'] },
    status: { type: 'string', enum: paymentStatuses },
    amount: { type: 'number' },
    currency: { type: 'string' },
  },
} as const

/** The answer of POST /orders/:id/payment: with Stripe, what the storefront needs to confirm the intent. */
export const PaymentAnswer = {
  title: 'PaymentStart',
  type: 'object',
  required: ['provider', 'status', 'amount', 'currency'],
  properties: {
    ...PaymentSummary.properties,
    clientSecret: { type: 'string' },
    publishableKey: { type: 'string' },
  },
} as const

export const WebhookAnswer = {
  type: 'object',
  required: ['received'],
  properties: { received: { type: 'boolean' } },
} as const

export type PaymentSummary = FromSchema<typeof PaymentSummary>
export type PaymentAnswer = FromSchema<typeof PaymentAnswer>
