import type { FromSchema } from 'json-schema-to-ts'

/** A payment row's stored status. */
export const paymentStatuses = ['unpaid', 'processing', 'paid', 'failed', 'refunded'] as const
export type PaymentStatus = (typeof paymentStatuses)[number]
/** The status the API shows: the stored one, with `partially_refunded` derived from what was refunded. */
export const shownPaymentStatuses = [...paymentStatuses, 'partially_refunded'] as const

/** `payment` on every order JSON (`provider: "manual"` without Stripe). */
export const PaymentSummary = {
  title: 'Payment',
  type: 'object',
  required: ['provider', 'status', 'amount', 'currency', 'refundedAmount'],
  properties: {
    provider: { type: 'string', enum: ['manual', 'stripe'] },
    status: { type: 'string', enum: shownPaymentStatuses },
    amount: { type: 'number' },
    currency: { type: 'string' },
    /** The sum of the order's refunds: the shop's own and those made in the provider's dashboard. */
    refundedAmount: { type: 'number' },
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
