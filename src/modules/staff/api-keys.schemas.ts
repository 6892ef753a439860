import type { FromSchema } from 'json-schema-to-ts'
import { PageQueryProperties } from '../../shared/validation.js'
import { API_KEY_ROLES } from './permissions.js'

/** The wording of a bad `staffRole`, whatever was sent (owner, another text, a number): class-validator's IsIn. */
const badRole = `staffRole must be one of the following values: ${API_KEY_ROLES.join(', ')}`

export const CreateApiKeyBody = {
  type: 'object',
  required: ['name', 'staffRole'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100, description: 'What the key is for (trimmed): 1–100 characters.' },
    staffRole: {
      type: 'string',
      enum: API_KEY_ROLES,
      errorMessages: { enum: badRole, type: badRole },
      description: 'The staff role the key acts with: never `owner`.',
    },
    expiresAt: {
      type: ['string', 'null'],
      format: 'date-time',
      errorMessages: { format: 'expiresAt must be a valid ISO 8601 date string' },
      description: 'When the key stops working: an instant in the future, with its offset. Absent or null: never.',
    },
  },
  additionalProperties: false,
} as const

export const ListApiKeysQuery = {
  type: 'object',
  properties: PageQueryProperties,
  additionalProperties: false,
} as const

const apiKeyProperties = {
  id: { type: 'integer' },
  name: { type: 'string' },
  staffRole: { type: 'string', enum: API_KEY_ROLES },
  prefix: { type: 'string', description: '`sk_` and the key’s lookup id: the start of its secret, to tell keys apart.' },
  createdBy: { type: ['integer', 'null'], description: 'The admin who made the key; null once that admin is deleted.' },
  createdAt: { type: 'string', format: 'date-time' },
  expiresAt: { type: ['string', 'null'], format: 'date-time' },
  lastUsedAt: { type: ['string', 'null'], format: 'date-time', description: 'The last use, to the minute: written at most once a minute.' },
  revokedAt: { type: ['string', 'null'], format: 'date-time' },
} as const

const apiKeyRequired = ['id', 'name', 'staffRole', 'prefix', 'createdBy', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt'] as const

/** A key as lists show it: never its secret or the secret's hash. */
export const ApiKey = {
  title: 'ApiKey',
  type: 'object',
  required: apiKeyRequired,
  properties: apiKeyProperties,
} as const

/** The answer of a creation or a rotation: the only ones that show the secret. */
export const ApiKeyWithSecret = {
  title: 'ApiKeyWithSecret',
  type: 'object',
  required: [...apiKeyRequired, 'secret'],
  properties: {
    ...apiKeyProperties,
    secret: { type: 'string', description: '`sk_<lookup id>_<43 base64url characters>`: the bearer token of the key, shown only here.' },
  },
} as const

export const ApiKeyList = { type: 'array', items: ApiKey } as const

export type CreateApiKeyInput = FromSchema<typeof CreateApiKeyBody>
export type ListApiKeysQuery = FromSchema<typeof ListApiKeysQuery>
export type ApiKey = FromSchema<typeof ApiKey>
export type ApiKeyWithSecret = FromSchema<typeof ApiKeyWithSecret>
