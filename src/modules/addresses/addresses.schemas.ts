import type { FromSchema } from 'json-schema-to-ts'
import { COUNTRY_CODES } from '../../shared/countries.js'
import { messages } from '../../shared/errors.js'

/** `ES`, `FR`: an officially assigned ISO 3166-1 alpha-2 code in upper case; anything else gets one message. */
export const CountryCode = {
  title: 'CountryCode',
  type: 'string',
  enum: COUNTRY_CODES,
  errorMessages: { enum: messages.invalidCountry, type: messages.invalidCountry },
} as const

const required = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength }) as const
const optional = (maxLength: number) => ({ type: ['string', 'null'], maxLength }) as const

/** The fields of an address, in the order their rules are checked (the first failure is the answer). */
export const addressFields = {
  fullName: required(100),
  line1: required(200),
  line2: optional(200),
  city: required(100),
  region: optional(100),
  postalCode: required(20),
  country: CountryCode,
  phone: optional(30),
} as const

export const CreateAddressBody = {
  type: 'object',
  required: ['fullName', 'line1', 'city', 'postalCode', 'country'],
  properties: addressFields,
  additionalProperties: false,
} as const

export const UpdateAddressBody = {
  type: 'object',
  properties: {
    ...addressFields,
    // A required field may change, not be cleared.
    fullName: required(100),
    line1: required(200),
    city: required(100),
    postalCode: required(20),
  },
  additionalProperties: false,
  minProperties: 1,
} as const

const text = { type: 'string' } as const
const nullableText = { type: ['string', 'null'] } as const

/** An address as an order keeps it: its fields, without id or owner (an inline address has neither). */
export const AddressSnapshot = {
  title: 'AddressSnapshot',
  type: 'object',
  required: ['fullName', 'line1', 'line2', 'city', 'region', 'postalCode', 'country', 'phone'],
  properties: { fullName: text, line1: text, line2: nullableText, city: text, region: nullableText, postalCode: text, country: text, phone: nullableText },
} as const

export const Address = {
  title: 'Address',
  type: 'object',
  required: ['id', 'userId', ...AddressSnapshot.required, 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'integer' },
    userId: { type: 'integer' },
    ...AddressSnapshot.properties,
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const

export const AddressList = { type: 'array', items: Address } as const

export type CreateAddressInput = FromSchema<typeof CreateAddressBody>
export type UpdateAddressInput = FromSchema<typeof UpdateAddressBody>
export type Address = FromSchema<typeof Address>
export type AddressSnapshot = FromSchema<typeof AddressSnapshot>
