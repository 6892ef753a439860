import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchema, FastifySchemaCompiler } from 'fastify'

// ajv-formats is CommonJS with a default export; under NodeNext it arrives as the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

/**
 * Schemas may carry `errorMessages: { <keyword>: "<message>" }` to override the wording of a rule
 * (the API's Spanish messages); everything else is worded the way class-validator words it.
 */
const baseOptions: Options = {
  // All errors are collected and the first one in the schema's field order is reported, the way
  // class-validator reports the first field's failure rather than whichever rule ajv ran first.
  allErrors: true,
  verbose: true,
  useDefaults: true,
  removeAdditional: true,
  strict: false,
  keywords: ['errorMessages', 'example'],
}

function createAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ ...baseOptions, coerceTypes })
  addFormats(ajv)
  return ajv
}

// JSON bodies keep their types ("2" is not a quantity); query strings and path params are text and are coerced.
const bodyAjv = createAjv(false)
const textAjv = createAjv(true)

/** Compiles `schema`; on failure `errors` are ordered by the schema's field order. */
function compileOrdered(ajv: Ajv, schema: object) {
  const validate = ajv.compile(schema)
  const order = Object.keys((schema as { properties?: object }).properties ?? {})
  const rank = (error: ErrorObject): number => {
    const field =
      error.instancePath === '' && error.keyword === 'required'
        ? String(error.params.missingProperty)
        : (error.instancePath.split('/')[1] ?? '')
    const index = order.indexOf(field)
    return index === -1 ? order.length : index
  }
  const minProperties = (schema as { minProperties?: number }).minProperties
  const ordered = (data: unknown): boolean => {
    const valid = validate(data) as boolean
    // Array.prototype.sort is stable: within one field, ajv's own order is kept.
    ordered.errors = valid ? null : [...(validate.errors ?? [])].sort((a, b) => rank(a) - rank(b))
    // ajv counts the fields before it drops the unknown ones (removeAdditional): `{"foo": 1}` passed
    // `minProperties: 1` and reached the handler empty. Counted again after the drop.
    if (valid && minProperties !== undefined && typeof data === 'object' && data !== null && Object.keys(data).length < minProperties) {
      ordered.errors = [{ keyword: 'minProperties', instancePath: '', schemaPath: '#/minProperties', params: { limit: minProperties }, parentSchema: schema }]
      return false
    }
    return valid
  }
  ordered.errors = null as ErrorObject[] | null
  return ordered
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  compileOrdered(httpPart === 'body' ? bodyAjv : textAjv, schema as object) as unknown as ValidateFunction

/** Compiles a schema for validating data outside a route (multipart fields), with the same wording. */
export function compileValidator<T>(schema: object, coerce = false): (data: unknown) => T {
  const validate = compileOrdered(coerce ? textAjv : bodyAjv, schema)
  return (data: unknown) => {
    if (!validate(data)) throw new ValidationError(formatValidationError(validate.errors ?? []))
    return data as T
  }
}

export class ValidationError extends Error {
  readonly statusCode = 422
  readonly validation = true
}

function fieldName(error: ErrorObject, dataVar: string): string {
  if (error.keyword === 'required') return String(error.params.missingProperty)
  const segments = error.instancePath.split('/').filter(Boolean)
  return segments.at(-1) ?? dataVar
}

/** The message of the first failed rule, in class-validator's wording unless the schema overrides it. */
export function formatValidationError(errors: ErrorObject[], dataVar = 'body'): string {
  const error = errors[0]
  if (!error) return 'Validation failed'
  const field = fieldName(error, dataVar)
  const parent = error.parentSchema as { errorMessages?: Record<string, string>; properties?: Record<string, any> } | undefined
  const override =
    error.keyword === 'required'
      ? parent?.properties?.[field]?.errorMessages?.required
      : parent?.errorMessages?.[error.keyword]
  if (override) return override
  const p = error.params as Record<string, any>
  switch (error.keyword) {
    case 'required':
      return `${field} should not be empty`
    case 'type':
      if (error.instancePath === '') return `${dataVar} must be an object`
      return `${field} must be ${typeName(String(p.type))}`
    case 'minLength':
      return p.limit === 1 ? `${field} should not be empty` : `${field} must be longer than or equal to ${p.limit} characters`
    case 'maxLength':
      return `${field} must be shorter than or equal to ${p.limit} characters`
    case 'format':
      return p.format === 'email' ? `${field} must be a valid email` : `${field} must be a valid ${p.format}`
    case 'minimum':
      return `${field} must not be less than ${p.limit}`
    case 'maximum':
      return `${field} must not be greater than ${p.limit}`
    case 'enum':
      return `${field} must be one of the following values: ${(p.allowedValues as unknown[]).join(', ')}`
    case 'pattern':
      return `${field} has an invalid format`
    case 'minProperties':
      return `${dataVar} must contain at least one field`
    case 'additionalProperties':
      return `property ${String(p.additionalProperty)} should not exist`
    default:
      return `${field} is invalid`
  }
}

function typeName(type: string): string {
  switch (type) {
    case 'integer':
      return 'an integer number'
    case 'number':
      return 'a number'
    case 'string':
      return 'a string'
    case 'boolean':
      return 'a boolean value'
    case 'array':
      return 'an array'
    default:
      return `a valid ${type.replace(/,/g, ' or ')}`
  }
}

/** Fastify hook: turns ajv's errors into the single message of the 422 body. */
export function schemaErrorFormatter(errors: ErrorObject[], dataVar: string): Error {
  return new ValidationError(formatValidationError(errors, dataVar))
}

/** Path parameter `:id`: a positive integer that fits every dialect's integer column. */
export const IdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'integer', minimum: 1, maximum: 2147483647 } },
} as const satisfies FastifySchema['params']

export const ErrorResponse = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string' } },
} as const

export const MessageResponse = {
  type: 'object',
  required: ['message'],
  properties: { message: { type: 'string' } },
} as const

/** Query string of paged lists. */
export const PageQueryProperties = {
  limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
  offset: { type: 'integer', minimum: 0, maximum: 1_000_000_000, default: 0 },
} as const
