import { beforeEach, describe, expect, it } from 'vitest'
import { createCategory } from '../../src/modules/catalog/categories.service.js'
import {
  type CheckCodeInput,
  checkCode,
  createDiscountCode,
  type DiscountLine,
  evaluateCode,
  redeem,
  release,
} from '../../src/modules/discounts/discounts.service.js'
import type { CreateDiscountCodeInput, DiscountCode } from '../../src/modules/discounts/discounts.schemas.js'
import { AppError } from '../../src/shared/errors.js'
import { useTestApp } from '../helpers/app.js'
import { redeemOrder } from '../helpers/discounts.js'

// The rules of applying a code (checkCode / evaluateCode), and counting its uses (redeem / release), through the
// service the cart and checkout call.

const t = useTestApp()
beforeEach(async () => {
  await t.app.db.deleteFrom('orders').execute()
  await t.app.db.deleteFrom('discount_codes').execute()
})

const NOW = '2026-12-15T12:00:00.000Z'
const line = (productId: number, subtotalCents: number, categoryId: number | null = null): DiscountLine => ({ productId, categoryId, subtotalCents })

function input(code: string, extra: Partial<CheckCodeInput> = {}): CheckCodeInput {
  return { code, now: NOW, customer: { userId: 7, email: 'ana@example.com' }, lines: [line(1, 5000)], currency: 'EUR', ...extra }
}

/** The code as a cart or an order reads it: the admin's view but its count of uses (counting those is a read of its own). */
function applied(code: DiscountCode): Omit<DiscountCode, 'usageCount'> {
  const { usageCount: _, ...view } = code
  return view
}

function makeCode(values: Partial<CreateDiscountCodeInput> & { code: string }) {
  return createDiscountCode(t.app.db, { type: 'percent', value: 10, ...values } as CreateDiscountCodeInput, null)
}

async function makeOrder(): Promise<number> {
  const now = new Date().toISOString()
  const row = await t.app.db
    .insertInto('orders')
    .values({ user_id: 7, total_cents: 1000, status: 'pending', created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

/** The AppError `promise` rejects with, as status and message. */
async function failure(promise: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(AppError)
    return { status: (error as AppError).statusCode, message: (error as AppError).message }
  }
  throw new Error('expected a failure')
}

describe('checkCode', () => {
  it('answers the code, the eligible lines and their subtotal; the code is found in any case', async () => {
    const code = await makeCode({ code: 'Hello-10', value: '12.5' })
    const checked = await checkCode(t.app.db, input('hELLO-10', { lines: [line(1, 1999), line(2, 500)] }))
    expect(checked).toEqual({ code: applied(code), type: 'percent', storedValue: 1250, eligible: [true, true], eligibleSubtotalCents: 2499 })
  })

  it('404 Código de descuento no válido for an unknown or inactive code', async () => {
    await makeCode({ code: 'SLEEPY', active: false })
    expect(await failure(checkCode(t.app.db, input('NOPE')))).toEqual({ status: 404, message: 'Código de descuento no válido' })
    expect(await failure(checkCode(t.app.db, input('sleepy')))).toEqual({ status: 404, message: 'Código de descuento no válido' })
  })

  it('409 before startsAt (inclusive from it) and from endsAt (exclusive)', async () => {
    await makeCode({ code: 'WINDOW', startsAt: '2026-12-10T00:00:00Z', endsAt: '2026-12-20T00:00:00Z' })
    expect(await failure(checkCode(t.app.db, input('WINDOW', { now: '2026-12-09T23:59:59.999Z' })))).toEqual({
      status: 409,
      message: 'El código de descuento aún no es válido',
    })
    await expect(checkCode(t.app.db, input('WINDOW', { now: '2026-12-10T00:00:00.000Z' }))).resolves.toBeDefined()
    await expect(checkCode(t.app.db, input('WINDOW', { now: new Date('2026-12-19T23:59:59.999Z') }))).resolves.toBeDefined()
    expect(await failure(checkCode(t.app.db, input('WINDOW', { now: '2026-12-20T00:00:00.000Z' })))).toEqual({
      status: 409,
      message: 'El código de descuento ha caducado',
    })
  })

  it('409 when the usage limit is reached', async () => {
    const code = await makeCode({ code: 'ONCE', usageLimit: 1 })
    await checkCode(t.app.db, input('ONCE'))
    await redeemOrder(t.app.db, { codeId: code.id, orderId: await makeOrder(), userId: 99, email: 'other@example.com', amountCents: 100 })
    expect(await failure(checkCode(t.app.db, input('ONCE')))).toEqual({ status: 409, message: 'El código de descuento ha alcanzado su límite de usos' })
  })

  it('409 when the customer reached their limit, matched by user id or by e-mail (any case)', async () => {
    const code = await makeCode({ code: 'PERSONAL', perCustomerLimit: 1 })
    await redeemOrder(t.app.db, { codeId: code.id, orderId: await makeOrder(), userId: 7, email: 'old-address@example.com', amountCents: 100 })
    const limit = { status: 409, message: 'Ya has usado este código de descuento el máximo de veces permitido' }
    // The same user under another e-mail.
    expect(await failure(checkCode(t.app.db, input('PERSONAL', { customer: { userId: 7, email: 'new@example.com' } })))).toEqual(limit)
    // A guest with that user's e-mail of the time.
    expect(await failure(checkCode(t.app.db, input('PERSONAL', { customer: { userId: null, email: 'Old-Address@Example.com' } })))).toEqual(limit)
    // Someone else; a guest with no e-mail yet.
    await expect(checkCode(t.app.db, input('PERSONAL', { customer: { userId: 8, email: 'b@example.com' } }))).resolves.toBeDefined()
    await expect(checkCode(t.app.db, input('PERSONAL', { customer: { userId: null, email: null } }))).resolves.toBeDefined()
  })

  it('eligible lines: the products, and the products of the categories with their descendants', async () => {
    const root = await createCategory(t.app.db, { name: 'Root', description: '' }, null)
    const child = await createCategory(t.app.db, { name: 'Child', description: '', parentId: root.id }, null)
    const grandchild = await createCategory(t.app.db, { name: 'Grandchild', description: '', parentId: child.id }, null)
    const other = await createCategory(t.app.db, { name: 'Other', description: '' }, null)
    const byCategory = await makeCode({ code: 'BYCAT', categoryIds: [child.id] })
    const lines = [line(1, 100, root.id), line(2, 200, child.id), line(3, 300, grandchild.id), line(4, 400, other.id), line(5, 500, null)]
    expect(await checkCode(t.app.db, input('BYCAT', { lines }))).toMatchObject({
      code: applied(byCategory),
      eligible: [false, true, true, false, false],
      eligibleSubtotalCents: 500,
    })
    const both = await createDiscountCode(t.app.db, { code: 'BOTH', type: 'fixed', value: 1 }, null)
    await t.app.db
      .updateTable('discount_codes')
      .set({ product_ids: '[5]', category_ids: `[${other.id}]` })
      .where('id', '=', both.id)
      .execute()
    expect(await checkCode(t.app.db, input('BOTH', { lines }))).toMatchObject({ eligible: [false, false, false, true, true], eligibleSubtotalCents: 900 })
  })

  it('409 when no line is eligible (a product deleted since matches nothing; the code never becomes "every product")', async () => {
    const code = await makeCode({ code: 'GONE' })
    await t.app.db.updateTable('discount_codes').set({ product_ids: '[424242]' }).where('id', '=', code.id).execute()
    expect(await failure(checkCode(t.app.db, input('GONE', { lines: [line(1, 5000, null)] })))).toEqual({
      status: 409,
      message: 'El código de descuento no se aplica a ningún producto del carrito',
    })
  })

  it('409 El pedido mínimo para este código es 50.00 EUR when the eligible subtotal is under the minimum', async () => {
    const code = await makeCode({ code: 'MIN50', minSubtotal: 50 })
    await t.app.db.updateTable('discount_codes').set({ product_ids: '[1]' }).where('id', '=', code.id).execute()
    // 49.99 eligible (the other line does not count).
    const lines = [line(1, 4999), line(2, 10000)]
    expect(await failure(checkCode(t.app.db, input('MIN50', { lines })))).toEqual({ status: 409, message: 'El pedido mínimo para este código es 50.00 EUR' })
    expect(await failure(checkCode(t.app.db, input('MIN50', { lines, currency: 'USD' })))).toEqual({
      status: 409,
      message: 'El pedido mínimo para este código es 50.00 USD',
    })
    await expect(checkCode(t.app.db, input('MIN50', { lines: [line(1, 5000)] }))).resolves.toMatchObject({ eligibleSubtotalCents: 5000 })
  })

  it('answers the first failed rule in order', async () => {
    // Not yet valid, expired window aside: used up, over the customer's limit, no line, under the minimum.
    const code = await makeCode({ code: 'ALLBAD', usageLimit: 1, perCustomerLimit: 1, minSubtotal: 1000, startsAt: '2027-01-01T00:00:00Z' })
    await redeemOrder(t.app.db, { codeId: code.id, orderId: await makeOrder(), userId: 7, email: 'ana@example.com', amountCents: 1 })
    await t.app.db.updateTable('discount_codes').set({ product_ids: '[999]' }).where('id', '=', code.id).execute()
    const messages: string[] = []
    const steps: Array<() => Promise<unknown>> = [
      () => t.app.db.updateTable('discount_codes').set({ starts_at: null, ends_at: '2026-01-01T00:00:00.000Z' }).where('id', '=', code.id).execute(),
      () => t.app.db.updateTable('discount_codes').set({ ends_at: null }).where('id', '=', code.id).execute(),
      () => t.app.db.updateTable('discount_codes').set({ usage_limit: null }).where('id', '=', code.id).execute(),
      () => t.app.db.updateTable('discount_codes').set({ per_customer_limit: null }).where('id', '=', code.id).execute(),
      () => t.app.db.updateTable('discount_codes').set({ product_ids: '[1]' }).where('id', '=', code.id).execute(),
    ]
    messages.push((await failure(checkCode(t.app.db, input('ALLBAD')))).message)
    for (const step of steps) {
      await step()
      messages.push((await failure(checkCode(t.app.db, input('ALLBAD')))).message)
    }
    expect(messages).toEqual([
      'El código de descuento aún no es válido',
      'El código de descuento ha caducado',
      'El código de descuento ha alcanzado su límite de usos',
      'Ya has usado este código de descuento el máximo de veces permitido',
      'El código de descuento no se aplica a ningún producto del carrito',
      'El pedido mínimo para este código es 1000.00 EUR',
    ])
  })
})

describe('evaluateCode', () => {
  it('answers applicable with what checkCode answers, or applicable: false with the reason instead of throwing', async () => {
    const code = await makeCode({ code: 'CART', minSubtotal: '20.5' })
    expect(await evaluateCode(t.app.db, input('CART'))).toEqual({ applicable: true, ...(await checkCode(t.app.db, input('CART'))) })
    const low = await evaluateCode(t.app.db, input('CART', { lines: [line(1, 100)] }))
    expect(low).toMatchObject({ applicable: false, reason: 'El pedido mínimo para este código es 20.50 EUR', code: applied(code) })
    expect(low.applicable === false && low.error).toBeInstanceOf(AppError)
    expect(await evaluateCode(t.app.db, input('UNKNOWN'))).toMatchObject({ applicable: false, reason: 'Código de descuento no válido', code: null })
  })
})

describe('redeem and release', () => {
  /** The orders holding a use of the code: its redemptions. */
  const holding = (codeId: number) =>
    t.app.db
      .selectFrom('orders')
      .select(['id', 'user_id', 'discount_email', 'discount_total_cents'])
      .where('discount_code_id', '=', codeId)
      .orderBy('id')
      .execute()
  async function codeRow(id: number) {
    return t.app.db.selectFrom('discount_codes').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  }

  it('redeem counts a use and writes the redemption (e-mail lower-cased); release gives it back once', async () => {
    const code = await makeCode({ code: 'COUNT', usageLimit: 5 })
    const orderId = await makeOrder()
    await t.app.db.transaction().execute((trx) => redeemOrder(trx, { codeId: code.id, orderId, userId: 7, email: ' Ana@Example.com ', amountCents: 450 }))
    expect(await holding(code.id)).toEqual([{ id: orderId, user_id: 7, discount_email: 'ana@example.com', discount_total_cents: 450 }])
    expect((await codeRow(code.id)).usage_count).toBe(1)

    expect(await t.app.db.transaction().execute((trx) => release(trx, orderId))).toBe(true)
    expect((await codeRow(code.id)).usage_count).toBe(0)
    expect(await holding(code.id)).toEqual([])
    // The order itself no longer holds the use.
    expect((await t.app.db.selectFrom('orders').select('discount_code_id').where('id', '=', orderId).executeTakeFirstOrThrow()).discount_code_id).toBeNull()
    // A second release (the order expired after being cancelled, say) changes nothing.
    expect(await release(t.app.db, orderId)).toBe(false)
    expect(await release(t.app.db, 424242)).toBe(false)
    expect((await codeRow(code.id)).usage_count).toBe(0)
  })

  it('a release makes the use available again', async () => {
    const code = await makeCode({ code: 'SINGLE', usageLimit: 1, perCustomerLimit: 1 })
    const first = await makeOrder()
    await redeemOrder(t.app.db, { codeId: code.id, orderId: first, userId: 7, email: 'ana@example.com', amountCents: 1 })
    expect(await failure(checkCode(t.app.db, input('SINGLE')))).toMatchObject({ status: 409 })
    await release(t.app.db, first)
    await expect(checkCode(t.app.db, input('SINGLE'))).resolves.toBeDefined()
    await redeemOrder(t.app.db, { codeId: code.id, orderId: await makeOrder(), userId: 7, email: 'ana@example.com', amountCents: 1 })
    expect((await codeRow(code.id)).usage_count).toBe(1)
  })

  it('throws the limit’s 409 and the caller’s transaction rolls back (counter, redemption and order)', async () => {
    const code = await makeCode({ code: 'LIMITED', usageLimit: 1 })
    await redeemOrder(t.app.db, { codeId: code.id, orderId: await makeOrder(), userId: 1, email: 'a@example.com', amountCents: 1 })
    const ordersBefore = await t.app.db.selectFrom('orders').select('id').execute()
    const attempt = t.app.db.transaction().execute(async (trx) => {
      const now = new Date().toISOString()
      const order = await trx
        .insertInto('orders')
        .values({ user_id: 2, total_cents: 1, status: 'pending', created_at: now, updated_at: now })
        .returning('id')
        .executeTakeFirstOrThrow()
      return redeemOrder(trx, { codeId: code.id, orderId: order.id, userId: 2, email: 'b@example.com', amountCents: 1 })
    })
    expect(await failure(attempt)).toEqual({ status: 409, message: 'El código de descuento ha alcanzado su límite de usos' })
    expect(await t.app.db.selectFrom('orders').select('id').execute()).toEqual(ordersBefore)
    expect((await codeRow(code.id)).usage_count).toBe(1)
    expect(await holding(code.id)).toHaveLength(1)
  })

  it('throws the per-customer 409 (by user id or e-mail) and leaves the counter as it was', async () => {
    const code = await makeCode({ code: 'MINE', perCustomerLimit: 2 })
    await redeemOrder(t.app.db, { codeId: code.id, orderId: await makeOrder(), userId: 7, email: 'ana@example.com', amountCents: 1 })
    await redeemOrder(t.app.db, { codeId: code.id, orderId: await makeOrder(), userId: null, email: 'ana@example.com', amountCents: 1 })
    // The user (both rows: one by id and e-mail, one by e-mail), and a guest with the e-mail (both rows by e-mail).
    for (const customer of [
      { userId: 7, email: 'ana@example.com' },
      { userId: null, email: 'ANA@example.com' },
    ]) {
      const orderId = await makeOrder()
      expect(await failure(redeemOrder(t.app.db, { codeId: code.id, orderId, ...customer, amountCents: 1 }))).toEqual({
        status: 409,
        message: 'Ya has usado este código de descuento el máximo de veces permitido',
      })
    }
    expect(await holding(code.id)).toHaveLength(2)
    // The same user under a new e-mail matches one row (by id): under the limit of 2.
    await redeemOrder(t.app.db, { codeId: code.id, orderId: await makeOrder(), userId: 7, email: 'new@example.com', amountCents: 1 })
    expect(await holding(code.id)).toHaveLength(3)
    // Without a usage limit, the code's row keeps no count: its orders are its uses.
    expect((await codeRow(code.id)).usage_count).toBe(0)
  })

  it('refuses to count a use for an order that does not hold the code (one no release could give back)', async () => {
    const code = await makeCode({ code: 'HELD', usageLimit: 5 })
    const orderId = await makeOrder()
    await expect(redeem(t.app.db, { codeId: code.id, orderId, userId: 7, email: 'ana@example.com', counted: true })).rejects.toThrow(
      `order ${orderId} does not hold code ${code.id}`,
    )
    expect((await codeRow(code.id)).usage_count).toBe(0)
  })

  it('404 Código de descuento no válido when the code is gone', async () => {
    expect(await failure(redeemOrder(t.app.db, { codeId: 424242, orderId: await makeOrder(), userId: 7, email: 'a@example.com', amountCents: 1 }))).toEqual({
      status: 404,
      message: 'Código de descuento no válido',
    })
    expect(await t.app.db.selectFrom('orders').select('id').where('discount_code_id', 'is not', null).execute()).toEqual([])
  })
})
