import type { FromSchema } from 'json-schema-to-ts'
import { AddressSnapshot, CreateAddressBody } from '../addresses/addresses.schemas.js'
import { ShippingMethodSnapshot } from '../shipping/shipping.schemas.js'

const id = { type: 'integer', minimum: 1, maximum: 2147483647 } as const
const quantity = { type: 'integer', minimum: 1, maximum: 2147483647 } as const

/** `X-Cart-Token`: a guest cart's token (`ct_` and 43 base64url characters); a bearer wins when both are sent. */
export const CartTokenHeader = 'x-cart-token'

export const AddToCartBody = {
  type: 'object',
  required: ['quantity'],
  properties: {
    productId: { ...id, description: 'Enough for a product with one variant; with `variantId`, the variant must be this product’s.' },
    variantId: { ...id, description: 'Required when the product has several variants.' },
    quantity,
  },
  additionalProperties: false,
} as const

export const UpdateCartItemBody = {
  type: 'object',
  required: ['quantity'],
  properties: { quantity },
  additionalProperties: false,
} as const

/** PATCH /cart: the checkout choices kept on the cart; `null` clears one. */
export const UpdateCartBody = {
  type: 'object',
  properties: {
    email: { type: ['string', 'null'], format: 'email', maxLength: 254, description: 'Guest carts only: the order’s e-mail.' },
    shippingAddressId: { type: ['integer', 'null'], minimum: 1, maximum: 2147483647 },
    shippingAddress: { anyOf: [CreateAddressBody, { type: 'null' }] },
    shippingMethodId: { type: ['integer', 'null'], minimum: 1, maximum: 2147483647 },
    note: { type: ['string', 'null'], maxLength: 1000 },
  },
  additionalProperties: false,
  minProperties: 1,
} as const

export const ApplyDiscountBody = {
  type: 'object',
  required: ['code'],
  properties: { code: { type: 'string', minLength: 1, maxLength: 50, description: 'Any case.' } },
  additionalProperties: false,
} as const

export const GuestCart = {
  title: 'GuestCart',
  type: 'object',
  required: ['cartToken', 'expiresAt'],
  properties: {
    cartToken: { type: 'string', description: 'Shown once: send it as `X-Cart-Token`.' },
    expiresAt: { type: 'string', format: 'date-time', description: 'Moves on with every change to the cart.' },
  },
} as const

const OptionValues = {
  type: 'array',
  description: 'The variant’s option values, in option order; empty for a product without options.',
  items: { type: 'object', required: ['name', 'value'], properties: { name: { type: 'string' }, value: { type: 'string' } } },
} as const

/** A cart line as returned by add and update. */
export const CartItem = {
  title: 'CartItem',
  type: 'object',
  required: ['id', 'cartId', 'userId', 'productId', 'variantId', 'sku', 'variantTitle', 'options', 'quantity', 'createdAt'],
  properties: {
    id: { type: 'integer' },
    cartId: { type: 'integer' },
    userId: { type: ['integer', 'null'], description: 'null on a guest cart’s line.' },
    productId: { type: 'integer' },
    variantId: { type: 'integer' },
    sku: { type: ['string', 'null'] },
    variantTitle: { type: ['string', 'null'] },
    options: OptionValues,
    quantity: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const

const money = { type: 'number' } as const

export const TaxLine = {
  title: 'TaxLine',
  type: 'object',
  required: ['name', 'taxClass', 'rate', 'base', 'amount'],
  properties: { name: { type: 'string' }, taxClass: { type: 'string' }, rate: money, base: { ...money, description: 'Net of tax.' }, amount: money },
} as const

export const CartDiscount = {
  title: 'CartDiscount',
  type: 'object',
  required: ['code', 'type', 'value', 'applicable', 'reason'],
  properties: {
    code: { type: 'string' },
    type: { type: ['string', 'null'], enum: ['percent', 'fixed', 'free_shipping', null] },
    value: { type: ['number', 'null'] },
    applicable: { type: 'boolean' },
    reason: { type: ['string', 'null'], description: 'Why it does not apply now: the message checkout would answer.' },
  },
} as const

export const CartView = {
  title: 'Cart',
  type: 'object',
  required: [
    'items',
    'subtotal',
    'discountTotal',
    'shippingTotal',
    'taxTotal',
    'total',
    'currency',
    'pricesIncludeTax',
    'taxCountry',
    'email',
    'shippingAddress',
    'shippingMethod',
    'note',
    'discount',
    'taxLines',
  ],
  properties: {
    items: {
      type: 'array',
      items: {
        type: 'object',
        required: [
          'id',
          'productId',
          'variantId',
          'variantTitle',
          'sku',
          'options',
          'available',
          'quantity',
          'subtotal',
          'discount',
          'taxRate',
          'tax',
          'total',
          'product',
        ],
        properties: {
          id: { type: 'integer' },
          productId: { type: 'integer' },
          variantId: { type: 'integer' },
          variantTitle: { type: ['string', 'null'], description: 'null for a product without options.' },
          sku: { type: ['string', 'null'] },
          options: OptionValues,
          available: { type: 'boolean', description: 'false once the product is off sale (a draft or archived): checkout refuses the cart.' },
          quantity: { type: 'integer' },
          subtotal: { ...money, description: 'product.price × quantity.' },
          discount: { ...money, description: 'This line’s share of the code’s discount.' },
          taxRate: { ...money, description: 'The rate of the line’s tax class in the tax country, in percent.' },
          tax: money,
          total: { ...money, description: 'subtotal − discount (+ tax when prices exclude it).' },
          product: {
            type: 'object',
            required: ['id', 'name', 'price', 'imageUrl'],
            properties: { id: { type: 'integer' }, name: { type: 'string' }, price: money, imageUrl: { type: 'string' } },
          },
        },
      },
    },
    subtotal: money,
    discountTotal: money,
    shippingTotal: money,
    taxTotal: money,
    total: { ...money, description: 'What checkout would charge now.' },
    currency: { type: 'string' },
    pricesIncludeTax: { type: 'boolean' },
    taxCountry: { type: 'string' },
    email: { type: ['string', 'null'], description: 'A guest cart’s order e-mail; null on a user’s cart.' },
    shippingAddress: { anyOf: [AddressSnapshot, { type: 'null' }] },
    shippingMethod: { anyOf: [ShippingMethodSnapshot, { type: 'null' }] },
    note: { type: ['string', 'null'] },
    discount: { anyOf: [CartDiscount, { type: 'null' }] },
    taxLines: { type: 'array', items: TaxLine },
  },
} as const

export type AddToCartInput = FromSchema<typeof AddToCartBody>
export type UpdateCartInput = FromSchema<typeof UpdateCartBody>
export type CartItem = FromSchema<typeof CartItem>
export type CartView = FromSchema<typeof CartView>
