import type { FromSchema } from 'json-schema-to-ts'
import { messages } from '../../shared/errors.js'
import { parseCents } from '../../shared/money.js'
import { SLUG_PATTERN } from '../../shared/slug.js'
import { assertNoControlCharacters, documentOnly, PageQueryProperties, ValidationError } from '../../shared/validation.js'
import { BATCH_MAX, NewVariant, OPTION_NAME_MAX, OPTION_VALUE_MAX, parseCompareAt, parseSku, parseTaxClass, TAX_CLASS_MAX } from './variants.schemas.js'

export const PRODUCT_SORTS = ['newest', 'price_asc', 'price_desc', 'name'] as const
export type ProductSort = (typeof PRODUCT_SORTS)[number]

/** `status` of the list and the facets: one status, or `any`; naming it at all needs an admin. */
export const LIST_STATUSES = ['active', 'draft', 'archived', 'any'] as const
/** Values of every `option.<Name>` together, at most. */
export const MAX_OPTION_FILTER_VALUES = 10
/** `tag` values, at most (a product has at most 50 tags). */
export const MAX_TAG_FILTER_VALUES = 50
/** A query parameter `option.<Name>`: the prefix, then the option's name. */
export const OPTION_PARAM = /^option\./

/** The filters GET /products and GET /products/facets share. */
const filterProperties = {
  categoryId: { type: 'integer', minimum: 1, maximum: 2147483647, description: 'That category only.' },
  category: {
    type: 'string',
    minLength: 1,
    maxLength: 100,
    description: 'A category id (digits) or slug: that category and its descendants. An unknown one matches nothing.',
  },
  q: { type: 'string', maxLength: 100, description: 'Text in the name or the description, or a whole SKU (case ignored).' },
  tag: {
    type: 'array',
    maxItems: MAX_TAG_FILTER_VALUES,
    items: { type: 'string', minLength: 1, maxLength: 50 },
    description: 'Repeatable: products with any of these tags (case ignored).',
  },
  // Checked for at most 2 decimals by the service (see parseAmountFilter).
  minPrice: { type: 'number', minimum: 0, description: 'Some variant costs at least this (the same variant as maxPrice, inStock and option.*).' },
  maxPrice: { type: 'number', minimum: 0, description: 'Some variant costs at most this.' },
  inStock: {
    type: 'boolean',
    description: '`true`: some matching variant has stock. `false`: some variant matches the other variant filters and none of those has stock.',
  },
  status: { type: 'string', enum: LIST_STATUSES, description: 'Admins only (401/403 otherwise, whatever the value); default `active`.' },
} as const

/**
 * `option.<Name>=<value>` (repeatable; at most 10 values in all): products with one variant having one of these values
 * for that option (name and value ignoring case). A pattern property: Fastify validates it, /openapi.json shows it in the
 * operation's description.
 */
const optionFilterProperties = {
  '^option\\.': { type: 'array', items: { type: 'string', minLength: 1, maxLength: 100 } },
} as const

/** What the `option.<Name>` parameters are, once validated (json-schema-to-ts cannot type a pattern property). */
type OptionParams = { [name: `option.${string}`]: string[] | undefined }

const listProperties = {
  ...PageQueryProperties,
  ...filterProperties,
  sort: { type: 'string', enum: PRODUCT_SORTS, default: 'newest' },
} as const

export const ListProductsQuery = {
  type: 'object',
  properties: listProperties,
  patternProperties: optionFilterProperties,
  additionalProperties: false,
} as const

export type ListProductsInput = FromSchema<{ type: 'object'; properties: typeof listProperties; required: ['limit', 'offset', 'sort'] }> & OptionParams

export const ProductFacetsQuery = {
  type: 'object',
  properties: filterProperties,
  patternProperties: optionFilterProperties,
  additionalProperties: false,
} as const

export type ProductFacetsInput = FromSchema<{ type: 'object'; properties: typeof filterProperties }> & OptionParams

const facetCount = { type: 'integer', description: 'Products (each once).' } as const

export const ProductFacets = {
  title: 'ProductFacets',
  type: 'object',
  required: ['total', 'categories', 'tags', 'options', 'price'],
  properties: {
    total: { type: 'integer', description: 'Products matching every filter.' },
    categories: {
      type: 'array',
      description: 'Every filter but category/categoryId; a category counts its subtree; by count, then name; at most 100.',
      items: {
        type: 'object',
        required: ['id', 'slug', 'name', 'count'],
        properties: { id: { type: 'integer' }, slug: { type: 'string' }, name: { type: 'string' }, count: facetCount },
        additionalProperties: false,
      },
    },
    tags: {
      type: 'array',
      description: 'Every filter but tag; by count, then tag; at most 100.',
      items: {
        type: 'object',
        required: ['tag', 'count'],
        properties: { tag: { type: 'string' }, count: facetCount },
        additionalProperties: false,
      },
    },
    options: {
      type: 'array',
      description: 'Every filter but the option’s own; names by name, values by count then value; at most 100 of each.',
      items: {
        type: 'object',
        required: ['name', 'values'],
        properties: {
          name: { type: 'string' },
          values: {
            type: 'array',
            items: {
              type: 'object',
              required: ['value', 'count'],
              properties: { value: { type: 'string' }, count: facetCount },
              additionalProperties: false,
            },
          },
        },
        additionalProperties: false,
      },
    },
    price: {
      type: ['object', 'null'],
      description: 'The lowest and highest variant price matching every filter but minPrice/maxPrice; null when none does.',
      required: ['min', 'max'],
      properties: { min: { type: 'number' }, max: { type: 'number' } },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const

export type ProductFacets = FromSchema<typeof ProductFacets>

export const PRODUCT_STATUSES = ['draft', 'active', 'archived'] as const

const productSummaryProperties = {
  id: { type: 'integer' },
  name: { type: 'string' },
  slug: { type: 'string' },
  description: { type: 'string' },
  status: { type: 'string', enum: PRODUCT_STATUSES },
  price: { type: 'number', description: 'The lowest variant price.' },
  stock: { type: 'integer', description: 'The sum of the variants’ stock.' },
  imageUrl: { type: ['string', 'null'], description: 'The first image, absolute; null only on a draft without images.' },
  categoryId: { type: ['integer', 'null'] },
  taxClass: { type: 'string' },
  tags: { type: 'array', items: { type: 'string' } },
  priceRange: {
    type: 'object',
    required: ['min', 'max'],
    properties: { min: { type: 'number' }, max: { type: 'number' } },
    additionalProperties: false,
  },
  inStock: { type: 'boolean', description: 'Some variant has stock.' },
  createdAt: { type: 'string', format: 'date-time' },
  updatedAt: { type: 'string', format: 'date-time' },
} as const
const productSummaryRequired = [
  'id',
  'name',
  'slug',
  'description',
  'status',
  'price',
  'stock',
  'imageUrl',
  'categoryId',
  'taxClass',
  'tags',
  'priceRange',
  'inStock',
  'createdAt',
  'updatedAt',
] as const

export const ProductImage = {
  title: 'ProductImage',
  type: 'object',
  required: ['id', 'url', 'alt', 'position'],
  properties: { id: { type: 'integer' }, url: { type: 'string' }, alt: { type: 'string' }, position: { type: 'integer' } },
  additionalProperties: false,
} as const

export const ProductOption = {
  title: 'ProductOption',
  type: 'object',
  required: ['id', 'name', 'position', 'values'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    position: { type: 'integer' },
    values: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'value', 'position'],
        properties: { id: { type: 'integer' }, value: { type: 'string' }, position: { type: 'integer' } },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const

export const Variant = {
  title: 'Variant',
  type: 'object',
  required: [
    'id',
    'productId',
    'sku',
    'title',
    'price',
    'compareAtPrice',
    'stock',
    'optionValues',
    'imageId',
    'taxClass',
    'position',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    id: { type: 'integer' },
    productId: { type: 'integer' },
    sku: { type: ['string', 'null'] },
    title: { type: ['string', 'null'], description: 'The values in option order joined by " / "; null for a default variant.' },
    price: { type: 'number' },
    compareAtPrice: { type: ['number', 'null'] },
    stock: { type: 'integer' },
    optionValues: {
      type: 'array',
      items: {
        type: 'object',
        required: ['optionId', 'name', 'valueId', 'value'],
        properties: { optionId: { type: 'integer' }, name: { type: 'string' }, valueId: { type: 'integer' }, value: { type: 'string' } },
        additionalProperties: false,
      },
    },
    imageId: { type: ['integer', 'null'] },
    taxClass: { type: ['string', 'null'], description: 'null: the product’s.' },
    position: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
  additionalProperties: false,
} as const

/** A product as lists show it: without images, options and variants. */
export const ProductSummary = {
  title: 'ProductSummary',
  type: 'object',
  required: productSummaryRequired,
  properties: productSummaryProperties,
} as const

export const Product = {
  title: 'Product',
  type: 'object',
  required: [...productSummaryRequired, 'images', 'options', 'variants'],
  properties: {
    ...productSummaryProperties,
    images: { type: 'array', items: ProductImage },
    options: { type: 'array', items: ProductOption },
    variants: { type: 'array', items: Variant },
  },
} as const

/** A product as the API shows it alone. */
export type Product = FromSchema<typeof Product>
/** A product as a list shows it. */
export type ProductSummary = FromSchema<typeof ProductSummary>
export type VariantView = FromSchema<typeof Variant>
export type ProductImageView = FromSchema<typeof ProductImage>
export type ProductOptionView = FromSchema<typeof ProductOption>

export const ProductList = { type: 'array', items: ProductSummary } as const

/** Product fields after conversion; absent ones were not sent. `categoryId: null` clears the category. */
export interface ProductFieldsInput {
  name?: string
  description?: string
  priceCents?: number
  stock?: number
  categoryId?: number | null
  slug?: string
  status?: (typeof PRODUCT_STATUSES)[number]
  /** Trimmed, each once ignoring case (the first spelling kept), in the order given. */
  tags?: string[]
  taxClass?: string
  /** The default variant's; null clears it. */
  sku?: string | null
  /** The default variant's; null clears it. */
  compareAtCents?: number | null
}

export const PRODUCT_FIELDS = ['name', 'description', 'price', 'stock', 'categoryId', 'slug', 'status', 'tags', 'taxClass', 'sku', 'compareAtPrice'] as const
/** The fields that belong to the one variant of a product: with several variants, each variant has its own. */
export const VARIANT_FIELDS_OF_PRODUCT = ['priceCents', 'stock', 'sku', 'compareAtCents'] as const
const TAG_MAX = 50
const TAGS_MAX = 50
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
  slug: {
    type: 'string',
    pattern: '^(?=.*[a-z])[a-z0-9-]{1,100}$',
    description: 'Made from the name when left out; `facets` is reserved. A change keeps the old slug as a redirect.',
  },
  status: { type: 'string', enum: PRODUCT_STATUSES, description: '`active` by default; a product without images can only be a draft.' },
  tags: { type: 'string', description: 'Comma-separated: each trimmed, 1 to 50 characters, kept once ignoring case; at most 50.' },
  taxClass: { type: 'string', minLength: 1, maxLength: TAX_CLASS_MAX, description: 'A tax class code; `standard` when left out.' },
  sku: {
    type: 'string',
    pattern: '^[A-Za-z0-9._\\-/]{1,64}$',
    description: 'The default variant’s SKU: 1 to 64 of A-Z a-z 0-9 . _ - /, unique ignoring case. Empty in a form: none.',
  },
  compareAtPrice: { type: 'number', minimum: 0, maximum: PRICE_MAX_CENTS / 100, description: 'The default variant’s compare-at price. Empty in a form: none.' },
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

/** The fields of a JSON body, as JSON carries them. */
const productJsonProperties = {
  ...productFormFields,
  price: {
    anyOf: [{ type: 'number', minimum: 0, maximum: PRICE_MAX_CENTS / 100 }, { type: 'string' }],
    description: 'A number or a decimal string, at most 2 decimals: 19.99 or "19.99".',
  },
  categoryId: {
    anyOf: [{ type: 'integer', minimum: 1, maximum: INT_MAX }, { type: 'null' }],
    description: 'An existing category, or null to take the product out of its category.',
  },
  tags: {
    type: 'array',
    maxItems: TAGS_MAX,
    items: { type: 'string', minLength: 1, maxLength: TAG_MAX },
    description: 'Each trimmed, without a comma, kept once ignoring case; they replace the product’s tags.',
  },
  sku: { anyOf: [productFormFields.sku, { type: 'null' }], description: 'The default variant’s SKU, or null for none.' },
  compareAtPrice: {
    anyOf: [{ type: 'number', minimum: 0, maximum: PRICE_MAX_CENTS / 100 }, { type: 'string' }, { type: 'null' }],
    description: 'The default variant’s compare-at price, or null for none.',
  },
} as const

export const UpdateProductJson = documentOnly({
  type: 'object',
  description: 'Fields left out stay as they are; no image.',
  minProperties: 1,
  properties: productJsonProperties,
} as const)

export const CreateProductJson = documentOnly({
  type: 'object',
  description:
    'A draft without images (`status` may only be `draft`, the default); its images come later. Without `options`, `price` (required), `stock`, `sku` and `compareAtPrice` make its default variant; with `options`, `variants` (required) carry them.',
  required: ['name'],
  properties: {
    ...productJsonProperties,
    status: { type: 'string', enum: ['draft'] },
    options: {
      type: 'array',
      minItems: 1,
      maxItems: BATCH_MAX,
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: OPTION_NAME_MAX },
          values: { type: 'array', maxItems: BATCH_MAX, items: { type: 'string', minLength: 1, maxLength: OPTION_VALUE_MAX } },
        },
      },
      description: 'The product’s options (at most MAX_OPTIONS_PER_PRODUCT); values named by `variants` join their option.',
    },
    variants: { type: 'array', minItems: 1, maxItems: BATCH_MAX, items: NewVariant, description: 'With `options`: its variants, all or nothing.' },
  },
} as const)

/** POST /products: multipart/form-data with the image, or JSON for a draft (a body of any other type has no image: 400). */
export const CreateProductBody = {
  content: { 'multipart/form-data': { schema: CreateProductForm }, 'application/json': { schema: CreateProductJson } },
} as const

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
export function parseProductFields(raw: Record<string, unknown>, options: { create: boolean; text: boolean; priceRequired?: boolean }): ProductFieldsInput {
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
  } else if (options.priceRequired ?? options.create) fail('price', 'price should not be empty')

  if (stock !== undefined) out.stock = parseInteger('stock', stock, options.text, 0)

  if (categoryId !== undefined) {
    // An empty form value or JSON null takes the product out of its category.
    if (categoryId === null || (options.text && categoryId === '')) out.categoryId = null
    else out.categoryId = parseInteger('categoryId', categoryId, options.text, 1)
  }

  if (raw.slug !== undefined) {
    if (typeof raw.slug !== 'string' || !SLUG_PATTERN.test(raw.slug)) fail('slug', messages.slugInvalid)
    if (raw.slug === RESERVED_SLUG) fail('slug', messages.slugReserved)
    out.slug = raw.slug
  }

  if (raw.status !== undefined) {
    if (typeof raw.status !== 'string' || !(PRODUCT_STATUSES as readonly string[]).includes(raw.status)) {
      fail('status', `status must be one of the following values: ${PRODUCT_STATUSES.join(', ')}`)
    }
    out.status = raw.status as ProductFieldsInput['status']
  }

  if (raw.tags !== undefined) out.tags = parseTags(raw.tags, options.text)
  if (raw.taxClass !== undefined) out.taxClass = parseTaxClass(raw.taxClass)
  // An empty form value clears the SKU or the compare-at price, as JSON null does.
  if (raw.sku !== undefined) out.sku = options.text && raw.sku === '' ? null : parseSku(raw.sku)
  if (raw.compareAtPrice !== undefined) out.compareAtCents = options.text && raw.compareAtPrice === '' ? null : parseCompareAt(raw.compareAtPrice)
  return out
}

/** The one slug no product may have: `GET /products/facets` is a route. */
export const RESERVED_SLUG = 'facets'

/** Tags: a comma-separated text in a form (empty for none), an array of strings in JSON. */
function parseTags(value: unknown, text: boolean): string[] {
  let items: unknown[]
  if (text && typeof value === 'string') items = value.trim() === '' ? [] : value.split(',')
  else if (Array.isArray(value)) items = value
  else fail('tags', 'tags must be an array')
  const tags: string[] = []
  const seen = new Set<string>()
  for (const item of items) {
    if (typeof item !== 'string') fail('tags', 'each value in tags must be a string')
    const tag = item.trim()
    if (tag === '') fail('tags', 'each value in tags should not be empty')
    if (tag.includes(',')) fail('tags', 'each value in tags must not contain a comma')
    if ([...tag].length > TAG_MAX) fail('tags', `each value in tags must be shorter than or equal to ${TAG_MAX} characters`)
    assertNoControlCharacters('tags', tag)
    const key = tag.toLowerCase()
    if (seen.has(key)) continue
    seen.add(key)
    tags.push(tag)
  }
  if (tags.length > TAGS_MAX) fail('tags', `tags must contain no more than ${TAGS_MAX} elements`)
  return tags
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
