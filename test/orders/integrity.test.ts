import { describe, expect, it } from 'vitest'
import { placeOrder, type PlaceOrderStep } from '../../src/modules/orders/orders.service.js'
import { createTestApp, dialect, useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { backendPid, waitUntilBlockedBy } from '../helpers/pg-locks.js'
import { cartOf, countRows, fillCart, stockOf } from '../helpers/shop.js'

// Real concurrency: on PostgreSQL the requests run on a pool of 12 connections; on SQLite Kysely serialises the
// transactions on its single connection. Either way the stock must come out exact.

const t = useTestApp()

async function customers(n: number): Promise<TestUser[]> {
  return Promise.all(Array.from({ length: n }, () => makeUser(t.app)))
}

async function soldUnits(productId: number): Promise<number> {
  const rows = await t.app.db.selectFrom('order_items').select('quantity').where('product_id', '=', productId).execute()
  return rows.reduce((sum, r) => sum + r.quantity, 0)
}

describe('racing buyers never oversell', () => {
  it('50 customers race for 10 units, 1 each: exactly 10 orders, stock ends at 0', async () => {
    const product = await makeProduct(t.app, { name: 'Last Units', stock: 10 })
    const buyers = await customers(50)
    for (const buyer of buyers) await fillCart(t.app, buyer.id, [{ productId: product.id, quantity: 1 }])
    const ordersBefore = await countRows(t.app, 'orders')

    // Watch the stock while the race runs: it only ever goes down, and never below 0.
    const seen: number[] = []
    let racing = true
    const watcher = (async () => {
      while (racing) {
        seen.push(await stockOf(t.app, product.id))
        await new Promise((r) => setTimeout(r, 1))
      }
    })()
    const results = await Promise.all(buyers.map((b) => t.app.inject({ method: 'POST', url: '/orders', headers: bearer(b) })))
    racing = false
    await watcher

    expect(seen.length).toBeGreaterThan(0)
    expect(Math.min(...seen)).toBeGreaterThanOrEqual(0)
    expect(seen).toEqual([...seen].sort((a, b) => b - a))
    const won = results.filter((r) => r.statusCode === 201)
    const lost = results.filter((r) => r.statusCode === 409)
    expect(won).toHaveLength(10)
    expect(lost).toHaveLength(40)
    for (const r of lost) expect(r.json()).toEqual({ error: 'Stock insuficiente para Last Units' })
    expect(await stockOf(t.app, product.id)).toBe(0)
    expect(await soldUnits(product.id)).toBe(10)
    expect((await countRows(t.app, 'orders')) - ordersBefore).toBe(10)
    // Winners' carts are empty; every loser keeps their cart untouched.
    for (const [i, buyer] of buyers.entries()) {
      expect(await cartOf(t.app, buyer.id)).toEqual(results[i]?.statusCode === 201 ? {} : { [product.id]: 1 })
    }
  })

  it('mixed quantities and several products per cart: stock = initial - sold, never negative, orders match carts', async () => {
    const products = [
      await makeProduct(t.app, { name: 'Alpha', stock: 7, priceCents: 100 }),
      await makeProduct(t.app, { name: 'Beta', stock: 5, priceCents: 250 }),
      await makeProduct(t.app, { name: 'Gamma', stock: 9, priceCents: 999 }),
    ]
    const buyers = await customers(40)
    const carts = buyers.map((_, i) => {
      // Deterministic mix: 1 to 3 products per cart, quantities 1 to 3, in varying product order.
      const lines: Array<{ productId: number; quantity: number }> = []
      for (let k = 0; k < 3; k++) {
        if ((i + k) % 3 === 2 && k > 0) continue
        const product = products[(i + k) % 3] as (typeof products)[number]
        lines.push({ productId: product.id, quantity: ((i * 7 + k) % 3) + 1 })
      }
      return lines
    })
    for (const [i, buyer] of buyers.entries()) await fillCart(t.app, buyer.id, carts[i] ?? [])

    const results = await Promise.all(buyers.map((b) => t.app.inject({ method: 'POST', url: '/orders', headers: bearer(b) })))

    expect(results.every((r) => r.statusCode === 201 || r.statusCode === 409)).toBe(true)
    let okCount = 0
    for (const [i, res] of results.entries()) {
      const cart = Object.fromEntries((carts[i] ?? []).map((l) => [l.productId, l.quantity]))
      if (res.statusCode === 201) {
        okCount++
        const body = res.json() as { items: Array<{ productId: number; quantity: number }>; total: number }
        expect(Object.fromEntries(body.items.map((it) => [it.productId, it.quantity]))).toEqual(cart)
        expect(await cartOf(t.app, buyers[i]!.id)).toEqual({})
      } else {
        expect(res.json().error).toMatch(/^Stock insuficiente para (Alpha|Beta|Gamma)$/)
        expect(await cartOf(t.app, buyers[i]!.id)).toEqual(cart)
      }
    }
    expect(okCount).toBeGreaterThan(0)
    for (const product of products) {
      const stock = await stockOf(t.app, product.id)
      expect(stock).toBeGreaterThanOrEqual(0)
      expect(stock + (await soldUnits(product.id))).toBe(product.stock)
    }
  })

  it('through a real listening server with fetch: 30 buyers, 6 units, exactly 6 sold', async () => {
    // An app of its own: it listens, and its orders are the only ones counted. No e-mails to send: closing an app
    // whose send thread has started waits for it.
    const own = await createTestApp({}, { outbox: { enabled: false } })
    try {
      const { app } = own
      const product = await makeProduct(app, { name: 'Wire', stock: 6 })
      const buyers = await Promise.all(Array.from({ length: 30 }, () => makeUser(app)))
      for (const buyer of buyers) await fillCart(app, buyer.id, [{ productId: product.id, quantity: 1 }])
      const address = await app.listen({ port: 0, host: '127.0.0.1' })

      const statuses = await Promise.all(
        buyers.map(async (b) => {
          const res = await fetch(`${address}/orders`, { method: 'POST', headers: bearer(b) })
          await res.arrayBuffer()
          return res.status
        }),
      )

      expect(statuses.filter((s) => s === 201)).toHaveLength(6)
      expect(statuses.filter((s) => s === 409)).toHaveLength(24)
      expect(await stockOf(app, product.id)).toBe(0)
      expect(await countRows(app, 'orders')).toBe(6)
    } finally {
      await own.close()
    }
  })

  it('40 buyers of several variants of two products, while an admin restocks one of them: no deadlock, every unit counted', async () => {
    // Two products with a Talla option and three variants each (stock 6 per variant).
    const products = [await makeProduct(t.app, { name: 'Camisa', stock: 6 }), await makeProduct(t.app, { name: 'Falda', stock: 6 })]
    const variantIds: number[] = []
    const productOf = new Map<number, number>()
    for (const product of products) {
      const optioned = await t.app.inject({
        method: 'POST',
        url: `/products/${product.id}/options`,
        headers: bearer(t.admin),
        payload: { name: 'Talla', defaultValue: 'S' },
      })
      expect(optioned.statusCode).toBe(201)
      const added = await t.app.inject({
        method: 'POST',
        url: `/products/${product.id}/variants`,
        headers: bearer(t.admin),
        payload: [
          { options: { Talla: 'M' }, price: 10, stock: 6 },
          { options: { Talla: 'L' }, price: 10, stock: 6 },
        ],
      })
      expect(added.statusCode).toBe(201)
      const rows = await t.app.db.selectFrom('product_variants').select('id').where('product_id', '=', product.id).orderBy('id').execute()
      variantIds.push(...rows.map((r) => r.id))
      for (const r of rows) productOf.set(r.id, product.id)
    }
    expect(variantIds).toHaveLength(6)
    // Each cart holds 2 or 3 variants of both products, added in a different order per buyer; 1 or 2 units each.
    const buyers = await customers(40)
    for (const [i, buyer] of buyers.entries()) {
      const picks = [variantIds[i % 6]!, variantIds[(i + 3) % 6]!, ...(i % 2 === 0 ? [variantIds[(i + 1) % 6]!] : [])]
      const lines = picks.map((variantId, k) => ({
        productId: productOf.get(variantId)!,
        variantId,
        quantity: ((i + k) % 2) + 1,
      }))
      await fillCart(t.app, buyer.id, i % 3 === 0 ? lines.reverse() : lines)
    }
    const restock = variantIds[4]!
    const [results, restocked] = await Promise.all([
      Promise.all(buyers.map((b) => t.app.inject({ method: 'POST', url: '/orders', headers: bearer(b) }))),
      (async () => {
        await new Promise((r) => setTimeout(r, 5))
        return t.app.inject({ method: 'PATCH', url: `/variants/${restock}`, headers: bearer(t.admin), payload: { stock: 20 } })
      })(),
    ])

    expect(results.map((r) => r.statusCode).filter((s) => s !== 201 && s !== 409)).toEqual([])
    expect(restocked.statusCode).toBe(200)
    // Units: every variant's stock plus what orders took of it is what it had (the restocked one: what it was set to).
    const stock = await t.app.db.selectFrom('product_variants').select(['id', 'stock']).where('id', 'in', variantIds).execute()
    const sold = await t.app.db.selectFrom('order_items').select(['variant_id', 'quantity']).where('variant_id', 'in', variantIds).execute()
    const soldOf = (id: number) => sold.filter((s) => s.variant_id === id).reduce((n, s) => n + s.quantity, 0)
    for (const { id, stock: left } of stock) {
      expect(left).toBeGreaterThanOrEqual(0)
      if (id !== restock) expect(left + soldOf(id)).toBe(6)
      // Set to 20 at some point of the race: what was sold after it came off those 20.
      else expect([left <= 20, left + soldOf(id) >= 20]).toEqual([true, true])
    }
    expect(results.filter((r) => r.statusCode === 201).length).toBeGreaterThan(0)
    // Each product's stock is the sum of its variants'.
    for (const product of products) {
      const own = await t.app.db.selectFrom('product_variants').select('stock').where('product_id', '=', product.id).execute()
      expect(await stockOf(t.app, product.id)).toBe(own.reduce((n, v) => n + v.stock, 0))
    }
  })

  it('one user double-submitting without a key gets one order; the other request finds the cart empty', async () => {
    const [buyer] = await customers(1)
    const product = await makeProduct(t.app, { stock: 10 })
    await fillCart(t.app, buyer!.id, [{ productId: product.id, quantity: 3 }])
    const results = await Promise.all(Array.from({ length: 5 }, () => t.app.inject({ method: 'POST', url: '/orders', headers: bearer(buyer!) })))
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 400, 400, 400, 400])
    expect(await stockOf(t.app, product.id)).toBe(7)
  })

  it('two admins cancelling the same order at once restock it once', async () => {
    const [buyer] = await customers(1)
    const product = await makeProduct(t.app, { stock: 10 })
    await fillCart(t.app, buyer!.id, [{ productId: product.id, quantity: 4 }])
    const placed = (await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(buyer!) })).json()
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        t.app.inject({ method: 'PATCH', url: `/orders/${placed.id}/status`, headers: bearer(t.admin), payload: { status: 'cancelled' } }),
      ),
    )
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409, 409, 409, 409, 409])
    for (const r of results.filter((x) => x.statusCode === 409)) {
      expect(r.json()).toEqual({ error: 'Transición de estado no permitida: cancelled -> cancelled' })
    }
    expect(await stockOf(t.app, product.id)).toBe(10)
  })
})

describe('two checkouts of different products (PostgreSQL)', () => {
  it.skipIf(dialect !== 'postgres')('never wait for each other: a stock move takes no lock on the shop-wide product count', async () => {
    const [first, second] = [await makeProduct(t.app, { name: 'Uno', stock: 5 }), await makeProduct(t.app, { name: 'Dos', stock: 5 })]
    const buyer = (await customers(1))[0]!
    await fillCart(t.app, buyer.id, [{ productId: second.id, quantity: 1 }])
    // A transaction that moved the first product's stock, as a checkout does, and has not committed yet.
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let moved!: () => void
    const hasMoved = new Promise<void>((resolve) => (moved = resolve))
    const holder = t.app.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('products')
        .set((eb) => ({ stock: eb('stock', '-', 1) }))
        .where('id', '=', first.id)
        .execute()
      moved()
      await held
    })
    await hasMoved
    try {
      // Before: the product-count trigger had locked the shop-wide count row, so this order waited for a commit
      // that comes only after it, until the statement timeout (a 5xx).
      const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(buyer) })
      expect(res.statusCode).toBe(201)
    } finally {
      release()
      await holder
    }
    expect([await stockOf(t.app, first.id), await stockOf(t.app, second.id)]).toEqual([4, 4])
  })
})

describe('orders and cancellations racing', () => {
  it('stock always equals initial stock minus the units of orders not cancelled', async () => {
    const product = await makeProduct(t.app, { name: 'Busy', stock: 30 })
    const buyers = await customers(20)
    for (const b of buyers) await fillCart(t.app, b.id, [{ productId: product.id, quantity: 2 }])
    const first = await Promise.all(buyers.map((b) => t.app.inject({ method: 'POST', url: '/orders', headers: bearer(b) })))
    const placed = first.filter((r) => r.statusCode === 201).map((r) => r.json() as { id: number })
    expect(placed).toHaveLength(15)
    const losers = buyers.filter((_, i) => first[i]?.statusCode === 409)

    // Cancel every other order (twice each, at once) while the buyers who lost try again.
    const cancels = placed
      .filter((_, i) => i % 2 === 0)
      .flatMap((o) =>
        [1, 2].map(() => t.app.inject({ method: 'PATCH', url: `/orders/${o.id}/status`, headers: bearer(t.admin), payload: { status: 'cancelled' } })),
      )
    const retries = losers.map((b) => t.app.inject({ method: 'POST', url: '/orders', headers: bearer(b) }))
    const [cancelled, retried] = await Promise.all([Promise.all(cancels), Promise.all(retries)])

    expect(cancelled.filter((r) => r.statusCode === 200)).toHaveLength(8)
    expect(cancelled.filter((r) => r.statusCode === 409)).toHaveLength(8)
    expect(retried.every((r) => r.statusCode === 201 || r.statusCode === 409)).toBe(true)
    const live = await t.app.db
      .selectFrom('order_items as i')
      .innerJoin('orders as o', 'o.id', 'i.order_id')
      .select('i.quantity')
      .where('i.product_id', '=', product.id)
      .where('o.status', '!=', 'cancelled')
      .execute()
    const liveUnits = live.reduce((sum, r) => sum + r.quantity, 0)
    const stock = await stockOf(t.app, product.id)
    expect(stock).toBeGreaterThanOrEqual(0)
    expect(stock + liveUnits).toBe(30)
  })
})

describe('a product deleted while it is being ordered', () => {
  it('orders still succeed (with or without that line) and no stock is lost', async () => {
    const doomed = await makeProduct(t.app, { name: 'Doomed', stock: 100 })
    const staple = await makeProduct(t.app, { name: 'Staple', stock: 100 })
    const buyers = await customers(20)
    for (const b of buyers) {
      await fillCart(t.app, b.id, [
        { productId: doomed.id, quantity: 1 },
        { productId: staple.id, quantity: 2 },
      ])
    }
    const orders = buyers.map((b) => t.app.inject({ method: 'POST', url: '/orders', headers: bearer(b) }))
    // The catalog's delete, as one statement: the product row, then (cascade) the cart lines holding it.
    const removal = t.app.db
      .deleteFrom('products')
      .where('id', '=', doomed.id)
      .execute()
      .then(
        () => 'deleted',
        (error: { code?: string }) => error.code,
      )
    const [results, removed] = await Promise.all([Promise.all(orders), removal])

    expect(results.map((r) => r.statusCode)).toEqual(buyers.map(() => 201))
    expect(await stockOf(t.app, staple.id)).toBe(100 - 2 * 20)
    const withDoomed = results.filter((r) => r.json().items.some((i: { productId: number }) => i.productId === doomed.id)).length
    expect(await soldUnits(doomed.id)).toBe(withDoomed)
    if (removed === 'deleted') {
      expect(await t.app.db.selectFrom('products').select('id').where('id', '=', doomed.id).executeTakeFirst()).toBeUndefined()
    } else {
      // PostgreSQL may pick the delete as the deadlock victim; then the product stays, with exact stock.
      expect(removed).toBe('40P01')
      expect(await stockOf(t.app, doomed.id)).toBe(100 - withDoomed)
    }
  })
})

describe('a deadlock with a product delete (PostgreSQL)', () => {
  it.skipIf(dialect !== 'postgres')('the order transaction that PostgreSQL aborts is run again, without the deleted product', async () => {
    const [buyer] = await customers(1)
    const doomed = await makeProduct(t.app, { name: 'Doomed', stock: 5 })
    const staple = await makeProduct(t.app, { name: 'Staple', stock: 5 })
    await fillCart(t.app, buyer!.id, [
      { productId: doomed.id, quantity: 1 },
      { productId: staple.id, quantity: 2 },
    ])
    let cartTaken!: () => void
    const cartTakenOnce = new Promise<void>((resolve) => (cartTaken = resolve))
    let productLocked!: () => void
    const productLockedOnce = new Promise<void>((resolve) => (productLocked = resolve))
    const steps: string[] = []

    // The "catalog delete": holds the product first, then wants the cart line the order already holds.
    const removal = t.app.db.transaction().execute(async (trx) => {
      await trx.selectFrom('products').select('id').where('id', '=', doomed.id).forUpdate().execute()
      const pid = await backendPid(trx)
      productLocked()
      await cartTakenOnce
      await waitUntilBlockedBy(t.app.db, pid) // the order is now waiting for the product
      await trx.deleteFrom('cart_items').where('product_id', '=', doomed.id).execute()
      await trx.deleteFrom('products').where('id', '=', doomed.id).execute()
    })
    const placed = placeOrder(t.app.services.orders, buyer!.id, {
      afterStep: async (step) => {
        steps.push(step)
        if (step === 'cart-taken' && steps.length === 1) {
          cartTaken()
          await productLockedOnce
        }
      },
    })
    const [result] = await Promise.all([placed, removal])

    // Run again at least once. Usually exactly once; on a loaded machine the second run can take the cart's lines
    // before the delete (woken by the first run's abort) has taken the doomed one, and then the two deadlock again
    // on the product: a third run, within retryAborted's three (seen once in CI).
    const runs = steps.filter((s) => s === 'cart-taken').length
    expect(runs).toBeGreaterThanOrEqual(2)
    expect(runs).toBeLessThanOrEqual(3)
    expect(result.created).toBe(true)
    expect(result.order.items.map((i) => [i.productId, i.quantity])).toEqual([[staple.id, 2]])
    expect(await stockOf(t.app, staple.id)).toBe(3)
    expect(await cartOf(t.app, buyer!.id)).toEqual({})
  })
})

describe('Idempotency-Key under concurrency', () => {
  it('the same key sent 10 times at once creates one order; every answer is that order', async () => {
    const [buyer] = await customers(1)
    const product = await makeProduct(t.app, { stock: 10 })
    await fillCart(t.app, buyer!.id, [{ productId: product.id, quantity: 2 }])
    const ordersBefore = await countRows(t.app, 'orders')
    const results = await Promise.all(
      Array.from({ length: 10 }, () => t.app.inject({ method: 'POST', url: '/orders', headers: { ...bearer(buyer!), 'idempotency-key': 'pay-once' } })),
    )
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(1)
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(9)
    const ids = new Set(results.map((r) => r.json().id))
    expect(ids.size).toBe(1)
    expect((await countRows(t.app, 'orders')) - ordersBefore).toBe(1)
    expect(await stockOf(t.app, product.id)).toBe(8)
    const first = results.find((r) => r.statusCode === 201)!.json()
    for (const r of results) expect(r.json()).toEqual(first)
  })
})

describe('a failure in the middle of order creation', () => {
  const steps: PlaceOrderStep[] = ['key-claimed', 'cart-taken', 'stock-reserved', 'order-written', 'items-written']

  it.each(steps)('after %s leaves cart, stock, orders and keys exactly as before', async (failAt) => {
    const [buyer] = await customers(1)
    const a = await makeProduct(t.app, { stock: 5 })
    const b = await makeProduct(t.app, { stock: 3 })
    await fillCart(t.app, buyer!.id, [
      { productId: a.id, quantity: 2 },
      { productId: b.id, quantity: 3 },
    ])
    const counts = async () => ({
      orders: await countRows(t.app, 'orders'),
      items: await countRows(t.app, 'order_items'),
      keys: await countRows(t.app, 'idempotency_keys'),
    })
    const before = await counts()
    const seen: PlaceOrderStep[] = []

    await expect(
      placeOrder(t.app.services.orders, buyer!.id, {
        idempotencyKey: `crash-${failAt}`,
        afterStep: (step) => {
          seen.push(step)
          if (step === failAt) throw new Error('simulated crash')
        },
      }),
    ).rejects.toThrow('simulated crash')

    expect(seen.at(-1)).toBe(failAt)
    expect(await cartOf(t.app, buyer!.id)).toEqual({ [a.id]: 2, [b.id]: 3 })
    expect(await stockOf(t.app, a.id)).toBe(5)
    expect(await stockOf(t.app, b.id)).toBe(3)
    expect(await counts()).toEqual(before)

    // The same key works afterwards: nothing of the failed attempt was remembered.
    const retry = await placeOrder(t.app.services.orders, buyer!.id, { idempotencyKey: `crash-${failAt}` })
    expect(retry.created).toBe(true)
    expect(await stockOf(t.app, a.id)).toBe(3)
    expect(await stockOf(t.app, b.id)).toBe(0)
  })
})
