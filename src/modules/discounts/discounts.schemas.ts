import type { FromSchema } from 'json-schema-to-ts'
import { PageQueryProperties } from '../../shared/validation.js'

export const discountTypes = ['percent', 'fixed', 'free_shipping'] as const

/** A number or a decimal string with at most 2 decimals ("12.50"), read by the service (its rules depend on `type`). */
const amount = {
  anyOf: [{ type: 'number' }, { type: 'string' }],
  description: 'A number or a decimal string, at most 2 decimals: 12.5 or "12.50".',
} as const

const nullableAmount = { anyOf: [...amount.anyOf, { type: 'null' }], description: amount.description } as const

/** An instant with its offset (`2026-12-01T00:00:00Z`, `2026-12-01T01:00:00+01:00`), answered in UTC; null: none. */
const instant = (field: string) =>
  ({
    type: ['string', 'null'],
    format: 'date-time',
    errorMessages: { format: `${field} must be a valid ISO 8601 date string` },
  }) as const

const limit = { type: ['integer', 'null'], minimum: 1, maximum: 2147483647 } as const

const idList = (field: string) =>
  ({
    type: 'array',
    items: { type: 'integer', minimum: 1, maximum: 2147483647 },
    maxItems: 1000,
    uniqueItems: true,
    // class-validator's ArrayUnique.
    errorMessages: { uniqueItems: `All ${field}'s elements must be unique` },
  }) as const

/** Every field of a code but `code` itself, the one a PATCH may not change. */
const changeableFields = {
  type: { type: 'string', enum: discountTypes },
  value: {
    ...nullableAmount,
    description: '`percent`: 0.01–100 (a percentage); `fixed`: an amount above 0; `free_shipping`: none (absent or null).',
  },
  minSubtotal: { ...nullableAmount, description: 'The eligible lines’ subtotal the code needs; null: none.' },
  startsAt: instant('startsAt'),
  endsAt: instant('endsAt'),
  usageLimit: { ...limit, description: 'Orders the code may be used on in all; null: no limit.' },
  perCustomerLimit: { ...limit, description: 'Orders one customer (user id or e-mail) may use it on; null: no limit.' },
  productIds: { ...idList('productIds'), description: 'The products the code applies to; with categoryIds empty too ([]), every product.' },
  categoryIds: { ...idList('categoryIds'), description: 'The categories (with their descendants) the code applies to.' },
  active: { type: 'boolean' },
} as const

export const CreateDiscountCodeBody = {
  type: 'object',
  required: ['code', 'type'],
  properties: {
    code: {
      type: 'string',
      minLength: 3,
      maxLength: 50,
      pattern: '^[A-Za-z0-9_-]+$',
      description: '3–50 letters, digits, hyphens and underscores; unique ignoring case.',
    },
    ...changeableFields,
  },
  additionalProperties: false,
} as const

export const UpdateDiscountCodeBody = {
  type: 'object',
  properties: changeableFields,
  additionalProperties: false,
  minProperties: 1,
} as const

export const ListDiscountCodesQuery = {
  type: 'object',
  properties: {
    ...PageQueryProperties,
    q: { type: 'string', maxLength: 50, description: 'Part of the code, case ignored.' },
    active: { type: 'boolean', description: 'Only active (true) or inactive (false) codes.' },
  },
  additionalProperties: false,
} as const

export const ListRedemptionsQuery = {
  type: 'object',
  properties: PageQueryProperties,
  additionalProperties: false,
} as const

export const DiscountCode = {
  title: 'DiscountCode',
  type: 'object',
  required: [
    'id',
    'code',
    'type',
    'value',
    'minSubtotal',
    'startsAt',
    'endsAt',
    'usageLimit',
    'perCustomerLimit',
    'usageCount',
    'productIds',
    'categoryIds',
    'active',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    id: { type: 'integer' },
    code: { type: 'string' },
    type: { type: 'string', enum: discountTypes },
    value: { type: ['number', 'null'], description: '`percent`: a percentage (12.5); `fixed`: an amount; `free_shipping`: null.' },
    minSubtotal: { type: ['number', 'null'] },
    startsAt: { type: ['string', 'null'], format: 'date-time' },
    endsAt: { type: ['string', 'null'], format: 'date-time' },
    usageLimit: { type: ['integer', 'null'] },
    perCustomerLimit: { type: ['integer', 'null'] },
    usageCount: { type: 'integer', description: 'Orders holding a redemption of the code.' },
    productIds: { type: 'array', items: { type: 'integer' } },
    categoryIds: { type: 'array', items: { type: 'integer' } },
    active: { type: 'boolean' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const

export const DiscountCodeList = { type: 'array', items: DiscountCode } as const

export const DiscountRedemption = {
  title: 'DiscountRedemption',
  type: 'object',
  required: ['orderId', 'userId', 'email', 'amount', 'createdAt'],
  properties: {
    orderId: { type: 'integer' },
    userId: { type: ['integer', 'null'], description: 'null: a guest order.' },
    email: { type: 'string' },
    amount: { type: 'number', description: 'The discount the order got.' },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const

export const DiscountRedemptionList = { type: 'array', items: DiscountRedemption } as const

export type CreateDiscountCodeInput = FromSchema<typeof CreateDiscountCodeBody>
export type UpdateDiscountCodeInput = FromSchema<typeof UpdateDiscountCodeBody>
export type ListDiscountCodesQuery = FromSchema<typeof ListDiscountCodesQuery>
export type ListRedemptionsQuery = FromSchema<typeof ListRedemptionsQuery>
export type DiscountCode = FromSchema<typeof DiscountCode>
export type DiscountRedemption = FromSchema<typeof DiscountRedemption>
export type DiscountType = (typeof discountTypes)[number]
