import type { FromSchema } from 'json-schema-to-ts'
import { CountryCode } from '../addresses/addresses.schemas.js'

/** A number or a decimal string with at most 2 decimals ("4.90"), read by parseAmount like a product price. */
const amount = {
  anyOf: [{ type: 'number' }, { type: 'string' }],
  description: 'A number or a decimal string, at most 2 decimals: 4.9 or "4.90".',
} as const

const methodFields = {
  name: { type: 'string', minLength: 1, maxLength: 100 },
  price: amount,
  countries: { type: 'array', items: CountryCode, maxItems: 300, uniqueItems: true },
  freeOver: { anyOf: [...amount.anyOf, { type: 'null' }], description: 'The subtotal from which the method costs 0; null: never free.' },
  active: { type: 'boolean' },
  taxClass: { type: 'string', minLength: 1, maxLength: 200, description: 'The tax class of its price; `standard` when left out.' },
} as const

export const CreateShippingMethodBody = {
  type: 'object',
  required: ['name', 'price'],
  properties: methodFields,
  additionalProperties: false,
} as const

export const UpdateShippingMethodBody = {
  type: 'object',
  properties: methodFields,
  additionalProperties: false,
  minProperties: 1,
} as const

export const ListShippingMethodsQuery = {
  type: 'object',
  properties: {
    country: CountryCode,
    all: { type: 'boolean', default: false, description: 'Admins only: inactive methods too.' },
  },
  additionalProperties: false,
} as const

export const ShippingMethod = {
  title: 'ShippingMethod',
  type: 'object',
  required: ['id', 'name', 'price', 'countries', 'freeOver', 'active', 'taxClass', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    price: { type: 'number' },
    countries: { type: 'array', items: { type: 'string' } },
    freeOver: { type: ['number', 'null'] },
    active: { type: 'boolean' },
    taxClass: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const

export const ShippingMethodList = { type: 'array', items: ShippingMethod } as const

/** What an order keeps of its method. */
export const ShippingMethodSnapshot = {
  title: 'ShippingMethodSnapshot',
  type: 'object',
  required: ['id', 'name', 'price'],
  properties: { id: { type: 'integer' }, name: { type: 'string' }, price: { type: 'number' } },
} as const

export type CreateShippingMethodInput = FromSchema<typeof CreateShippingMethodBody>
export type UpdateShippingMethodInput = FromSchema<typeof UpdateShippingMethodBody>
export type ListShippingMethodsQuery = FromSchema<typeof ListShippingMethodsQuery>
export type ShippingMethod = FromSchema<typeof ShippingMethod>
export type ShippingMethodSnapshot = FromSchema<typeof ShippingMethodSnapshot>
