import type { FromSchema } from 'json-schema-to-ts'
import { PageQueryProperties } from '../../shared/validation.js'
import { email as userEmail } from '../users/users.schemas.js'

export const returnStatuses = ['requested', 'approved', 'rejected', 'received'] as const
export const returnSources = ['customer', 'admin', 'withdrawal'] as const

const positiveId = { type: 'integer', minimum: 1, maximum: 2_147_483_647 } as const
const units = { type: 'integer', minimum: 1, maximum: 1_000_000 } as const
const reason = { type: 'string', maxLength: 500 } as const
const itemsNotEmpty = { minItems: 'items should not be empty' }

/** POST /orders/:id/returns. */
export const CreateReturnBody = {
  type: 'object',
  required: ['items'],
  properties: {
    items: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      items: {
        type: 'object',
        required: ['orderItemId', 'quantity'],
        properties: { orderItemId: positiveId, quantity: units, reason },
        additionalProperties: false,
      },
      errorMessages: itemsNotEmpty,
    },
    reason,
  },
  additionalProperties: false,
} as const

/** POST /returns/:id/reject. */
export const RejectReturnBody = {
  type: 'object',
  required: ['reason'],
  properties: { reason: { type: 'string', minLength: 1, maxLength: 500 } },
  additionalProperties: false,
} as const

/** POST /returns/:id/receive: every field optional (no body = every unit, restocked and refunded). */
export const ReceiveReturnBody = {
  type: 'object',
  properties: {
    items: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      items: {
        type: 'object',
        required: ['orderItemId', 'quantity'],
        properties: { orderItemId: positiveId, quantity: units, restock: { type: 'boolean' } },
        additionalProperties: false,
      },
      errorMessages: itemsNotEmpty,
    },
    refund: { type: 'boolean' },
    shippingAmount: { type: 'number', minimum: 0, maximum: 9_999_999_999_999.99 },
    amount: { type: 'number', minimum: 0, maximum: 9_999_999_999_999.99 },
  },
  additionalProperties: false,
} as const

/** `Idempotency-Key` of a receipt that refunds (1 to 255 printable ASCII characters). */
export const ReceiveReturnHeaders = {
  type: 'object',
  properties: { 'idempotency-key': { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' } },
} as const

export const ListReturnsQuery = {
  type: 'object',
  properties: { ...PageQueryProperties, status: { type: 'string', enum: returnStatuses }, orderId: positiveId },
  additionalProperties: false,
} as const

export const ReturnItem = {
  type: 'object',
  required: ['orderItemId', 'quantity', 'reason', 'receivedQuantity'],
  properties: {
    orderItemId: { type: 'integer' },
    quantity: { type: 'integer' },
    reason: { type: ['string', 'null'] },
    receivedQuantity: { type: ['integer', 'null'], description: 'Units that arrived; null until the return is received.' },
  },
} as const

export const Return = {
  title: 'Return',
  type: 'object',
  required: ['id', 'orderId', 'status', 'source', 'reason', 'items', 'refundId', 'withdrawalId', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'integer' },
    orderId: { type: 'integer' },
    status: { type: 'string', enum: returnStatuses },
    source: { type: 'string', enum: returnSources },
    reason: { type: ['string', 'null'] },
    rejectionReason: { type: ['string', 'null'], description: 'Why staff rejected it (null unless rejected); the customer is told it too.' },
    items: { type: 'array', items: ReturnItem },
    refundId: { type: ['integer', 'null'] },
    withdrawalId: { type: ['integer', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const

export const ReturnList = { type: 'array', items: Return } as const

// ---- withdrawals ----

/** POST /withdrawals/preview and /withdrawals/confirm. */
export const WithdrawalBody = {
  type: 'object',
  required: ['orderId', 'email', 'name'],
  properties: {
    orderId: positiveId,
    email: userEmail,
    name: { type: 'string', minLength: 1, maxLength: 100 },
    items: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      items: {
        type: 'object',
        required: ['orderItemId', 'quantity'],
        properties: { orderItemId: positiveId, quantity: units },
        additionalProperties: false,
      },
      errorMessages: itemsNotEmpty,
    },
  },
  additionalProperties: false,
} as const

const WithdrawalItem = {
  type: 'object',
  required: ['orderItemId', 'name', 'variantTitle', 'quantity'],
  properties: {
    orderItemId: { type: 'integer' },
    name: { type: ['string', 'null'] },
    variantTitle: { type: ['string', 'null'] },
    quantity: { type: 'integer' },
  },
} as const

const deadline = {
  type: ['string', 'null'],
  description: 'The last day to withdraw (`YYYY-MM-DD` in the shop’s zone); null while the order has not all been delivered.',
} as const

export const WithdrawalPreview = {
  title: 'WithdrawalPreview',
  type: 'object',
  required: ['orderId', 'name', 'email', 'items', 'statement', 'deadline'],
  properties: {
    orderId: { type: 'integer' },
    name: { type: 'string' },
    email: { type: 'string' },
    items: { type: 'array', items: WithdrawalItem },
    statement: { type: 'string' },
    deadline,
  },
} as const

export const Withdrawal = {
  title: 'Withdrawal',
  type: 'object',
  required: ['id', 'orderId', 'name', 'email', 'items', 'statement', 'receivedAt', 'deadline', 'returnId'],
  properties: {
    id: { type: 'integer' },
    orderId: { type: 'integer' },
    name: { type: 'string' },
    email: { type: 'string' },
    items: { type: 'array', items: WithdrawalItem },
    statement: { type: 'string' },
    receivedAt: { type: 'string', format: 'date-time' },
    deadline,
    returnId: { type: ['integer', 'null'] },
    ip: { type: ['string', 'null'], description: 'Staff reads only.' },
    userAgent: { type: ['string', 'null'], description: 'Staff reads only.' },
  },
} as const

export const WithdrawalReceipt = {
  ...Withdrawal,
  title: 'WithdrawalReceipt',
  required: [...Withdrawal.required, 'message'],
  properties: { ...Withdrawal.properties, message: { type: 'string' } },
} as const

export const WithdrawalList = { type: 'array', items: Withdrawal } as const

export const ListWithdrawalsQuery = {
  type: 'object',
  properties: {
    ...PageQueryProperties,
    orderId: positiveId,
    converted: { type: 'boolean', description: 'true: only those made into a return; false: only those not yet.' },
  },
  additionalProperties: false,
} as const

export type CreateReturnInput = FromSchema<typeof CreateReturnBody>
export type ReceiveReturnInput = FromSchema<typeof ReceiveReturnBody>
export type ListReturnsQuery = FromSchema<typeof ListReturnsQuery>
export type Return = FromSchema<typeof Return>
export type WithdrawalInput = FromSchema<typeof WithdrawalBody>
export type WithdrawalPreview = FromSchema<typeof WithdrawalPreview>
export type Withdrawal = FromSchema<typeof Withdrawal>
export type ListWithdrawalsQuery = FromSchema<typeof ListWithdrawalsQuery>
