import type { FromSchema } from 'json-schema-to-ts'

const id = { type: 'integer', minimum: 1, maximum: 2147483647 } as const
const quantity = { type: 'integer', minimum: 1, maximum: 2147483647 } as const

export const AddToCartBody = {
  type: 'object',
  required: ['productId', 'quantity'],
  properties: { productId: id, variantId: { ...id, description: 'Required when the product has several variants.' }, quantity },
  additionalProperties: false,
} as const

export const UpdateCartItemBody = {
  type: 'object',
  required: ['quantity'],
  properties: { quantity },
  additionalProperties: false,
} as const

/** A cart line as returned by add and update. */
export const CartItem = {
  title: 'CartItem',
  type: 'object',
  required: ['id', 'userId', 'productId', 'variantId', 'quantity', 'createdAt'],
  properties: {
    id: { type: 'integer' },
    userId: { type: 'integer' },
    productId: { type: 'integer' },
    variantId: { type: 'integer' },
    quantity: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const

export const CartView = {
  title: 'Cart',
  type: 'object',
  required: ['items', 'total'],
  properties: {
    items: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'productId', 'variantId', 'variantTitle', 'sku', 'available', 'quantity', 'subtotal', 'product'],
        properties: {
          id: { type: 'integer' },
          productId: { type: 'integer' },
          variantId: { type: 'integer' },
          variantTitle: { type: ['string', 'null'], description: 'null for a product without options.' },
          sku: { type: ['string', 'null'] },
          available: { type: 'boolean', description: 'false once the product is off sale (a draft or archived): checkout refuses the cart.' },
          quantity: { type: 'integer' },
          subtotal: { type: 'number' },
          product: {
            type: 'object',
            required: ['id', 'name', 'price', 'imageUrl'],
            properties: { id: { type: 'integer' }, name: { type: 'string' }, price: { type: 'number' }, imageUrl: { type: 'string' } },
          },
        },
      },
    },
    total: { type: 'number' },
  },
} as const

export type AddToCartInput = FromSchema<typeof AddToCartBody>
export type CartItem = FromSchema<typeof CartItem>
export type CartView = FromSchema<typeof CartView>
