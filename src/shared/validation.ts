import { Ajv, type ErrorObject, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchema, FastifySchemaCompiler, FastifyTypeProvider } from 'fastify'
import type { FromSchema, JSONSchema } from 'json-schema-to-ts'
import { errorCodes, messages } from './errors.js'

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
  // A misspelt keyword, or a rule on the wrong type, is an error when the route is built, not a rule
  // silently skipped.
  strict: true,
  keywords: ['errorMessages', 'example'],
}

/**
 * The one rule for text: control characters (Unicode category Cc: U+0000–U+001F, U+007F–U+009F) are
 * refused, except tab, line feed and carriage return, which free text such as a description holds.
 * PostgreSQL cannot store U+0000 in text at all, and no field of the shop means anything by the others.
 */
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/

/** Throws the 422 of the rule above for text validated outside a schema (multipart fields). */
export function assertNoControlCharacters(field: string, text: string): void {
  if (CONTROL_CHARACTERS.test(text)) throw new ValidationError(messages.controlCharacters(field), field)
}

const TEXT_KEYWORD = 'noControlCharacters'

function createAjv(coerceTypes: boolean, removeAdditional = true): Ajv {
  const ajv = new Ajv({ ...baseOptions, coerceTypes, removeAdditional })
  addFormats(ajv)
  // No `type`: it also sits on subschemas that do not say theirs, and passes whatever is not a string.
  ajv.addKeyword({
    keyword: TEXT_KEYWORD,
    schemaType: 'boolean',
    errors: false,
    validate: (enabled: boolean, data: unknown) => !enabled || typeof data !== 'string' || !CONTROL_CHARACTERS.test(data),
  })
  return ajv
}

/**
 * A copy of `schema` with the text rule on every subschema that may hold a string, so no field can
 * forget it: those of type string, and those that say nothing of their type (they accept strings).
 * Conditions (`not`, `if`, `contains`) are left alone, where the rule would change their meaning.
 */
function withTextRule(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withTextRule)
  if (typeof schema !== 'object' || schema === null) return schema
  const source = schema as Record<string, unknown>
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(source)) {
    if (key === 'properties' || key === 'patternProperties' || key === '$defs' || key === 'definitions' || key === 'dependentSchemas') {
      copy[key] = Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([name, sub]) => [name, withTextRule(sub)]))
    } else if (SUBSCHEMA_KEYWORDS.has(key)) {
      copy[key] = typeof value === 'object' ? withTextRule(value) : value
    } else {
      copy[key] = value
    }
  }
  const type = source.type
  const mayBeString = type === undefined || type === 'string' || (Array.isArray(type) && type.includes('string'))
  if (mayBeString && copy[TEXT_KEYWORD] === undefined) copy[TEXT_KEYWORD] = true
  return copy
}

/** Keywords whose value is a subschema or a list of them (the `properties`-like maps are walked apart). */
const SUBSCHEMA_KEYWORDS = new Set([
  'items',
  'prefixItems',
  'additionalProperties',
  'anyOf',
  'oneOf',
  'allOf',
  'then',
  'else',
  'unevaluatedProperties',
  'unevaluatedItems',
])

// JSON bodies keep their types ("2" is not a quantity); query strings and path params are text and are coerced.
const bodyAjv = createAjv(false)
const textAjv = createAjv(true)
/**
 * Query strings are text too, but a parameter the route does not define is refused (`additionalProperties: false`:
 * 422 `property <name> should not exist`) instead of dropped: a misspelt or unsupported filter (`?userId=2` before
 * the orders list had it, `?category=3` for `categoryId`) used to answer the whole unfiltered list as if it applied.
 */
const queryAjv = createAjv(true, false)

/**
 * How a number is written in a query string, a path or a header: decimal digits with an optional sign,
 * fraction and exponent (`10`, `010`, `2.0`, `-1`, `19.99`, `1e3`). ajv's coercion takes whatever `+text`
 * reads: `0x10` as 16, `0b11`, ` 5`, and `Infinity`, `-Infinity` and `1e400` as infinities, which its
 * number rules then skip (they check finite numbers only): `limit=Infinity` reached SQLite and was a 500.
 */
const DECIMAL_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

/** The number `text` writes, or NaN (which every number rule refuses) when it is not a finite decimal. */
export function readDecimalText(text: string): number {
  if (!DECIMAL_TEXT.test(text)) return Number.NaN
  const value = Number(text)
  return Number.isFinite(value) ? value : Number.NaN
}

/** The fields of a text schema (query, params, headers: flat objects) that hold only a number or an integer. */
function numericFields(schema: object): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {}
  return Object.keys(properties).filter((name) => {
    const type = properties[name]?.type
    const types = Array.isArray(type) ? (type as unknown[]) : [type]
    return (types.includes('integer') || types.includes('number')) && !types.includes('string')
  })
}

/**
 * Text → number for the numeric fields of `data`, before ajv sees them: a decimal becomes its number and
 * anything else NaN, so that `Infinity`, `1e400` or `0x10` fail the type rule exactly as `abc` does (422
 * `limit must be an integer number`, `minPrice must be a number`). An empty value is left to ajv (it is
 * `null` for a field that may be null, and a type error otherwise); a repeated parameter (an array) too.
 */
function readNumbers(data: unknown, fields: readonly string[]): void {
  if (typeof data !== 'object' || data === null) return
  const record = data as Record<string, unknown>
  for (const field of fields) {
    const value = record[field]
    if (typeof value === 'string' && value !== '') record[field] = readDecimalText(value)
  }
}

/** Compiles `schema`; on failure `errors` are ordered by the schema's field order. */
function compileOrdered(ajv: Ajv, schema: object) {
  const validate = ajv.compile(withTextRule(schema) as object)
  // Text is turned into numbers here, not by ajv's coercion (see DECIMAL_TEXT).
  const numbers = ajv === bodyAjv ? [] : numericFields(schema)
  const order = Object.keys((schema as { properties?: object }).properties ?? {})
  const rank = (error: ErrorObject): number => {
    const field = error.instancePath === '' && error.keyword === 'required' ? String(error.params.missingProperty) : (error.instancePath.split('/')[1] ?? '')
    const index = order.indexOf(field)
    return index === -1 ? order.length : index
  }
  const minProperties = (schema as { minProperties?: number }).minProperties
  const ordered = (data: unknown): boolean => {
    if (numbers.length > 0) readNumbers(data, numbers)
    const valid = validate(data)
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

const documentOnlySchemas = new WeakSet<object>()

/**
 * Marks a body schema that the route reads and checks itself (a streamed multipart form, say): it is
 * there for /openapi.json, and Fastify does not validate the body against it a second time.
 */
export function documentOnly<T extends object>(schema: T): T {
  documentOnlySchemas.add(schema)
  return schema
}

const acceptAll = () => true

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body' && documentOnlySchemas.has(schema as object)) {
    // Still compiled in the tests, so strict mode catches a misspelt keyword in what the documentation shows.
    if (COMPILE_AT_START) bodyAjv.compile(schema as object)
    return acceptAll
  }
  const compile = () => compileOrdered(httpPart === 'body' ? bodyAjv : httpPart === 'querystring' ? queryAjv : textAjv, schema as object)
  return COMPILE_AT_START ? compile() : compileOnFirstUse(compile)
}

/**
 * Under the tests every route's validators are compiled at start-up, so that strict mode refuses a bad schema
 * before any request. Elsewhere each is compiled when its route first validates something: compiling them all
 * took about a fifth of the service's start-up (scripts/start.mjs), and a route's first request pays its share
 * (a millisecond or two) instead.
 */
const COMPILE_AT_START = process.env.NODE_ENV === 'test'

type Validate = ((data: unknown) => boolean) & { errors: ErrorObject[] | null }

function compileOnFirstUse(compile: () => Validate): Validate {
  let compiled: Validate | undefined
  const validate = (data: unknown): boolean => {
    compiled ??= compile()
    const valid = compiled(data)
    validate.errors = compiled.errors
    return valid
  }
  validate.errors = null as ErrorObject[] | null
  return validate
}

/** Compiles a schema for validating data outside a route (multipart fields), with the same wording. */
export function compileValidator<T>(schema: object, coerce = false): (data: unknown) => T {
  const validate = compileOrdered(coerce ? textAjv : bodyAjv, schema)
  return (data: unknown) => {
    if (!validate(data)) throw validationError(validate.errors ?? [], 'body')
    return data as T
  }
}

/**
 * A 422: the message of the failed rule and the field it names (`email`, `quantity`, `idempotency-key`, `limit`; the
 * part itself, `body` or `querystring`, when the rule is about the whole of it). Its code is `validation_failed`.
 */
export class ValidationError extends Error {
  readonly statusCode = 422
  readonly validation = true
  readonly code = 'validation_failed'

  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message)
    this.name = 'ValidationError'
  }
}

function fieldName(error: ErrorObject, dataVar: string): string {
  if (error.keyword === 'required') return String(error.params.missingProperty)
  if (error.keyword === 'additionalProperties') return String(error.params.additionalProperty)
  // An array item is named by its array (`tags`, not `1`).
  const segments = error.instancePath.split('/').filter((segment) => segment !== '' && !/^\d+$/.test(segment))
  return segments.at(-1) ?? dataVar
}

/** The ValidationError of the first failed rule (see formatValidationError), with the field it names. */
function validationError(errors: ErrorObject[], dataVar: string): ValidationError {
  const error = errors[0]
  return new ValidationError(formatValidationError(errors, dataVar), error ? fieldName(error, dataVar) : dataVar)
}

/** The message of the first failed rule, in class-validator's wording unless the schema overrides it. */
export function formatValidationError(errors: ErrorObject[], dataVar = 'body'): string {
  const error = errors[0]
  if (!error) return 'Validation failed'
  const field = fieldName(error, dataVar)
  const parent = error.parentSchema as
    { errorMessages?: Record<string, string>; properties?: Record<string, { errorMessages?: Record<string, string> }> } | undefined
  const override = error.keyword === 'required' ? parent?.properties?.[field]?.errorMessages?.required : parent?.errorMessages?.[error.keyword]
  if (override) return override
  const p = error.params
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
    case 'maxItems':
      return `${field} must contain no more than ${p.limit} elements`
    case 'minProperties':
      return `${dataVar} must contain at least one field`
    case 'additionalProperties':
      return `property ${String(p.additionalProperty)} should not exist`
    case TEXT_KEYWORD:
      return messages.controlCharacters(field)
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

/** Fastify hook: turns ajv's errors into the 422 of the first failed rule (its message and its field). */
export function schemaErrorFormatter(errors: ErrorObject[], dataVar: string): Error {
  return validationError(errors, dataVar)
}

/**
 * Route types come from the route's own JSON schemas (`app.withTypeProvider<SchemaTypes>()`): body,
 * params, query, headers and each response, written once. json-schema-to-ts reads the `as const`
 * schemas as they are, `errorMessages` and all, and is types only (nothing of it runs). TypeBox, tried
 * on users, cost the same to type-check but rewrote every schema into builder calls (twice the diff,
 * and `Type.Unsafe` for an enum that keeps its `type` and messages) and ships code to production.
 */
export interface SchemaTypes extends FastifyTypeProvider {
  validator: this['schema'] extends JSONSchema ? FromSchema<this['schema']> : unknown
  serializer: this['schema'] extends JSONSchema ? FromSchema<this['schema']> : unknown
}

/** Path parameter `:id`: a positive integer that fits every dialect's integer column. */
export const IdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'integer', minimum: 1, maximum: 2147483647 } },
} as const satisfies FastifySchema['params']
export type IdParams = FromSchema<typeof IdParams>

export const ErrorResponse = {
  title: 'Error',
  type: 'object',
  description: 'An error: its message as `{"error": "..."}`, or problem details (`Problem`) when the request asks for them.',
  required: ['error'],
  properties: { error: { type: 'string' } },
} as const

/**
 * The other body of every error (docs/api.md, "Problem details"): RFC 9457 problem details, answered as
 * `application/problem+json` to a request whose Accept lists that type. Only documented: the error handler writes it
 * (plugins/errors.ts), and src/plugins/docs.ts offers it beside `Error` on every error answer of the document.
 */
export const ProblemResponse = {
  title: 'Problem',
  type: 'object',
  description: 'RFC 9457 problem details, for a request whose Accept lists application/problem+json.',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: {
      type: 'string',
      format: 'uri-reference',
      description: '`/problems/<code>`: the problem type, a URI reference relative to the service (an identifier; nothing is served there).',
      example: '/problems/insufficient_stock',
    },
    title: { type: 'string', description: "The code's short English summary, the same for every occurrence.", example: 'Insufficient stock' },
    status: { type: 'integer', description: 'The HTTP status of the answer.', example: 409 },
    detail: { type: 'string', description: 'The message, word for word what the `error` body would say.', example: 'Stock insuficiente' },
    code: {
      type: 'string',
      enum: Object.keys(errorCodes),
      description: 'What went wrong, for a program to act on: stable, snake_case (docs/api.md lists them all; new ones may be added).',
      example: 'insufficient_stock',
    },
    field: {
      type: 'string',
      description: 'The field the error is about: the one the failed rule names for `validation_failed`, and a few others (`email` of `email_taken`).',
      example: 'quantity',
    },
  },
} as const

export const MessageResponse = {
  title: 'Message',
  type: 'object',
  required: ['message'],
  properties: { message: { type: 'string' } },
} as const

/** The query string of a list that takes no parameter (GET /categories): any parameter is refused, as on the other lists. */
export const NoQuery = { type: 'object', properties: {}, additionalProperties: false } as const

/** Query string of paged lists. */
export const PageQueryProperties = {
  limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
  offset: { type: 'integer', minimum: 0, maximum: 1_000_000_000, default: 0 },
} as const
