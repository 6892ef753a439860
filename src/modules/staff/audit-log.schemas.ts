import type { FromSchema } from 'json-schema-to-ts'
import { PageQueryProperties } from '../../shared/validation.js'

const dateTime = { type: 'string', format: 'date-time' } as const
/** A bound of the time filter, refused in class-validator's wording. */
const bound = (field: string) => ({ ...dateTime, errorMessages: { format: `${field} must be a valid ISO 8601 date string` } }) as const
const text = { type: 'string', minLength: 1, maxLength: 200 } as const

export const ListAuditLogQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...PageQueryProperties,
    entityType: { ...text, description: 'Only changes of this kind of resource: `product`, `order`, `user`…' },
    entityId: { ...text, description: 'Only changes of this resource (its id, or a tax class’s code).' },
    actorType: { type: 'string', enum: ['user', 'api_key', 'system'] },
    actorId: { type: 'integer', minimum: 1, description: 'Only changes by this user or API key (with `actorType`, one of them).' },
    action: { ...text, description: 'Only this action: `product.update`.' },
    from: { ...bound('from'), description: 'Changes at or after this time.' },
    to: { ...bound('to'), description: 'Changes before this time.' },
  },
} as const
export type ListAuditLogQuery = FromSchema<typeof ListAuditLogQuery>

const resource = { description: 'The resource as the API answered it, secrets reading "[REDACTED]"; null on create (before) and delete (after).' }

export const AuditLogEntry = {
  title: 'AuditLogEntry',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'at', 'actor', 'action', 'entityType', 'entityId', 'before', 'after', 'requestId', 'ip', 'userAgent'],
  properties: {
    id: { type: 'string', format: 'uuid', description: 'A UUIDv7: ids sort in the order of their changes.' },
    at: dateTime,
    actor: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'id', 'name'],
      properties: {
        type: { type: 'string', enum: ['user', 'api_key', 'system'] },
        id: { type: ['integer', 'null'], description: 'The user’s or the key’s id; null for the shop itself.' },
        name: { type: ['string', 'null'], description: 'The user’s name at the change, the key’s name, or the job’s (`order-expiry`).' },
      },
    },
    action: { type: 'string', description: '`<entityType>.<verb>`: `product.update`, `refund.create`, `import.products`.' },
    entityType: { type: 'string' },
    entityId: { type: ['string', 'null'], description: 'The resource’s id as text (a tax class’s code).' },
    before: resource,
    after: resource,
    requestId: { type: ['string', 'null'], description: 'The request’s `X-Request-Id`; null for a job.' },
    ip: { type: ['string', 'null'] },
    userAgent: { type: ['string', 'null'] },
  },
} as const
export type AuditLogEntry = FromSchema<typeof AuditLogEntry>

export const AuditLogList = { type: 'array', items: AuditLogEntry } as const
