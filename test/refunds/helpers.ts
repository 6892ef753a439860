import type { FastifyInstance } from 'fastify'
import { expect } from 'vitest'
import type { Order } from '../../src/modules/orders/orders.schemas.js'
import { makeProduct, type TestProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'

/**
 * The worked example of docs/taxes-discounts.md as a paid order: 2 × 19.99 (standard, 21 %) and 1 × 5.00 (reduced,
 * 10 %), a 10 % code, shipping 4.90 (standard), prices with tax. Lines 35.98 (tax 6.24) and 4.50 (tax 0.41),
 * shipping 4.90 (tax 0.85): total 45.38.
 */
export interface ExampleOrder {
  order: Order
  buyer: TestUser
  mug: TestProduct
  tea: TestProduct
  /** The order's lines: 2 mugs, 1 tea. */
  mugLine: number
  teaLine: number
}

let sequence = 0

/** Rates, a shipping method and a code for the example; returns what checkout needs. */
export async function exampleSetup(app: FastifyInstance, admin: TestUser): Promise<{ methodId: number; code: string }> {
  await app.db.deleteFrom('tax_rates').execute()
  for (const [taxClass, rate] of [
    ['standard', 21],
    ['reduced', 10],
  ] as const) {
    const res = await app.inject({ method: 'POST', url: '/tax-rates', headers: bearer(admin), payload: { country: 'ES', taxClass, rate } })
    expect(res.statusCode).toBe(201)
  }
  const method = await app.inject({ method: 'POST', url: '/shipping-methods', headers: bearer(admin), payload: { name: `Correo ${++sequence}`, price: 4.9 } })
  expect(method.statusCode).toBe(201)
  const code = `REF${sequence}X${Date.now() % 100000}`
  const made = await app.inject({ method: 'POST', url: '/discount-codes', headers: bearer(admin), payload: { code, type: 'percent', value: 10 } })
  expect(made.statusCode).toBe(201)
  return { methodId: method.json().id as number, code }
}

/** Places the example order (pending); `paid` moves it to paid by the admin (the manual provider's way). */
export async function placeExample(
  app: FastifyInstance,
  admin: TestUser,
  setup: { methodId: number; code: string },
  options: { paid?: boolean; stock?: number } = {},
): Promise<ExampleOrder> {
  const buyer = await makeUser(app, 'customer', 'Ana Pérez')
  const mug = await makeProduct(app, { name: `Taza ${++sequence}`, priceCents: 1999, stock: options.stock ?? 10 })
  const tea = await makeProduct(app, { name: `Té ${sequence}`, priceCents: 500, stock: options.stock ?? 10 })
  await app.db.updateTable('products').set({ tax_class: 'reduced' }).where('id', '=', tea.id).execute()
  app.catalogCache.invalidate()
  await fillCart(app, buyer.id, [
    { productId: mug.id, quantity: 2 },
    { productId: tea.id, quantity: 1 },
  ])
  expect((await app.inject({ method: 'POST', url: '/cart/discount', headers: bearer(buyer), payload: { code: setup.code } })).statusCode).toBe(200)
  const res = await app.inject({
    method: 'POST',
    url: '/orders',
    headers: bearer(buyer),
    payload: {
      shippingAddress: { fullName: 'Ana Pérez', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' },
      shippingMethodId: setup.methodId,
    },
  })
  expect(res.statusCode, res.body).toBe(201)
  let order = res.json() as Order
  expect(order.total).toBe(45.38)
  if (options.paid ?? true) {
    const paid = await app.inject({ method: 'PATCH', url: `/orders/${order.id}/status`, headers: bearer(admin), payload: { status: 'paid' } })
    expect(paid.statusCode).toBe(200)
    order = paid.json() as Order
  }
  const mugLine = order.items.find((item) => item.productId === mug.id)?.id as number
  const teaLine = order.items.find((item) => item.productId === tea.id)?.id as number
  return { order, buyer, mug, tea, mugLine, teaLine }
}

let keys = 0
/** A fresh Idempotency-Key. */
export function newKey(): string {
  keys += 1
  return `refund-key-${process.pid}-${Date.now()}-${keys}`
}

export function refund(app: FastifyInstance, admin: TestUser, orderId: number, payload: object, key: string | null = newKey()) {
  return app.inject({
    method: 'POST',
    url: `/orders/${orderId}/refunds`,
    headers: { ...bearer(admin), ...(key === null ? {} : { 'idempotency-key': key }) },
    payload,
  })
}

export function preview(app: FastifyInstance, admin: TestUser, orderId: number, payload: object) {
  return app.inject({ method: 'POST', url: `/orders/${orderId}/refunds/preview`, headers: bearer(admin), payload })
}

export async function getOrder(app: FastifyInstance, admin: TestUser, orderId: number): Promise<Order> {
  const res = await app.inject({ method: 'GET', url: `/orders/${orderId}`, headers: bearer(admin) })
  expect(res.statusCode).toBe(200)
  return res.json() as Order
}
