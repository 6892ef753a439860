import type { FromSchema } from 'json-schema-to-ts'
import { parseCents } from '../../shared/money.js'
import { assertNoControlCharacters, documentOnly, PageQueryProperties, ValidationError } from '../../shared/validation.js'

export const PRODUCT_SORTS = ['newest', 'price_asc', 'price_desc', 'name'] as const
export type ProductSort = (typeof PRODUCT_SORTS)[number]

export const ListProductsQuery = {
  type: 'object',
  properties: {
    ...PageQueryProperties,
    categoryId: { type: 'integer', minimum: 1, maximum: 2147483647 },
    q: { type: 'string', maxLength: 100 },
    // Checked for at most 2 decimals by the service (see parseAmountFilter).
    minPrice: { type: 'number', minimum: 0 },
    maxPrice: { type: 'number', minimum: 0 },
    sort: { type: 'string', enum: PRODUCT_SORTS, default: 'newest' },
  },
  additionalProperties: false,
} as const

export type ListProductsInput = FromSchema<typeof ListProductsQuery>

export const Product = {
  title: 'Product',
  type: 'object',
  required: ['id', 'name', 'description', 'price', 'stock', 'imageUrl', 'categoryId', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    description: { type: 'string' },
    price: { type: 'number' },
    stock: { type: 'integer' },
    imageUrl: { type: 'string' },
    categoryId: { type: ['integer', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const

/** A product as the API shows it. */
export type Product = FromSchema<typeof Product>

export const ProductList = { type: 'array', items: Product } as const

/** Product fields after conversion; absent ones were not sent. `categoryId: null` clears the category. */
export interface ProductFieldsInput {
  name?: string
  description?: string
  priceCents?: number
  stock?: number
  categoryId?: number | null
}

export const PRODUCT_FIELDS = ['name', 'description', 'price', 'stock', 'categoryId'] as const
const NAME_MAX = 200
const DESCRIPTION_MAX = 5000
const PRICE_MAX_CENTS = 9_999_999_999 // 99,999,999.99
const INT_MAX = 2_147_483_647

/*
 * The bodies of product create and update, for /openapi.json. The routes read them themselves: a
 * multipart form is streamed (the image never sits in memory or in request.body) and its fields,
 * like a JSON update's, are converted and checked by parseProductFields below, whose rules these
 * describe. documentOnly keeps Fastify from validating them a second time.
 */
const productFormFields = {
  name: { type: 'string', minLength: 1, maxLength: NAME_MAX, description: 'Trimmed first: a blank name is empty.' },
  description: { type: 'string', maxLength: DESCRIPTION_MAX },
  price: { type: 'number', minimum: 0, maximum: PRICE_MAX_CENTS / 100, description: 'An amount with at most 2 decimals, such as 19.99.' },
  stock: { type: 'integer', minimum: 0, maximum: INT_MAX },
  categoryId: { type: 'integer', minimum: 1, maximum: INT_MAX, description: 'An existing category.' },
} as const
const image = {
  type: 'string',
  format: 'binary',
  description: 'JPEG, PNG, WebP or GIF (.jpg, .jpeg, .png, .webp, .gif), at most 5 MiB. The only file part.',
} as const

export const CreateProductForm = documentOnly({
  type: 'object',
  description: 'Left out: description "", stock 0, no category.',
  required: ['name', 'price', 'image'],
  properties: { ...productFormFields, image },
} as const)

export const UpdateProductForm = documentOnly({
  type: 'object',
  description: 'Fields left out stay as they are; an empty categoryId takes the product out of its category. A new image replaces the old one.',
  properties: { ...productFormFields, image },
} as const)

export const UpdateProductJson = documentOnly({
  type: 'object',
  description: 'Fields left out stay as they are; no image.',
  minProperties: 1,
  properties: {
    ...productFormFields,
    price: {
      anyOf: [{ type: 'number', minimum: 0, maximum: PRICE_MAX_CENTS / 100 }, { type: 'string' }],
      description: 'A number or a decimal string, at most 2 decimals: 19.99 or "19.99".',
    },
    categoryId: {
      anyOf: [{ type: 'integer', minimum: 1, maximum: INT_MAX }, { type: 'null' }],
      description: 'An existing category, or null to take the product out of its category.',
    },
  },
} as const)

/** POST /products: multipart/form-data only (a body of any other type has no image: 400). */
export const CreateProductBody = { content: { 'multipart/form-data': { schema: CreateProductForm } } } as const

/** PUT /products/:id: multipart/form-data, or JSON without an image. */
export const UpdateProductBody = {
  content: { 'multipart/form-data': { schema: UpdateProductForm }, 'application/json': { schema: UpdateProductJson } },
} as const

function fail(field: string, message: string): never {
  throw new ValidationError(message, field)
}

/**
 * Converts and validates product fields, in the documented field order (the first failed rule wins).
 * `text` is true for multipart values (all strings: "19.99", "10"); JSON keeps its types, except
 * that a price may be a number or a decimal string. `create` makes name and price required.
 */
export function parseProductFields(raw: Record<string, unknown>, options: { create: boolean; text: boolean }): ProductFieldsInput {
  const out: ProductFieldsInput = {}
  const { name, description, price, stock, categoryId } = raw

  if (name !== undefined) {
    if (typeof name !== 'string') fail('name', 'name must be a string')
    const trimmed = name.trim()
    if (trimmed === '') fail('name', 'name should not be empty')
    if (trimmed.length > NAME_MAX) fail('name', `name must be shorter than or equal to ${NAME_MAX} characters`)
    assertNoControlCharacters('name', trimmed)
    out.name = trimmed
  } else if (options.create) fail('name', 'name should not be empty')

  if (description !== undefined) {
    if (typeof description !== 'string') fail('description', 'description must be a string')
    if (description.length > DESCRIPTION_MAX) fail('description', `description must be shorter than or equal to ${DESCRIPTION_MAX} characters`)
    assertNoControlCharacters('description', description)
    out.description = description
  }

  if (price !== undefined) {
    if (typeof price !== 'string' && typeof price !== 'number') fail('price', 'price must be a number conforming to the specified constraints')
    if (typeof price === 'string' && price.trim() === '') fail('price', 'price should not be empty')
    const asNumber = Number(price)
    if (Number.isFinite(asNumber) && asNumber < 0) fail('price', 'price must not be less than 0')
    const cents = parseCents(price)
    if (cents === null) fail('price', 'price must be a number conforming to the specified constraints')
    if (cents > PRICE_MAX_CENTS) fail('price', 'price must not be greater than 99999999.99')
    out.priceCents = cents
  } else if (options.create) fail('price', 'price should not be empty')

  if (stock !== undefined) out.stock = parseInteger('stock', stock, options.text, 0)

  if (categoryId !== undefined) {
    // An empty form value or JSON null takes the product out of its category.
    if (categoryId === null || (options.text && categoryId === '')) out.categoryId = null
    else out.categoryId = parseInteger('categoryId', categoryId, options.text, 1)
  }
  return out
}

function parseInteger(field: string, value: unknown, text: boolean, min: number): number {
  let n: number
  if (text && typeof value === 'string') {
    const trimmed = value.trim()
    if (!/^-?\d+$/.test(trimmed)) fail(field, `${field} must be an integer number`)
    n = Number(trimmed)
  } else if (typeof value === 'number' && Number.isInteger(value)) {
    n = value
  } else {
    fail(field, `${field} must be an integer number`)
  }
  if (n < min) fail(field, `${field} must not be less than ${min}`)
  if (n > INT_MAX) fail(field, `${field} must not be greater than ${INT_MAX}`)
  return n
}
