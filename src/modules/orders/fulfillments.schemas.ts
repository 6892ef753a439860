import type { FromSchema } from 'json-schema-to-ts'

const positiveId = { type: 'integer', minimum: 1, maximum: 2_147_483_647 } as const

/** The carrier and tracking texts: up to 100 characters; null (or left out) is none. */
const text = { type: ['string', 'null'], maxLength: 100 } as const

/** An instant with its offset (`2026-12-03T10:00:00Z`), answered in UTC; not in the future (checked by the service). */
const deliveredAt = {
  type: 'string',
  format: 'date-time',
  errorMessages: { format: 'deliveredAt must be a valid ISO 8601 date string' },
} as const

const trackingFields = {
  carrier: text,
  trackingNumber: text,
  trackingUrl: { ...text, description: 'An absolute http or https URL, up to 100 characters like the other texts.' },
} as const

export const CreateFulfillmentBody = {
  type: 'object',
  properties: {
    items: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      errorMessages: { minItems: 'items should not be empty' },
      description: 'The units shipped, per line; left out: every unit left to ship.',
      items: {
        type: 'object',
        required: ['orderItemId', 'quantity'],
        properties: { orderItemId: positiveId, quantity: { type: 'integer', minimum: 1, maximum: 1_000_000 } },
        additionalProperties: false,
      },
    },
    ...trackingFields,
    notifyCustomer: { type: 'boolean', description: 'E-mail the customer (order-shipped); true by default.' },
  },
  additionalProperties: false,
} as const

export const UpdateFulfillmentBody = {
  type: 'object',
  properties: {
    ...trackingFields,
    deliveredAt,
    notifyCustomer: { type: 'boolean', description: 'true: e-mail the customer the shipment again, with its tracking as it now is. False by default.' },
  },
  additionalProperties: false,
} as const

export const MarkDeliveredBody = {
  type: ['object', 'null'],
  properties: { deliveredAt: { ...deliveredAt, description: 'When it was delivered; now by default. Not in the future.' } },
  additionalProperties: false,
} as const

export const Fulfillment = {
  title: 'Fulfillment',
  type: 'object',
  required: ['id', 'orderId', 'items', 'carrier', 'trackingNumber', 'trackingUrl', 'shippedAt', 'deliveredAt', 'createdAt'],
  properties: {
    id: { type: 'integer' },
    orderId: { type: 'integer' },
    items: {
      type: 'array',
      items: { type: 'object', required: ['orderItemId', 'quantity'], properties: { orderItemId: { type: 'integer' }, quantity: { type: 'integer' } } },
    },
    carrier: { type: ['string', 'null'] },
    trackingNumber: { type: ['string', 'null'] },
    trackingUrl: { type: ['string', 'null'] },
    shippedAt: { type: 'string', format: 'date-time' },
    deliveredAt: { type: ['string', 'null'], format: 'date-time' },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const

export const fulfillmentStatuses = ['unfulfilled', 'partial', 'fulfilled'] as const
export type FulfillmentStatus = (typeof fulfillmentStatuses)[number]

/** An entry of an order's timeline. */
export const OrderEvent = {
  title: 'OrderEvent',
  type: 'object',
  required: ['id', 'type', 'at', 'actor', 'data'],
  properties: {
    id: { type: 'integer' },
    type: { type: 'string', description: 'order.status_changed, order.fulfilled, order.delivered, note, … (docs/after-sale.md).' },
    at: { type: 'string', format: 'date-time' },
    actor: {
      type: 'object',
      required: ['type', 'id', 'name'],
      properties: {
        type: { type: 'string', enum: ['user', 'guest', 'api_key', 'system'] },
        id: { type: ['integer', 'null'] },
        name: { type: ['string', 'null'], description: 'A user’s name, a guest’s e-mail; null for the shop itself.' },
      },
    },
    data: { type: 'object', additionalProperties: true },
  },
} as const

export const OrderEventList = { type: 'array', items: OrderEvent } as const

export const NoteBody = {
  type: 'object',
  required: ['text'],
  properties: { text: { type: 'string', minLength: 1, maxLength: 2000 } },
  additionalProperties: false,
} as const

export type CreateFulfillmentInput = FromSchema<typeof CreateFulfillmentBody>
export type UpdateFulfillmentInput = FromSchema<typeof UpdateFulfillmentBody>
export type MarkDeliveredInput = FromSchema<typeof MarkDeliveredBody>
export type Fulfillment = FromSchema<typeof Fulfillment>
export type NoteInput = FromSchema<typeof NoteBody>
