import type { FromSchema } from 'json-schema-to-ts'
import { CountryCode } from '../addresses/addresses.schemas.js'

/** A class code: 1–30 of a-z, 0-9 and _. */
export const TAX_CLASS_CODE = /^[a-z0-9_]{1,30}$/

const className = { type: 'string', minLength: 1, maxLength: 100 } as const

export const CreateTaxClassBody = {
  type: 'object',
  required: ['code', 'name'],
  properties: {
    code: { type: 'string', minLength: 1, maxLength: 30, pattern: '^[a-z0-9_]+$', description: '1–30 of a-z, 0-9 and _; never changes.' },
    name: className,
  },
  additionalProperties: false,
} as const

export const UpdateTaxClassBody = {
  type: 'object',
  required: ['name'],
  properties: { name: className },
  additionalProperties: false,
} as const

export const TaxClassParams = {
  type: 'object',
  required: ['code'],
  properties: { code: { type: 'string', maxLength: 200 } },
} as const

export const TaxClass = {
  title: 'TaxClass',
  type: 'object',
  required: ['id', 'code', 'name', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'integer' },
    code: { type: 'string' },
    name: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const

export const TaxClassList = { type: 'array', items: TaxClass } as const

/** A percentage with at most 2 decimals, a number or a decimal string: 21, 5.5 or "10.00". */
const rate = {
  anyOf: [{ type: 'number' }, { type: 'string' }],
  description: 'A percentage from 0 to 100, at most 2 decimals: 21, 5.5 or "10.00".',
} as const

const rateFields = {
  country: CountryCode,
  region: { type: ['string', 'null'], minLength: 1, maxLength: 100, description: 'A region of the country (matched ignoring case); null: the whole country.' },
  taxClass: { type: 'string', minLength: 1, maxLength: 200, description: 'A tax class code.' },
  rate,
  name: { type: ['string', 'null'], minLength: 1, maxLength: 100, description: 'Shown on tax lines; `IVA <rate>%` when left out or null.' },
} as const

export const CreateTaxRateBody = {
  type: 'object',
  required: ['country', 'taxClass', 'rate'],
  properties: rateFields,
  additionalProperties: false,
} as const

export const UpdateTaxRateBody = {
  type: 'object',
  properties: rateFields,
  additionalProperties: false,
  minProperties: 1,
} as const

export const ListTaxRatesQuery = {
  type: 'object',
  properties: { country: CountryCode, taxClass: { type: 'string', maxLength: 200 } },
  additionalProperties: false,
} as const

export const TaxRate = {
  title: 'TaxRate',
  type: 'object',
  required: ['id', 'country', 'region', 'taxClass', 'rate', 'name', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'integer' },
    country: { type: 'string' },
    region: { type: ['string', 'null'] },
    taxClass: { type: 'string' },
    rate: { type: 'number', description: 'A percentage: 21 is 21 %.' },
    name: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const

export const TaxRateList = { type: 'array', items: TaxRate } as const

export type CreateTaxClassInput = FromSchema<typeof CreateTaxClassBody>
export type UpdateTaxClassInput = FromSchema<typeof UpdateTaxClassBody>
export type CreateTaxRateInput = FromSchema<typeof CreateTaxRateBody>
export type UpdateTaxRateInput = FromSchema<typeof UpdateTaxRateBody>
export type ListTaxRatesQuery = FromSchema<typeof ListTaxRatesQuery>
export type TaxClass = FromSchema<typeof TaxClass>
export type TaxRate = FromSchema<typeof TaxRate>
