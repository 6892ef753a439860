import type { Kysely } from 'kysely'
import type { Database, ProductStatus } from '../../db/database.js'
import type { FulfillmentStatus } from '../orders/fulfillments.schemas.js'
// The order's own rules: the export's statuses are the ones its JSON shows.
import { fulfillmentStatusOf, paymentSummary } from '../orders/order-view.js'
import { amount, cell } from './csv-format.js'

type Db = Kysely<Database>

/**
 * Rows are read by pages of this many products, orders or customers, each page found by the last id of the one
 * before (keyset: no OFFSET that grows with the file). One page's rows are made into text at once (csv-format.ts).
 */
const exportPaging = { pageSize: 500 }

export const PRODUCT_COLUMNS = [
  'product_id',
  'slug',
  'name',
  'description',
  'status',
  'category',
  'tags',
  'tax_class',
  'option1_name',
  'option1_value',
  'option2_name',
  'option2_value',
  'option3_name',
  'option3_value',
  'variant_id',
  'sku',
  'price',
  'compare_at_price',
  'stock',
  'variant_tax_class',
  'position',
  'image_urls',
] as const

export const ORDER_COLUMNS = [
  'order_id',
  'created_at',
  'status',
  'payment_status',
  'fulfillment_status',
  'email',
  'customer_id',
  'guest',
  'currency',
  'subtotal',
  'discount_total',
  'shipping_total',
  'tax_total',
  'total',
  'refunded_amount',
  'discount_code',
  'shipping_country',
  'shipping_method',
  'line_id',
  'product_id',
  'variant_id',
  'sku',
  'name',
  'variant_title',
  'quantity',
  'unit_price',
  'line_discount',
  'line_tax_rate',
  'line_tax',
  'line_total',
  'refunded_quantity',
] as const

export const CUSTOMER_COLUMNS = ['id', 'name', 'email', 'created_at', 'orders_count', 'total_spent'] as const

/** The products export: a row per variant, the product's columns repeated on each; `status` `any` (the default) for all. */
export async function* productPages(db: Db, status: ProductStatus | 'any'): AsyncGenerator<string[][]> {
  const categories = new Map<number, string>()
  let after = 0
  for (;;) {
    let query = db
      .selectFrom('products')
      .select(['id', 'slug', 'name', 'description', 'status', 'category_id', 'tags', 'tax_class'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(exportPaging.pageSize)
    if (status !== 'any') query = query.where('status', '=', status)
    const products = await query.execute()
    if (products.length === 0) return
    after = products[products.length - 1]!.id
    const ids = products.map((p) => p.id)
    const variants = await db
      .selectFrom('product_variants')
      .select(['id', 'product_id', 'sku', 'price_cents', 'compare_at_cents', 'stock', 'tax_class', 'position'])
      .where('product_id', 'in', ids)
      .orderBy('product_id')
      .orderBy('position')
      .orderBy('id')
      .execute()
    const values = await db
      .selectFrom('variant_option_values as l')
      .innerJoin('product_option_values as v', 'v.id', 'l.option_value_id')
      .innerJoin('product_options as o', 'o.id', 'v.option_id')
      .select(['l.variant_id', 'o.name', 'o.position', 'o.id as option_id', 'v.value'])
      .where('o.product_id', 'in', ids)
      .execute()
    const images = await db
      .selectFrom('product_images')
      .select(['product_id', 'url'])
      .where('product_id', 'in', ids)
      .orderBy('product_id')
      .orderBy('position')
      .orderBy('id')
      .execute()
    const missing = [...new Set(products.map((p) => p.category_id).filter((id): id is number => id !== null && !categories.has(id)))]
    if (missing.length > 0) {
      for (const row of await db.selectFrom('categories').select(['id', 'slug']).where('id', 'in', missing).execute()) categories.set(row.id, row.slug)
    }
    const valuesOf = new Map<number, Array<{ name: string; position: number; option_id: number; value: string }>>()
    for (const row of values) valuesOf.set(row.variant_id, [...(valuesOf.get(row.variant_id) ?? []), row])
    const imagesOf = new Map<number, string[]>()
    for (const row of images) imagesOf.set(row.product_id, [...(imagesOf.get(row.product_id) ?? []), row.url])
    const variantsOf = new Map<number, typeof variants>()
    for (const row of variants) variantsOf.set(row.product_id, [...(variantsOf.get(row.product_id) ?? []), row])
    const page: string[][] = []
    for (const product of products) {
      const tags = (JSON.parse(product.tags) as string[]).join(',')
      const own = [
        cell(product.id),
        cell(product.slug),
        cell(product.name),
        cell(product.description),
        cell(product.status),
        cell(product.category_id === null ? '' : (categories.get(product.category_id) ?? '')),
        cell(tags),
        cell(product.tax_class),
      ]
      for (const variant of variantsOf.get(product.id) ?? []) {
        const options = (valuesOf.get(variant.id) ?? []).sort((a, b) => a.position - b.position || a.option_id - b.option_id)
        const optionCells: string[] = []
        for (let i = 0; i < 3; i += 1) optionCells.push(cell(options[i]?.name), cell(options[i]?.value))
        page.push([
          ...own,
          ...optionCells,
          cell(variant.id),
          cell(variant.sku),
          amount(variant.price_cents),
          amount(variant.compare_at_cents),
          cell(variant.stock),
          cell(variant.tax_class),
          cell(variant.position),
          cell((imagesOf.get(product.id) ?? []).join(',')),
        ])
      }
    }
    yield page
  }
}

export type { FulfillmentStatus }

export interface OrderExportFilter {
  from?: string | undefined
  to?: string | undefined
  status?: string | undefined
  paymentStatus?: string | undefined
  fulfillmentStatus?: FulfillmentStatus | undefined
}

const jsonField = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T))

/**
 * The orders export: a row per line, the order's columns repeated on each, oldest order first. `from` is inclusive,
 * `to` exclusive. The payment and fulfillment statuses are the ones the order's JSON shows, so they are filtered
 * after reading a page of orders (a page may then give fewer rows, never more).
 */
export async function* orderPages(
  db: Db,
  filter: OrderExportFilter,
  defaults: { provider: 'manual' | 'stripe'; currency: string },
): AsyncGenerator<string[][]> {
  let after = 0
  for (;;) {
    let query = db
      .selectFrom('orders as o')
      .leftJoin('users as u', 'u.id', 'o.user_id')
      .leftJoin('payments as pay', 'pay.order_id', 'o.id')
      .select([
        'o.id',
        'o.created_at',
        'o.status',
        'o.user_id',
        'o.guest',
        'o.email',
        'u.email as user_email',
        'o.currency',
        'o.subtotal_cents',
        'o.discount_total_cents',
        'o.shipping_cents',
        'o.tax_total_cents',
        'o.total_cents',
        'o.discount',
        'o.shipping_address',
        'o.shipping_method',
        'pay.provider as pay_provider',
        'pay.status as pay_status',
        'pay.amount_cents as pay_amount_cents',
        'pay.currency as pay_currency',
        'pay.refunded_cents as pay_refunded_cents',
      ])
      .where('o.id', '>', after)
      .orderBy('o.id')
      .limit(exportPaging.pageSize)
    if (filter.from !== undefined) query = query.where('o.created_at', '>=', filter.from)
    if (filter.to !== undefined) query = query.where('o.created_at', '<', filter.to)
    if (filter.status !== undefined) query = query.where('o.status', '=', filter.status as 'pending')
    const orders = await query.execute()
    if (orders.length === 0) return
    after = orders[orders.length - 1]!.id
    const lines = await db
      .selectFrom('order_items')
      .select([
        'id',
        'order_id',
        'product_id',
        'variant_id',
        'sku',
        'name',
        'variant_title',
        'quantity',
        'price_cents',
        'discount_cents',
        'tax_rate',
        'tax_cents',
        'total_cents',
        'fulfilled_quantity',
        'cancelled_quantity',
        'refunded_quantity',
      ])
      .where(
        'order_id',
        'in',
        orders.map((o) => o.id),
      )
      .orderBy('order_id')
      .orderBy('id')
      .execute()
    const linesOf = new Map<number, typeof lines>()
    for (const line of lines) linesOf.set(line.order_id, [...(linesOf.get(line.order_id) ?? []), line])
    const page: string[][] = []
    for (const order of orders) {
      const own = linesOf.get(order.id) ?? []
      const payment = paymentSummary(
        order.pay_provider !== null && order.pay_status !== null && order.pay_amount_cents !== null && order.pay_currency !== null
          ? {
              provider: order.pay_provider,
              status: order.pay_status,
              amount_cents: order.pay_amount_cents,
              currency: order.pay_currency,
              refunded_cents: order.pay_refunded_cents ?? 0,
            }
          : { provider: defaults.provider, status: 'unpaid', amount_cents: order.total_cents, currency: defaults.currency, refunded_cents: 0 },
      )
      const fulfillment = fulfillmentStatusOf(own)
      if (filter.paymentStatus !== undefined && payment.status !== filter.paymentStatus) continue
      if (filter.fulfillmentStatus !== undefined && fulfillment !== filter.fulfillmentStatus) continue
      const discount = jsonField<{ code: string }>(order.discount)
      const address = jsonField<{ country?: string }>(order.shipping_address)
      const method = jsonField<{ name?: string }>(order.shipping_method)
      const head = [
        cell(order.id),
        cell(order.created_at),
        cell(order.status),
        cell(payment.status),
        cell(fulfillment),
        cell(order.guest === 1 ? order.email : order.user_email),
        cell(order.user_id),
        order.guest === 1 ? 'true' : 'false',
        cell(order.currency ?? defaults.currency),
        amount(order.subtotal_cents ?? order.total_cents),
        amount(order.discount_total_cents ?? 0),
        amount(order.shipping_cents ?? 0),
        amount(order.tax_total_cents ?? 0),
        amount(order.total_cents),
        amount(order.pay_refunded_cents ?? 0),
        cell(discount?.code),
        cell(address?.country),
        cell(method?.name),
      ]
      for (const line of own) {
        const subtotal = Number(line.price_cents) * line.quantity
        page.push([
          ...head,
          cell(line.id),
          cell(line.product_id),
          cell(line.variant_id),
          cell(line.sku),
          cell(line.name),
          cell(line.variant_title),
          cell(line.quantity),
          amount(line.price_cents),
          amount(line.discount_cents ?? 0),
          amount(line.tax_rate ?? 0),
          amount(line.tax_cents ?? 0),
          amount(line.total_cents ?? subtotal),
          cell(line.refunded_quantity),
        ])
      }
    }
    yield page
  }
}

/**
 * The customers export: a row per customer account, by id. `orders_count` and `total_spent` count the orders that
 * are not cancelled, each at its total less what was refunded of it.
 */
export async function* customerPages(db: Db): AsyncGenerator<string[][]> {
  let after = 0
  for (;;) {
    const users = await db
      .selectFrom('users')
      .select(['id', 'name', 'email', 'created_at'])
      .where('role', '=', 'customer')
      .where('id', '>', after)
      .orderBy('id')
      .limit(exportPaging.pageSize)
      .execute()
    if (users.length === 0) return
    after = users[users.length - 1]!.id
    const totals = await db
      .selectFrom('orders as o')
      .leftJoin('payments as pay', 'pay.order_id', 'o.id')
      .select((eb) => [
        'o.user_id',
        eb.fn.countAll<number | string>().as('orders_count'),
        eb.fn.sum<number | string>('o.total_cents').as('total_cents'),
        eb.fn.sum<number | string | null>('pay.refunded_cents').as('refunded_cents'),
      ])
      .where(
        'o.user_id',
        'in',
        users.map((u) => u.id),
      )
      .where('o.status', '!=', 'cancelled')
      .groupBy('o.user_id')
      .execute()
    const byUser = new Map(totals.map((row) => [row.user_id, row]))
    yield users.map((user) => {
      const row = byUser.get(user.id)
      const spent = row ? Number(row.total_cents) - Number(row.refunded_cents ?? 0) : 0
      return [cell(user.id), cell(user.name), cell(user.email), cell(user.created_at), cell(row ? Number(row.orders_count) : 0), amount(spent)]
    })
  }
}
