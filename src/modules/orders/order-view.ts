import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { AppError } from '../../shared/errors.js'
import { centsToAmount } from '../../shared/money.js'
import type { AddressSnapshot } from '../addresses/addresses.schemas.js'
import type { PaymentSummary } from '../payments/payments.schemas.js'
import type { Refund } from '../payments/refunds.schemas.js'
import type { ShippingMethodSnapshot } from '../shipping/shipping.schemas.js'
import * as repo from './orders.repository.js'
import { listFulfillments } from './fulfillments.repository.js'
import type { FulfillmentStatus } from './fulfillments.schemas.js'
import type { Order, OrderItem, OrderStatus } from './orders.schemas.js'

type Db = Kysely<Database> | Transaction<Database>

/** What `payment` says of an order the provider has not seen yet: the shop's provider and currency. */
export interface PaymentDefaults {
  provider: 'manual' | 'stripe'
  currency: string
}

/** A payment row's columns as an order read carries them (null when the order has no payment row). */
export interface PaymentColumns {
  provider: 'manual' | 'stripe'
  status: 'unpaid' | 'processing' | 'paid' | 'failed' | 'refunded'
  amount_cents: number
  currency: string
  refunded_cents: number
}

/**
 * `payment` as the API shows it. Its status is derived from what was refunded: all of it is `refunded`, some of it
 * `partially_refunded`; `refundedAmount` is the sum of the order's refunds (the shop's and the provider's own).
 */
export function paymentSummary(row: PaymentColumns): PaymentSummary {
  const refunded = Number(row.refunded_cents)
  const amount = Number(row.amount_cents)
  let status: PaymentSummary['status'] = row.status
  // A paid payment with part of it back is partially refunded; all of it back, refunded (a payment that was never
  // applied, a mismatch or a late success, is `refunded` once what it received went back, whatever the amount).
  if (refunded > 0 && row.status === 'paid') status = refunded >= amount ? 'refunded' : 'partially_refunded'
  return { provider: row.provider, status, amount: centsToAmount(amount), currency: row.currency, refundedAmount: centsToAmount(refunded) }
}

/** An order as stored, in the shape both the joined read and the checkout transaction have it. */
export interface OrderRecord {
  id: number
  /** Null on a guest order. */
  user_id: number | null
  /** 1 on a guest order. */
  guest: number
  /**
   * The order's e-mail: the guest's (the column), or on an account order its user's (null once the user is
   * deleted). The joined read takes it from the users table; checkout, from what it read.
   */
  email: string | null
  total_cents: number
  status: OrderStatus
  created_at: string
  updated_at: string
  subtotal_cents: number | null
  shipping_cents: number | null
  shipping_address: string | null
  shipping_method: string | null
  note: string | null
  currency: string | null
  prices_include_tax: number | null
  tax_country: string | null
  discount_total_cents: number | null
  shipping_discount_cents: number | null
  tax_total_cents: number | null
  discount: string | null
  tax_lines: string | null
}

export interface OrderLineRecord {
  id: number
  product_id: number
  quantity: number
  price_cents: number
  name: string | null
  variant_id: number | null
  sku: string | null
  variant_title: string | null
  options: string | null
  tax_class: string | null
  tax_rate: number | null
  discount_cents: number | null
  tax_cents: number | null
  total_cents: number | null
  fulfilled_quantity: number
  refunded_quantity: number
  cancelled_quantity: number
  product?: { id: number; name: string; image_url: string } | undefined
}

/**
 * How much of the order has shipped: nothing (`unfulfilled`), every unit that will ever ship (`fulfilled`: each line's
 * shipped and cancelled units make its quantity), or some (`partial`). Orders moved to shipped before shipments
 * were recorded shipped nothing on record: `unfulfilled`.
 */
export function fulfillmentStatusOf(lines: ReadonlyArray<{ quantity: number; fulfilled_quantity: number; cancelled_quantity: number }>): FulfillmentStatus {
  if (!lines.some((line) => line.fulfilled_quantity > 0)) return 'unfulfilled'
  return lines.every((line) => line.fulfilled_quantity + line.cancelled_quantity >= line.quantity) ? 'fulfilled' : 'partial'
}

/** Who ordered, for admin reads: null on a guest order, and once the user is deleted. */
type Customer = { id: number; name: string; email: string } | null

/**
 * The one place an order's JSON is assembled. Every order carries the same fields in every configuration (the
 * contract's "field for field"): `payment` (`unpaid` on the shop's provider until one is recorded), `subtotal`,
 * `shippingTotal` and the checkout snapshots (null when unset), and a `name` on every line. An order placed the
 * plain way (no checkout body, no shipping) stores no checkout columns: its subtotal is its total, its shipping 0.
 */
export function toOrder(
  record: OrderRecord,
  lines: OrderLineRecord[],
  payment: PaymentColumns | null,
  defaults: PaymentDefaults,
  extra: { customer?: Customer; nextStatuses?: readonly OrderStatus[] } = {},
): Order {
  const order: Order = {
    id: record.id,
    userId: record.user_id,
    email: record.email,
    guest: record.guest === 1,
    total: centsToAmount(record.total_cents),
    status: record.status,
    createdAt: record.created_at,
    updatedAt: record.updated_at,
    items: lines.map((line) => {
      const subtotal = Number(line.price_cents) * line.quantity
      const item: OrderItem = {
        id: line.id,
        orderId: record.id,
        productId: line.product_id,
        quantity: line.quantity,
        price: centsToAmount(line.price_cents),
        name: line.name ?? line.product?.name ?? null,
        variantId: line.variant_id,
        sku: line.sku,
        variantTitle: line.variant_title,
        options: line.options === null ? [] : (JSON.parse(line.options) as OrderItem['options']),
        taxClass: line.tax_class,
        taxRate: centsToAmount(line.tax_rate ?? 0),
        discount: centsToAmount(Number(line.discount_cents ?? 0)),
        tax: centsToAmount(Number(line.tax_cents ?? 0)),
        total: centsToAmount(line.total_cents === null ? subtotal : Number(line.total_cents)),
        fulfilledQuantity: line.fulfilled_quantity,
        refundedQuantity: line.refunded_quantity,
      }
      if (line.product) item.product = { id: line.product.id, name: line.product.name, imageUrl: line.product.image_url }
      return item
    }),
    subtotal: centsToAmount(record.subtotal_cents ?? record.total_cents),
    shippingTotal: centsToAmount(record.shipping_cents ?? 0),
    shippingAddress: record.shipping_address === null ? null : (JSON.parse(record.shipping_address) as AddressSnapshot),
    shippingMethod: record.shipping_method === null ? null : (JSON.parse(record.shipping_method) as ShippingMethodSnapshot),
    note: record.note,
    currency: record.currency ?? defaults.currency,
    // Orders from before the breakdown was kept carry no tax: their prices are what was charged.
    pricesIncludeTax: record.prices_include_tax === null ? true : record.prices_include_tax === 1,
    taxCountry: record.tax_country,
    discountTotal: centsToAmount(Number(record.discount_total_cents ?? 0)),
    shippingDiscount: centsToAmount(Number(record.shipping_discount_cents ?? 0)),
    taxTotal: centsToAmount(Number(record.tax_total_cents ?? 0)),
    discount: record.discount === null ? null : (JSON.parse(record.discount) as Order['discount']),
    taxLines: record.tax_lines === null ? [] : (JSON.parse(record.tax_lines) as Order['taxLines']),
    payment: paymentSummary(
      payment ?? { provider: defaults.provider, status: 'unpaid', amount_cents: record.total_cents, currency: defaults.currency, refunded_cents: 0 },
    ),
    fulfillmentStatus: fulfillmentStatusOf(lines),
    // Filled by withFulfillments, one query per page of orders; a new order has none.
    fulfillments: [],
    // Filled by withRefunds, one batch for all the orders read.
    refunds: [],
  }
  if (extra.customer !== undefined) order.customer = extra.customer
  if (extra.nextStatuses !== undefined) order.nextStatuses = [...extra.nextStatuses]
  return order
}

/** Groups the rows of the joined order query into API orders, keeping the rows' order. */
export function rowsToOrders(
  rows: repo.OrderWithItemRow[],
  defaults: PaymentDefaults,
  admin?: { nextStatuses: (status: OrderStatus) => readonly OrderStatus[] },
): Order[] {
  const orders: Order[] = []
  let current: { first: repo.OrderWithItemRow; lines: OrderLineRecord[] } | undefined
  const flush = () => {
    if (!current) return
    const row = current.first
    const payment: PaymentColumns | null =
      row.pay_provider !== null && row.pay_status !== null && row.pay_amount_cents !== null && row.pay_currency !== null
        ? {
            provider: row.pay_provider,
            status: row.pay_status,
            amount_cents: row.pay_amount_cents,
            currency: row.pay_currency,
            refunded_cents: row.pay_refunded_cents ?? 0,
          }
        : null
    const extra = admin
      ? {
          // A guest order has none; an account order's user may have been deleted.
          customer:
            row.user_id !== null && row.customer_name !== null && row.customer_email !== null
              ? { id: row.user_id, name: row.customer_name, email: row.customer_email }
              : null,
          nextStatuses: admin.nextStatuses(row.status),
        }
      : {}
    orders.push(toOrder({ ...row, email: row.guest === 1 ? row.email : row.customer_email }, current.lines, payment, defaults, extra))
  }
  for (const row of rows) {
    if (current?.first.id !== row.id) {
      flush()
      current = { first: row, lines: [] }
    }
    if (row.item_id === null || row.product_id === null || row.quantity === null || row.price_cents === null) continue
    current.lines.push({
      id: row.item_id,
      product_id: row.product_id,
      quantity: row.quantity,
      price_cents: row.price_cents,
      name: row.item_name,
      variant_id: row.variant_id,
      sku: row.sku,
      variant_title: row.variant_title,
      options: row.options,
      tax_class: row.tax_class,
      tax_rate: row.tax_rate,
      discount_cents: row.discount_cents,
      tax_cents: row.tax_cents,
      total_cents: row.item_total_cents,
      fulfilled_quantity: row.fulfilled_quantity ?? 0,
      refunded_quantity: row.refunded_quantity ?? 0,
      cancelled_quantity: row.cancelled_quantity ?? 0,
      product:
        row.p_id !== null && row.p_name !== null && row.p_image_url !== null ? { id: row.p_id, name: row.p_name, image_url: row.p_image_url } : undefined,
    })
  }
  flush()
  return orders
}

/** Puts each order's fulfillments on it, read in one query for all of them. */
export async function withFulfillments(db: Db, orders: Order[]): Promise<Order[]> {
  const byOrder = await listFulfillments(
    db,
    orders.map((order) => order.id),
  )
  for (const order of orders) order.fulfillments = byOrder.get(order.id) ?? []
  return orders
}

/** A refund row and its lines as the API shows them. */
export function toRefund(
  row: {
    id: number
    order_id: number
    amount_cents: number
    shipping_cents: number
    tax_cents: number
    reason: string | null
    provider: 'manual' | 'stripe'
    created_at: string
    actor_type: 'user' | 'api_key' | 'system'
    actor_id: number | null
    actor_name: string | null
  },
  items: ReadonlyArray<{ order_item_id: number; quantity: number; amount_cents: number; tax_cents: number; restock: number }>,
): Refund {
  return {
    id: row.id,
    orderId: row.order_id,
    amount: centsToAmount(Number(row.amount_cents)),
    items: items.map((item) => ({
      orderItemId: item.order_item_id,
      quantity: item.quantity,
      amount: centsToAmount(Number(item.amount_cents)),
      tax: centsToAmount(Number(item.tax_cents)),
      restock: item.restock === 1,
    })),
    shippingAmount: centsToAmount(Number(row.shipping_cents)),
    taxAmount: centsToAmount(Number(row.tax_cents)),
    reason: row.reason,
    provider: row.provider,
    createdAt: row.created_at,
    actor: { type: row.actor_type, id: row.actor_id, name: row.actor_name },
  }
}

/**
 * The settled refunds of each order, oldest first, read for all of `orders` in two queries (the refunds, then their
 * lines), never one per order. A refund still waiting for the provider is not shown until it settles.
 */
export async function withRefunds<T extends { id: number; refunds: Refund[] }>(db: Db, orders: T[]): Promise<T[]> {
  if (orders.length === 0) return orders
  const rows = await db
    .selectFrom('refunds')
    .selectAll()
    .where(
      'order_id',
      'in',
      orders.map((order) => order.id),
    )
    .where('pending_at', 'is', null)
    .orderBy('id')
    .execute()
  if (rows.length === 0) return orders
  const items = await db
    .selectFrom('refund_items')
    .selectAll()
    .where(
      'refund_id',
      'in',
      rows.map((row) => row.id),
    )
    .orderBy('refund_id')
    .orderBy('order_item_id')
    .execute()
  const byRefund = new Map<number, typeof items>()
  for (const item of items) byRefund.set(item.refund_id, [...(byRefund.get(item.refund_id) ?? []), item])
  const byOrder = new Map<number, Refund[]>()
  for (const row of rows) byOrder.set(row.order_id, [...(byOrder.get(row.order_id) ?? []), toRefund(row, byRefund.get(row.id) ?? [])])
  for (const order of orders) order.refunds = byOrder.get(order.id) ?? []
  return orders
}

/** One order, or 404; with `ownerId`, only when it belongs to that user (a guest order belongs to no user). */
export async function loadOrder(
  db: Db,
  defaults: PaymentDefaults,
  id: number,
  options: { ownerId?: number | undefined; admin?: { nextStatuses: (status: OrderStatus) => readonly OrderStatus[] } | undefined } = {},
): Promise<Order> {
  const [order] = rowsToOrders(await repo.findOrderWithItems(db, id, options.ownerId), defaults, options.admin)
  if (!order) throw new AppError(404, 'orderNotFound')
  await withFulfillments(db, [order])
  await withRefunds(db, [order])
  return order
}
