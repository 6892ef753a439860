import type { FromSchema } from 'json-schema-to-ts'
import { PageQueryProperties } from '../../shared/validation.js'
import { SHOP_EVENT_TYPES } from '../outbox/events.js'

/** The events the shop tells its webhooks about (docs/webhooks.md): every event of the shop. */
export const WEBHOOK_EVENTS = SHOP_EVENT_TYPES
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number]

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const

const webhookFields = {
  // The URL's own rules (scheme, credentials, address) are checked by the service, with their own messages.
  url: { type: 'string', minLength: 1, maxLength: 2048 },
  events: {
    type: 'array',
    minItems: 1,
    maxItems: 50,
    items: {
      type: 'string',
      enum: WEBHOOK_EVENTS,
      errorMessages: {
        enum: `each value in events must be one of the following values: ${WEBHOOK_EVENTS.join(', ')}`,
        type: `each value in events must be one of the following values: ${WEBHOOK_EVENTS.join(', ')}`,
      },
    },
    errorMessages: { minItems: 'events should not be empty', maxItems: 'events must contain no more than 50 elements' },
  },
  description: { type: 'string', maxLength: 500 },
  active: { type: 'boolean' },
} as const

export const CreateWebhookBody = {
  type: 'object',
  required: ['url', 'events'],
  properties: { url: webhookFields.url, events: webhookFields.events, description: webhookFields.description },
  additionalProperties: false,
} as const

export const UpdateWebhookBody = {
  type: 'object',
  properties: webhookFields,
  additionalProperties: false,
  minProperties: 1,
} as const

const webhookProperties = {
  id: { type: 'integer' },
  url: { type: 'string' },
  events: { type: 'array', items: { type: 'string' } },
  description: { type: 'string' },
  active: { type: 'boolean' },
  createdAt: { type: 'string', format: 'date-time' },
  updatedAt: { type: 'string', format: 'date-time' },
} as const

export const Webhook = {
  title: 'Webhook',
  type: 'object',
  required: ['id', 'url', 'events', 'description', 'active', 'createdAt', 'updatedAt'],
  properties: webhookProperties,
} as const

/** The creation's answer: the only one that shows the secret. */
export const CreatedWebhook = {
  title: 'CreatedWebhook',
  type: 'object',
  required: ['id', 'url', 'events', 'description', 'active', 'secret', 'createdAt', 'updatedAt'],
  properties: { ...webhookProperties, secret: { type: 'string', description: '`whsec_` + base64 of 32 random bytes; shown only here.' } },
} as const

export const WebhookList = { type: 'array', items: Webhook } as const

export const ListDeliveriesQuery = {
  type: 'object',
  properties: {
    ...PageQueryProperties,
    status: { type: 'string', enum: DELIVERY_STATUSES },
  },
  additionalProperties: false,
} as const

export const DeliveryParams = {
  type: 'object',
  required: ['id', 'deliveryId'],
  properties: {
    id: { type: 'integer', minimum: 1, maximum: 2147483647 },
    // Not checked for a UUID's form: an id that names no delivery of this webhook, whatever its form, is a 404.
    deliveryId: { type: 'string' },
  },
} as const

export const Delivery = {
  title: 'WebhookDelivery',
  type: 'object',
  required: ['id', 'event', 'status', 'attempts', 'lastStatusCode', 'lastError', 'nextAttemptAt', 'createdAt', 'deliveredAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    event: { type: 'string' },
    status: { type: 'string', enum: DELIVERY_STATUSES },
    attempts: { type: 'integer' },
    lastStatusCode: { type: ['integer', 'null'] },
    lastError: { type: ['string', 'null'] },
    nextAttemptAt: { type: ['string', 'null'], format: 'date-time', description: 'When the next attempt is due; null once delivered or failed.' },
    createdAt: { type: 'string', format: 'date-time' },
    deliveredAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const

export const DeliveryList = { type: 'array', items: Delivery } as const

export type CreateWebhookInput = FromSchema<typeof CreateWebhookBody>
export type UpdateWebhookInput = FromSchema<typeof UpdateWebhookBody>
export type ListDeliveriesQuery = FromSchema<typeof ListDeliveriesQuery>
export type Webhook = FromSchema<typeof Webhook>
export type CreatedWebhook = FromSchema<typeof CreatedWebhook>
export type Delivery = FromSchema<typeof Delivery>
