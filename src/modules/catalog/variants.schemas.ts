import { parseCents } from '../../shared/money.js'
import { assertNoControlCharacters, documentOnly, ValidationError } from '../../shared/validation.js'

export const OPTION_NAME_MAX = 50
export const OPTION_VALUE_MAX = 100
/** Values one option request may list; variants one request may create. */
export const BATCH_MAX = 100
const SKU = /^[A-Za-z0-9._\-/]{1,64}$/
export const TAX_CLASS_MAX = 50
const PRICE_MAX_CENTS = 9_999_999_999 // 99,999,999.99, as a product's price
const INT_MAX = 2_147_483_647

const amount = {
  anyOf: [{ type: 'number', minimum: 0, maximum: PRICE_MAX_CENTS / 100 }, { type: 'string' }],
  description: 'At most 2 decimals: 19.99 or "19.99".',
} as const

/*
 * The bodies below are for /openapi.json: the service reads each body itself (parse* below), in the documented field
 * order, so that a variant and a batch of them get the same messages. documentOnly keeps Fastify from checking twice.
 */
export const CreateOptionBody = documentOnly({
  title: 'NewProductOption',
  type: 'object',
  required: ['name', 'defaultValue'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: OPTION_NAME_MAX, description: 'Trimmed; unique per product, ignoring case.' },
    values: {
      type: 'array',
      maxItems: BATCH_MAX,
      items: { type: 'string', minLength: 1, maxLength: OPTION_VALUE_MAX },
      description: 'Kept once ignoring case.',
    },
    defaultValue: {
      type: 'string',
      minLength: 1,
      maxLength: OPTION_VALUE_MAX,
      description: 'The value every existing variant takes; added to `values` when missing.',
    },
  },
} as const)

export const UpdateOptionBody = documentOnly({
  type: 'object',
  minProperties: 1,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: OPTION_NAME_MAX },
    position: { type: 'integer', minimum: 0, maximum: INT_MAX, description: 'The new place among the options, from 0 (past the end: last).' },
  },
} as const)

export const UpdateOptionValueBody = documentOnly({
  type: 'object',
  minProperties: 1,
  properties: {
    value: { type: 'string', minLength: 1, maxLength: OPTION_VALUE_MAX },
    position: { type: 'integer', minimum: 0, maximum: INT_MAX, description: 'The new place among the option’s values, from 0.' },
  },
} as const)

const variantInputProperties = {
  options: {
    type: 'object',
    additionalProperties: { type: 'string', minLength: 1, maxLength: OPTION_VALUE_MAX },
    description: '`{<option name>: <value>}`, naming every option of the product once (names ignoring case); a new value joins its option.',
  },
  price: amount,
  compareAtPrice: { anyOf: [amount, { type: 'null' }] },
  stock: { type: 'integer', minimum: 0, maximum: INT_MAX },
  sku: { type: ['string', 'null'], pattern: SKU.source, description: '1 to 64 of A-Z a-z 0-9 . _ - /; unique ignoring case.' },
  imageId: { type: ['integer', 'null'], minimum: 1, maximum: INT_MAX, description: 'An image of the same product.' },
  taxClass: { type: ['string', 'null'], minLength: 1, maxLength: TAX_CLASS_MAX, description: 'null: the product’s.' },
} as const

export const NewVariant = {
  title: 'NewVariant',
  type: 'object',
  required: ['price'],
  properties: variantInputProperties,
} as const

export const CreateVariantsBody = documentOnly({
  anyOf: [NewVariant, { type: 'array', minItems: 1, maxItems: BATCH_MAX, items: NewVariant }],
  description: 'One variant, or an array of 1 to 100 created together (all or nothing).',
} as const)

export const UpdateVariantBody = documentOnly({
  type: 'object',
  minProperties: 1,
  properties: {
    ...variantInputProperties,
    position: { type: 'integer', minimum: 0, maximum: INT_MAX, description: 'The new place among the product’s variants, from 0 (past the end: last).' },
  },
} as const)

function fail(field: string, message: string): never {
  throw new ValidationError(message, field)
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A trimmed text of 1 to `max` characters. */
function text(field: string, value: unknown, max: number, label = field): string {
  if (typeof value !== 'string') fail(field, `${label} must be a string`)
  const trimmed = value.trim()
  if (trimmed === '') fail(field, `${label} should not be empty`)
  if (trimmed.length > max) fail(field, `${label} must be shorter than or equal to ${max} characters`)
  assertNoControlCharacters(field, trimmed)
  return trimmed
}

function integer(field: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) fail(field, `${field} must be an integer number`)
  if (value < min) fail(field, `${field} must not be less than ${min}`)
  if (value > INT_MAX) fail(field, `${field} must not be greater than ${INT_MAX}`)
  return value
}

/** An amount as a product's price is read: a number or a decimal string, ≥ 0, at most 2 decimals. */
function cents(field: string, value: unknown): number {
  if (typeof value !== 'string' && typeof value !== 'number') fail(field, `${field} must be a number conforming to the specified constraints`)
  if (typeof value === 'string' && value.trim() === '') fail(field, `${field} should not be empty`)
  const asNumber = Number(value)
  if (Number.isFinite(asNumber) && asNumber < 0) fail(field, `${field} must not be less than 0`)
  const result = parseCents(value)
  if (result === null) fail(field, `${field} must be a number conforming to the specified constraints`)
  if (result > PRICE_MAX_CENTS) fail(field, `${field} must not be greater than 99999999.99`)
  return result
}

function body(raw: unknown): Record<string, unknown> {
  if (!isRecord(raw)) fail('body', 'body must be an object')
  return raw
}

function atLeastOne(raw: Record<string, unknown>, fields: readonly string[]): void {
  if (!fields.some((field) => raw[field] !== undefined)) fail('body', 'body must contain at least one field')
}

export interface NewOptionInput {
  name: string
  values: string[]
  defaultValue: string
}

/** POST /products/:id/options. Values are kept once ignoring case (the first spelling wins), as tags are. */
export function parseNewOption(raw: unknown): NewOptionInput {
  const input = body(raw)
  const { name, values } = optionNameAndValues(input)
  if (input.defaultValue === undefined || input.defaultValue === null) fail('defaultValue', 'defaultValue should not be empty')
  const defaultValue = text('defaultValue', input.defaultValue, OPTION_VALUE_MAX)
  return { name, values, defaultValue }
}

/** An option's `name` and its `values` (each once ignoring case, the first spelling kept). */
function optionNameAndValues(input: Record<string, unknown>): { name: string; values: string[] } {
  const name = input.name === undefined ? fail('name', 'name should not be empty') : text('name', input.name, OPTION_NAME_MAX)
  const values: string[] = []
  if (input.values !== undefined) {
    if (!Array.isArray(input.values)) fail('values', 'values must be an array')
    if (input.values.length > BATCH_MAX) fail('values', `values must contain no more than ${BATCH_MAX} elements`)
    for (const value of input.values) {
      const trimmed = text('values', value, OPTION_VALUE_MAX, 'each value in values')
      if (!values.some((v) => v.toLowerCase() === trimmed.toLowerCase())) values.push(trimmed)
    }
  }
  return { name, values }
}

/** PATCH /products/:id/options/:optionId. */
export function parseOptionChange(raw: unknown): { name?: string; position?: number } {
  const input = body(raw)
  atLeastOne(input, ['name', 'position'])
  return {
    ...(input.name !== undefined ? { name: text('name', input.name, OPTION_NAME_MAX) } : {}),
    ...(input.position !== undefined ? { position: integer('position', input.position, 0) } : {}),
  }
}

/** PATCH /products/:id/options/:optionId/values/:valueId. */
export function parseValueChange(raw: unknown): { value?: string; position?: number } {
  const input = body(raw)
  atLeastOne(input, ['value', 'position'])
  return {
    ...(input.value !== undefined ? { value: text('value', input.value, OPTION_VALUE_MAX) } : {}),
    ...(input.position !== undefined ? { position: integer('position', input.position, 0) } : {}),
  }
}

/** A variant's fields after conversion; absent ones were not sent. */
export interface VariantInput {
  /** Option name (as sent) → value (trimmed). */
  options?: Array<{ name: string; value: string }>
  priceCents?: number
  compareAtCents?: number | null
  stock?: number
  /** As sent; null for none. */
  sku?: string | null
  imageId?: number | null
  taxClass?: string | null
  position?: number
}

const VARIANT_FIELDS = ['options', 'price', 'compareAtPrice', 'stock', 'sku', 'imageId', 'taxClass', 'position'] as const

/** One variant of POST /products/:id/variants (`create`: price required) or the body of PATCH /variants/:id. */
export function parseVariantInput(raw: unknown, create: boolean): VariantInput {
  const input = body(raw)
  if (!create) atLeastOne(input, VARIANT_FIELDS)
  const out: VariantInput = {}
  if (input.options !== undefined) {
    if (!isRecord(input.options)) fail('options', 'options must be an object')
    out.options = Object.entries(input.options).map(([name, value]) => {
      assertNoControlCharacters('options', name)
      return { name: name.trim(), value: text('options', value, OPTION_VALUE_MAX, 'each value in options') }
    })
  }
  if (input.price !== undefined) out.priceCents = cents('price', input.price)
  else if (create) fail('price', 'price should not be empty')
  if (input.compareAtPrice !== undefined) out.compareAtCents = parseCompareAt(input.compareAtPrice)
  if (input.stock !== undefined) out.stock = integer('stock', input.stock, 0)
  if (input.sku !== undefined) out.sku = parseSku(input.sku)
  if (input.imageId !== undefined) out.imageId = input.imageId === null ? null : integer('imageId', input.imageId, 1)
  if (input.taxClass !== undefined) out.taxClass = input.taxClass === null ? null : parseTaxClass(input.taxClass)
  // A new variant comes last; PATCH moves it.
  if (!create && input.position !== undefined) out.position = integer('position', input.position, 0)
  return out
}

/** A SKU as sent (null: none); a product's create and update read it the same way for its default variant. */
export function parseSku(value: unknown): string | null {
  if (value !== null && (typeof value !== 'string' || !SKU.test(value))) fail('sku', "sku must be null or 1 to 64 letters, digits, '.', '_', '-' or '/'")
  return value
}

/** A compare-at amount in cents (null: none). */
export function parseCompareAt(value: unknown): number | null {
  return value === null ? null : cents('compareAtPrice', value)
}

/** A tax class code: trimmed, 1 to 50 characters. */
export function parseTaxClass(value: unknown): string {
  return text('taxClass', value, TAX_CLASS_MAX)
}

/** The options of a JSON product create: `[{name, values?}]`, names and values as POST /products/:id/options reads them. */
export function parseCreateOptions(raw: unknown): Array<{ name: string; values: string[] }> {
  if (!Array.isArray(raw)) fail('options', 'options must be an array')
  if (raw.length === 0) fail('options', 'options should not be empty')
  if (raw.length > BATCH_MAX) fail('options', `options must contain no more than ${BATCH_MAX} elements`)
  return raw.map((item) => {
    if (!isRecord(item)) fail('options', 'each value in options must be an object')
    return optionNameAndValues(item)
  })
}

/** The variants of a JSON product create: an array of 1 to 100 variants. */
export function parseCreateVariants(raw: unknown): VariantInput[] {
  if (!Array.isArray(raw)) fail('variants', 'variants must be an array')
  if (raw.length === 0) fail('variants', 'variants should not be empty')
  if (raw.length > BATCH_MAX) fail('variants', `variants must contain no more than ${BATCH_MAX} elements`)
  return raw.map((item) => parseVariantInput(item, true))
}

/** The body of POST /products/:id/variants: one variant, or an array of 1 to 100. */
export function parseNewVariants(raw: unknown): { inputs: VariantInput[]; batch: boolean } {
  if (!Array.isArray(raw)) return { inputs: [parseVariantInput(raw, true)], batch: false }
  if (raw.length === 0) fail('body', 'body should not be empty')
  if (raw.length > BATCH_MAX) fail('body', `body must contain no more than ${BATCH_MAX} elements`)
  return { inputs: raw.map((item) => parseVariantInput(item, true)), batch: true }
}
