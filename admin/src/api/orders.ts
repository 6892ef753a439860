import { unwrap } from './answers'
import { type Api, dataProviderOf, filtersOf, idValue, paging, text, totalOf } from './resource'
import type { components } from './schema'

export type Order = components['schemas']['Order']
export type OrderStatus = Order['status']

/** The statuses in their lifecycle's order (the API's list, checked against its type). */
export const ORDER_STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const satisfies readonly OrderStatus[]

/** The payment's statuses, as GET /orders?paymentStatus= takes them. */
export const PAYMENT_STATUSES = [
  'unpaid',
  'processing',
  'paid',
  'failed',
  'partially_refunded',
  'refunded',
] as const satisfies readonly Order['payment']['status'][]

function isPaymentStatus(value: unknown): value is (typeof PAYMENT_STATUSES)[number] {
  return PAYMENT_STATUSES.some((status) => status === value)
}

export function isOrderStatus(value: unknown): value is OrderStatus {
  return ORDER_STATUSES.some((status) => status === value)
}

export type FulfillmentStatus = Order['fulfillmentStatus']
export const FULFILLMENT_STATUSES = ['unfulfilled', 'partial', 'fulfilled'] as const satisfies readonly FulfillmentStatus[]

function isFulfillmentStatus(value: unknown): value is FulfillmentStatus {
  return FULFILLMENT_STATUSES.some((status) => status === value)
}

/** A yes/no filter (a select's `"true"`/`"false"`, or a boolean from the URL): undefined when it is neither. */
function yesNo(value: unknown): boolean | undefined {
  return value === true || value === 'true' ? true : value === false || value === 'false' ? false : undefined
}

/**
 * Orders: newest first, by status, by customer (`userId`, the Users page's link), guest or account orders (`guest`)
 * by e-mail (`email`, trimmed; a guest's or an account's) and by what has shipped (`fulfillmentStatus`); an admin
 * moves their status.
 */
export function ordersProvider(api: Api) {
  return dataProviderOf<Order>('orders', {
    async list(params) {
      const { limit, offset } = paging(params)
      const filter = filtersOf(params)
      const userId = idValue(filter.userId)
      const guest = yesNo(filter.guest)
      const email = text(filter.email).trim()
      const query = {
        limit,
        offset,
        ...(isOrderStatus(filter.status) ? { status: filter.status } : {}),
        ...(userId !== undefined ? { userId } : {}),
        ...(guest !== undefined ? { guest } : {}),
        ...(email ? { email } : {}),
        ...(isFulfillmentStatus(filter.fulfillmentStatus) ? { fulfillmentStatus: filter.fulfillmentStatus } : {}),
        ...(isPaymentStatus(filter.paymentStatus) ? { paymentStatus: filter.paymentStatus } : {}),
      }
      const result = await api.GET('/orders', { params: { query } })
      return { data: unwrap(result), total: totalOf(result.response) }
    },
    one: async (id) => unwrap(await api.GET('/orders/{id}', { params: { path: { id } } })),
    async update(id, data) {
      if (!isOrderStatus(data.status)) throw new Error(`Not an order status: ${String(data.status)}`)
      return unwrap(await api.PATCH('/orders/{id}/status', { params: { path: { id } }, body: { status: data.status } }))
    },
  })
}
