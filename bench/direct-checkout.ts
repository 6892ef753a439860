// The checkout without HTTP: the same service calls the routes make (add to cart, then place the
// order in its transaction), driven by one loop per customer on the service's kind of connection
// (SQLite file, or a PostgreSQL pool of the service's size). Started by the orchestrator with fork().
import { connectDatabase } from '../src/db/connect.js'
import { addToCart, defaultCartSettings } from '../src/modules/cart/cart.service.js'
import { createOrdersDeps, placeOrder } from '../src/modules/orders/orders.service.js'
import type { DirectCheckoutResult } from './types.js'

export interface DirectCheckoutSpec {
  databaseUrl: string
  userIds: number[]
  productIds: number[]
  seconds: number
}

async function runDirectCheckout(spec: DirectCheckoutSpec): Promise<DirectCheckoutResult> {
  const { db } = connectDatabase(spec.databaseUrl)
  const orderDeps = createOrdersDeps(db)
  let orders = 0
  let failures = 0
  const started = performance.now()
  const deadline = started + spec.seconds * 1000
  const loop = async (userId: number): Promise<void> => {
    while (performance.now() < deadline) {
      const productId = spec.productIds[Math.floor(Math.random() * spec.productIds.length)] as number
      try {
        await addToCart(db, { userId }, defaultCartSettings, { productId, quantity: 1 })
        const { created } = await placeOrder(orderDeps, userId)
        if (created) orders += 1
      } catch {
        failures += 1
      }
    }
  }
  try {
    await Promise.all(spec.userIds.map(loop))
  } finally {
    await db.destroy()
  }
  const seconds = (performance.now() - started) / 1000
  return { orders, seconds, ordersPerSecond: orders / seconds, failures }
}

process.once('message', (spec: DirectCheckoutSpec) => {
  runDirectCheckout(spec).then(
    (result) => process.send?.({ ok: true, result }, () => process.exit(0)),
    (error: unknown) => process.send?.({ ok: false, error: String((error as Error)?.stack ?? error) }, () => process.exit(1)),
  )
})
