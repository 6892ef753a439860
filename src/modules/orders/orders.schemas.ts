import type { FromSchema } from 'json-schema-to-ts'
import { PageQueryProperties } from '../../shared/validation.js'
import { AddressSnapshot, CreateAddressBody } from '../addresses/addresses.schemas.js'
import { ShippingMethodSnapshot } from '../shipping/shipping.schemas.js'
import { email as userEmail } from '../users/users.schemas.js'
// Payments: `payment` on every order JSON.
import { PaymentSummary, shownPaymentStatuses } from '../payments/payments.schemas.js'
import { Refund } from '../payments/refunds.schemas.js'
import { TaxLine } from '../cart/cart.schemas.js'
import { Fulfillment, fulfillmentStatuses } from './fulfillments.schemas.js'

export const orderStatuses = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const
export type OrderStatus = (typeof orderStatuses)[number]

/** `Idempotency-Key`: 1 to 255 printable ASCII characters (header names are lower-case in Fastify schemas). */
export const PlaceOrderHeaders = {
  type: 'object',
  properties: {
    'idempotency-key': { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
  },
} as const

const positiveId = { type: 'integer', minimum: 1, maximum: 2_147_483_647 } as const

/**
 * The optional checkout body of POST /orders. No body (or `{}`, or `null`) places the order as before; unknown
 * fields are refused by checkOrderBody (orders.routes.ts) with the wording the bodiless route always used.
 */
export const PlaceOrderBody = {
  type: 'object',
  properties: {
    shippingAddressId: positiveId,
    shippingAddress: CreateAddressBody,
    shippingMethodId: positiveId,
    note: { type: 'string', maxLength: 1000 },
    email: { type: 'string', format: 'email', maxLength: 254, description: 'Guests only (with `X-Cart-Token`): the order’s e-mail.' },
  },
  additionalProperties: false,
} as const

const orderToken = {
  type: 'string',
  maxLength: 100,
  description: 'An order token (a guest’s link): `<orderId>.<expiry>.<signature>`. Instead of a bearer; with one, the token decides.',
} as const

/** `?token=`: the order token of a guest's link, on the routes of one order it opens. */
export const OrderTokenQuery = { type: 'object', properties: { token: orderToken } } as const

/** `X-Order-Token`: the same token as a header. */
export const OrderTokenHeaders = { type: 'object', properties: { 'x-order-token': orderToken } } as const

/** POST /orders/lookup: a guest asks for a new link to their order. */
export const OrderLookupBody = {
  type: 'object',
  required: ['orderId', 'email'],
  properties: { orderId: positiveId, email: userEmail },
  additionalProperties: false,
} as const

export const ListOrdersQuery = {
  type: 'object',
  properties: {
    ...PageQueryProperties,
    status: { type: 'string', enum: orderStatuses },
    userId: { ...positiveId, description: 'Only this customer’s orders. Admins; a customer may give only their own id (another is 403).' },
    guest: { type: 'boolean', description: 'true: guest orders only; false: account orders only.' },
    fulfillmentStatus: { type: 'string', enum: fulfillmentStatuses, description: 'Only orders with nothing, part or all of them shipped.' },
    email: {
      type: 'string',
      minLength: 1,
      maxLength: 254,
      description: 'Only the orders of this e-mail (ignoring case): a guest’s, or the current one of an account.',
    },
    paymentStatus: { type: 'string', enum: shownPaymentStatuses, description: 'Only the orders whose `payment.status` is this one (admins).' },
  },
  additionalProperties: false,
} as const

export const UpdateStatusBody = {
  type: 'object',
  required: ['status'],
  // No `type`: any value outside the list (a number, say) gets the enum's message.
  properties: { status: { enum: orderStatuses } },
  additionalProperties: false,
} as const

export const OrderItem = {
  title: 'OrderItem',
  type: 'object',
  required: [
    'id',
    'orderId',
    'productId',
    'quantity',
    'price',
    'name',
    'variantId',
    'sku',
    'variantTitle',
    'options',
    'taxClass',
    'taxRate',
    'discount',
    'tax',
    'total',
    'fulfilledQuantity',
    'refundedQuantity',
  ],
  properties: {
    id: { type: 'integer' },
    orderId: { type: 'integer' },
    productId: { type: 'integer' },
    quantity: { type: 'integer' },
    price: { type: 'number' },
    /** The product's name at purchase (null only on lines written before names were kept, of a product deleted since). */
    name: { type: ['string', 'null'] },
    variantId: { type: ['integer', 'null'], description: 'The variant bought (null on lines from before variants).' },
    sku: { type: ['string', 'null'] },
    variantTitle: { type: ['string', 'null'] },
    options: {
      type: 'array',
      items: { type: 'object', required: ['name', 'value'], properties: { name: { type: 'string' }, value: { type: 'string' } } },
    },
    taxClass: { type: ['string', 'null'] },
    taxRate: { type: 'number', description: 'Percent; 0 without a rate.' },
    discount: { type: 'number', description: 'The line’s share of the code’s discount.' },
    tax: { type: 'number' },
    total: { type: 'number', description: 'price × quantity − discount (+ tax when prices exclude it).' },
    fulfilledQuantity: { type: 'integer' },
    refundedQuantity: { type: 'integer' },
    product: {
      type: 'object',
      required: ['id', 'name', 'imageUrl'],
      properties: { id: { type: 'integer' }, name: { type: 'string' }, imageUrl: { type: 'string' } },
    },
  },
} as const

export const Order = {
  title: 'Order',
  type: 'object',
  required: [
    'id',
    'userId',
    'email',
    'guest',
    'total',
    'status',
    'createdAt',
    'updatedAt',
    'items',
    'subtotal',
    'shippingTotal',
    'shippingAddress',
    'shippingMethod',
    'note',
    'currency',
    'pricesIncludeTax',
    'taxCountry',
    'discountTotal',
    'shippingDiscount',
    'taxTotal',
    'discount',
    'taxLines',
    'payment',
    'fulfillmentStatus',
    'fulfillments',
    'refunds',
  ],
  properties: {
    id: { type: 'integer' },
    /** Null on a guest order. */
    userId: { type: ['integer', 'null'] },
    /** A guest's e-mail, or an account order's user's (null once that user is deleted). */
    email: { type: ['string', 'null'] },
    guest: { type: 'boolean' },
    total: { type: 'number' },
    status: { type: 'string', enum: orderStatuses },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    items: { type: 'array', items: OrderItem },
    // On every order: a plain one (no body, no shipping) has subtotal = total, shippingTotal 0 and nulls.
    subtotal: { type: 'number' },
    shippingTotal: { type: 'number' },
    shippingAddress: { anyOf: [AddressSnapshot, { type: 'null' }] },
    shippingMethod: { anyOf: [ShippingMethodSnapshot, { type: 'null' }] },
    note: { type: ['string', 'null'] },
    currency: { type: 'string' },
    pricesIncludeTax: { type: 'boolean' },
    taxCountry: { type: ['string', 'null'], description: 'null on orders from before taxes were kept.' },
    discountTotal: { type: 'number' },
    shippingDiscount: { type: 'number' },
    taxTotal: { type: 'number' },
    discount: {
      anyOf: [
        {
          type: 'object',
          required: ['code', 'type', 'value'],
          properties: { code: { type: 'string' }, type: { type: 'string', enum: ['percent', 'fixed', 'free_shipping'] }, value: { type: ['number', 'null'] } },
        },
        { type: 'null' },
      ],
    },
    taxLines: { type: 'array', items: TaxLine },
    /** Admin reads (GET) only; null on a guest order, and once the user is deleted. */
    customer: {
      anyOf: [
        { type: 'object', required: ['id', 'name', 'email'], properties: { id: { type: 'integer' }, name: { type: 'string' }, email: { type: 'string' } } },
        { type: 'null' },
      ],
    },
    payment: PaymentSummary,
    fulfillmentStatus: {
      type: 'string',
      enum: fulfillmentStatuses,
      description: 'unfulfilled: nothing shipped; fulfilled: every unit shipped or cancelled; partial otherwise.',
    },
    fulfillments: { type: 'array', items: Fulfillment, description: 'The shipments, oldest first.' },
    refunds: {
      type: 'array',
      items: Refund,
      description: 'The order’s refunds, oldest first: the shop’s and those made in the provider’s dashboard (`actor.type: "system"`).',
    },
    orderToken: { type: 'string', description: 'A guest checkout’s answer only: the token that opens this order (`X-Order-Token` or `?token=`).' },
    /** Admin reads only: the statuses an admin may move this order to now (the lifecycle's table). */
    nextStatuses: { type: 'array', items: { type: 'string', enum: orderStatuses } },
  },
} as const

export const OrderList = { type: 'array', items: Order } as const

export type PlaceOrderInput = FromSchema<typeof PlaceOrderBody>
export type UpdateStatusInput = FromSchema<typeof UpdateStatusBody>
export type OrderLookupInput = FromSchema<typeof OrderLookupBody>
/** `product` is present while the product exists. */
export type OrderItem = FromSchema<typeof OrderItem>
export type Order = FromSchema<typeof Order>
export type ListOrdersQuery = FromSchema<typeof ListOrdersQuery>
