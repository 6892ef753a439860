import { sql, type Transaction } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/database.js'
import {
  checkCode,
  createDiscountCode,
  type DiscountCustomer,
  getDiscountCode,
  redeem,
  redemptionColumns,
  release,
  updateDiscountCode,
} from '../../src/modules/discounts/discounts.service.js'
import type { CreateDiscountCodeInput } from '../../src/modules/discounts/discounts.schemas.js'
import { AppError } from '../../src/shared/errors.js'
import { dialect, useTestApp } from '../helpers/app.js'
import { backendPid, waitUntilBlockedBy } from '../helpers/pg-locks.js'
import { CODE_LIMITS_LOCK } from '../../src/modules/discounts/code-lock.js'
import { insertOrder, noBreakdown } from '../../src/modules/orders/orders.repository.js'
import { countRows } from '../helpers/shop.js'

// Real concurrency: on PostgreSQL the transactions run on a pool of 12 connections; on SQLite Kysely serialises
// them on its single connection. Either way a code's limits must hold: each transaction stands for a checkout
// (the code checked again, the order row, then the use counted), and a refused one rolls back whole.

const t = useTestApp()
beforeEach(async () => {
  await t.app.db.deleteFrom('orders').execute()
  await t.app.db.deleteFrom('discount_codes').execute()
})

const USED_UP = 'El código de descuento ha alcanzado su límite de usos'
const CUSTOMER_LIMIT = 'Ya has usado este código de descuento el máximo de veces permitido'

function makeCode(values: Partial<CreateDiscountCodeInput> & { code: string }) {
  return createDiscountCode(t.app.db, { type: 'percent', value: 10, ...values } as CreateDiscountCodeInput, null)
}

/** A checkout's part of it, in one transaction, in its order: the code's rules, the order holding the code, the use. */
function checkout(code: { id: number; code: string }, customer: DiscountCustomer & { email: string }, hold?: Promise<void>) {
  return t.app.db.transaction().execute(async (trx) => {
    const now = new Date().toISOString()
    const checked = await checkCode(trx, { code: code.code, now, customer, lines: [{ productId: 1, categoryId: null, subtotalCents: 1000 }], currency: 'EUR' })
    const order = await trx
      .insertInto('orders')
      .values({
        user_id: customer.userId ?? 0,
        total_cents: 900,
        status: 'pending',
        created_at: now,
        updated_at: now,
        ...redemptionColumns(code.id, customer.email),
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    const counted = checked.code.usageLimit !== null
    await redeem(trx, { codeId: code.id, orderId: order.id, userId: customer.userId, email: customer.email, counted })
    await hold
  })
}

function messagesOf(results: PromiseSettledResult<unknown>[]): string[] {
  return results.flatMap((r) => {
    if (r.status === 'fulfilled') return []
    expect(r.reason).toBeInstanceOf(AppError)
    expect((r.reason as AppError).statusCode).toBe(409)
    return [(r.reason as AppError).message]
  })
}

/** The orders holding a use of a code: its redemptions. */
async function redemptions(): Promise<number> {
  const row = await t.app.db
    .selectFrom('orders')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('discount_code_id', 'is not', null)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

async function usageCount(id: number): Promise<number> {
  return (await t.app.db.selectFrom('discount_codes').select('usage_count').where('id', '=', id).executeTakeFirstOrThrow()).usage_count
}

describe(`a code's limits under concurrency (${dialect})`, () => {
  it('20 concurrent checkouts on usageLimit 1: exactly one order, the others the limit’s 409', async () => {
    const code = await makeCode({ code: 'ONLY-ONE', usageLimit: 1 })
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => checkout(code, { userId: 100 + i, email: `buyer${i}@example.com` })))
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    expect(messagesOf(results)).toEqual(Array.from({ length: 19 }, () => USED_UP))
    expect(await usageCount(code.id)).toBe(1)
    expect(await redemptions()).toBe(1)
    // The refused checkouts rolled back their orders.
    expect(await countRows(t.app, 'orders')).toBe(1)
  })

  it('usageLimit 5 with 20 racing: exactly 5', async () => {
    const code = await makeCode({ code: 'FIVE', usageLimit: 5 })
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => checkout(code, { userId: 200 + i, email: `five${i}@example.com` })))
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5)
    expect(messagesOf(results)).toEqual(Array.from({ length: 15 }, () => USED_UP))
    expect(await usageCount(code.id)).toBe(5)
    expect(await redemptions()).toBe(5)
  })

  it('perCustomerLimit 1 without a usage limit: one customer racing with 10 checkouts (by user id or e-mail) gets one', async () => {
    const code = await makeCode({ code: 'PER-CUSTOMER', perCustomerLimit: 1 })
    // The user, under their e-mail in any case, and as a guest with that e-mail.
    const customers = Array.from({ length: 10 }, (_, i) =>
      i % 3 === 2 ? { userId: null, email: 'Ana@Example.com' } : { userId: 7, email: i % 2 === 0 ? 'ana@example.com' : 'ANA@example.com' },
    )
    const others = Array.from({ length: 5 }, (_, i) => ({ userId: 300 + i, email: `other${i}@example.com` }))
    const results = await Promise.allSettled([...customers, ...others].map((customer) => checkout(code, customer)))
    const ana = results.slice(0, 10)
    expect(ana.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    expect(messagesOf(ana)).toEqual(Array.from({ length: 9 }, () => CUSTOMER_LIMIT))
    // Everyone else got theirs.
    expect(results.slice(10).every((r) => r.status === 'fulfilled')).toBe(true)
    // Counted by its orders: without a usage limit, the code's row is not written.
    expect((await getDiscountCode(t.app.db, code.id)).usageCount).toBe(6)
    expect(await usageCount(code.id)).toBe(0)
    const rows = await t.app.db
      .selectFrom('orders')
      .select('id')
      .where('discount_email', '=', 'ana@example.com')
      .where('discount_code_id', '=', code.id)
      .execute()
    expect(rows).toHaveLength(1)
  })
})

/** An order of `userId`/`email` holding its use of the code uncommitted until `hold` settles; `ready` gives its backend pid. */
function heldOrder(codeId: number, userId: number, email: string, counted: boolean, hold: Promise<void>) {
  let redeemed!: (pid: number) => void
  const ready = new Promise<number>((resolve) => (redeemed = resolve))
  const done = t.app.db.transaction().execute(async (trx) => {
    const pid = await backendPid(trx)
    await orderWithCode(trx, codeId, userId, email, counted)
    redeemed(pid)
    await hold
  })
  return { ready, done }
}

describe.skipIf(dialect !== 'postgres')('the per-customer count waits for the customer’s lock, not other customers (PostgreSQL)', () => {
  type Code = { id: number; code: string }
  // A customer's first order holds its use uncommitted; their second, by another way of being the same customer,
  // waits for it (the customer's lock) and is refused. `row`: the code's own count after (kept with a usage limit).
  const races = [
    {
      name: 'without a usage limit, a guest with the e-mail',
      limits: {},
      first: 'ana@example.com',
      counted: false,
      row: 0,
      second: (code: Code) => checkout(code, { userId: null, email: 'ANA@example.com' }),
    },
    {
      name: 'with a usage limit, a guest with the e-mail',
      limits: { usageLimit: 100 },
      first: 'ana@example.com',
      counted: true,
      row: 1,
      second: (code: Code) => checkout(code, { userId: null, email: 'ANA@example.com' }),
    },
    // The user-id lock: the account's e-mail changed between the two orders.
    {
      name: 'one user under two e-mails',
      limits: {},
      first: 'old@example.com',
      counted: false,
      row: 0,
      second: (code: Code) => lateOrder(code.id, 7, 'new@example.com'),
    },
    // The first order read a usage limit (the row's path), removed since: it still counts under the customer's lock.
    {
      name: 'the first order read a usage limit removed since',
      limits: {},
      first: 'ana@example.com',
      counted: true,
      row: 1,
      second: (code: Code) => lateOrder(code.id, 7, 'ana@example.com'),
    },
  ]
  for (const [i, race] of races.entries()) {
    it(`${race.name}: the customer's second order waits for the first to commit, sees it and is refused`, async () => {
      const code = await makeCode({ code: `SERIAL-${i}`, perCustomerLimit: 1, ...race.limits })
      let letGo!: () => void
      const first = heldOrder(code.id, 7, race.first, race.counted, new Promise<void>((resolve) => (letGo = resolve)))
      const firstPid = await first.ready
      // Its outcome is taken at once: the second may be refused while the first's commit is still being awaited, and
      // a rejection nobody has listened to yet is an unhandled one.
      const second = race.second(code).then(
        () => 'redeemed',
        (error: unknown) => (error as Error).message,
      )
      try {
        await waitUntilBlockedBy(t.app.db, firstPid)
      } finally {
        letGo()
      }
      await first.done
      expect(await second).toBe(CUSTOMER_LIMIT)
      expect(await redemptions()).toBe(1)
      expect(await usageCount(code.id)).toBe(race.row)
    })
  }

  it('an admin giving a per-customer limit waits for the customer’s order in flight; the customer’s next order queues behind the admin and is refused', async () => {
    const code = await makeCode({ code: 'LIMIT-LATER' })
    let letGo!: () => void
    const first = heldOrder(code.id, 7, 'ana@example.com', false, new Promise<void>((resolve) => (letGo = resolve)))
    const firstPid = await first.ready
    const change = setLimits(code.id, { perCustomerLimit: 1 })
    let guest: Promise<string> | undefined
    try {
      // The admin waits for the order in flight; the guest's order, placed then, waits behind the admin (its insert).
      await waitUntilBlockedBy(t.app.db, firstPid)
      guest = t.app.db
        .transaction()
        .execute((trx) => orderWithCode(trx, code.id, null, 'ANA@example.com', false))
        .then(
          () => 'redeemed',
          (error: unknown) => (error as Error).message,
        )
      await waitUntilBlockedBy(t.app.db, firstPid, 5000, 2)
    } finally {
      letGo()
    }
    await first.done
    await change
    expect(await guest).toBe(CUSTOMER_LIMIT)
    expect(await redemptions()).toBe(1)
  })
})

const ADMIN = { actor: { type: 'system', name: 'test' }, requestId: null, ip: null, userAgent: null } as const

/** An admin's change, as the API makes it. */
function setLimits(id: number, limits: { usageLimit?: number | null; perCustomerLimit?: number | null }) {
  return updateDiscountCode(t.app.db, id, limits, ADMIN)
}

describe(`a code without limits (${dialect})`, () => {
  it('20 concurrent checkouts all get it; usageCount counts their orders and the code’s row is not written', async () => {
    const code = await makeCode({ code: 'OPEN' })
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => checkout(code, { userId: 400 + i, email: `open${i}@example.com` })))
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true)
    expect((await getDiscountCode(t.app.db, code.id)).usageCount).toBe(20)
    expect(await redemptions()).toBe(20)
    expect(await usageCount(code.id)).toBe(0)
    expect((await getDiscountCode(t.app.db, code.id)).updatedAt).toBe(code.updatedAt)
  })

  it('a limit set later counts the uses it had: one more order, then the limit’s 409; removing it and setting it again counts again', async () => {
    const code = await makeCode({ code: 'LATER' })
    for (let i = 0; i < 3; i++) await checkout(code, { userId: 500 + i, email: `later${i}@example.com` })
    const limited = await setLimits(code.id, { usageLimit: 4 })
    expect(limited.usageCount).toBe(3)
    expect(await usageCount(code.id)).toBe(3)
    await checkout(code, { userId: 510, email: 'fourth@example.com' })
    // A use moves the row's count, not the code's updatedAt (the admin's last change).
    expect(await getDiscountCode(t.app.db, code.id)).toMatchObject({ usageCount: 4, updatedAt: limited.updatedAt })
    await expect(checkout(code, { userId: 511, email: 'fifth@example.com' })).rejects.toMatchObject({ statusCode: 409, message: USED_UP })
    expect(await redemptions()).toBe(4)
    // Without a limit again: orders go through and the row's count stays where it was.
    await setLimits(code.id, { usageLimit: null })
    await checkout(code, { userId: 512, email: 'sixth@example.com' })
    expect(await usageCount(code.id)).toBe(4)
    // A per-customer limit alone counts each customer's orders, not the row's uses.
    expect((await setLimits(code.id, { perCustomerLimit: 1 })).usageCount).toBe(5)
    await expect(checkout(code, { userId: 512, email: 'sixth@example.com' })).rejects.toMatchObject({ statusCode: 409, message: CUSTOMER_LIMIT })
    await checkout(code, { userId: 513, email: 'seventh@example.com' })
    expect(await usageCount(code.id)).toBe(4)
    // A usage limit given to it then counts them all.
    expect((await setLimits(code.id, { usageLimit: 10 })).usageCount).toBe(6)
    expect(await usageCount(code.id)).toBe(6)
  })

  it('a release gives its use back to the API’s count, and to the row’s only for a code with a limit', async () => {
    const open = await makeCode({ code: 'OPEN-BACK' })
    const limited = await makeCode({ code: 'LIMITED-BACK', usageLimit: 10 })
    for (const code of [open, limited]) await checkout(code, { userId: 600, email: 'back@example.com' })
    const orders = await t.app.db.selectFrom('orders').select(['id', 'discount_code_id']).orderBy('id').execute()
    for (const order of orders) expect(await release(t.app.db, order.id)).toBe(true)
    expect((await getDiscountCode(t.app.db, open.id)).usageCount).toBe(0)
    expect((await getDiscountCode(t.app.db, limited.id)).usageCount).toBe(0)
    expect([await usageCount(open.id), await usageCount(limited.id)]).toEqual([0, 0])
  })

  it('an order that read the code without a limit, whose admin set one before the order took its use, is counted against it', async () => {
    const code = await makeCode({ code: 'RACED' })
    // The order reads the code as it was (no limit), then an admin sets a limit of 1, used up by another order.
    await setLimits(code.id, { usageLimit: 1 })
    await checkout(code, { userId: 800, email: 'first@example.com' })
    await expect(lateOrder(code.id, 801, 'late@example.com')).rejects.toMatchObject({ statusCode: 409, message: USED_UP })
    expect(await redemptions()).toBe(1)
  })

  it('the same with a per-customer limit: the customer’s earlier order counts against it', async () => {
    const code = await makeCode({ code: 'RACED-MINE' })
    await checkout(code, { userId: 810, email: 'mine@example.com' })
    await setLimits(code.id, { perCustomerLimit: 1 })
    await expect(lateOrder(code.id, 810, 'mine@example.com')).rejects.toMatchObject({ statusCode: 409, message: CUSTOMER_LIMIT })
    // Someone else still gets it, and is counted (by the orders: the code has no usage limit).
    await lateOrder(code.id, 811, 'other@example.com')
    expect((await getDiscountCode(t.app.db, code.id)).usageCount).toBe(2)
  })

  it('a release leaves the row’s count of a code without limits as it was (it is kept only while the code has one)', async () => {
    const code = await makeCode({ code: 'STALE' })
    // A count left from when the code had a limit.
    await t.app.db.updateTable('discount_codes').set({ usage_count: 5 }).where('id', '=', code.id).execute()
    await checkout(code, { userId: 820, email: 'stale@example.com' })
    const order = await t.app.db.selectFrom('orders').select('id').where('discount_code_id', '=', code.id).executeTakeFirstOrThrow()
    expect(await release(t.app.db, order.id)).toBe(true)
    expect(await usageCount(code.id)).toBe(5)
    expect((await getDiscountCode(t.app.db, code.id)).usageCount).toBe(0)
  })
})

/** An order that read the code without a limit (as a cart that applied it earlier did), placed now. */
function lateOrder(codeId: number, userId: number, email: string) {
  return t.app.db.transaction().execute((trx) => orderWithCode(trx, codeId, userId, email, false))
}

/**
 * In `trx`: an order holding the code, written as checkout writes it (`insertOrder`: on PostgreSQL its insert takes
 * the code's shared lock), then its use counted (`counted`: whether the order read the code with a usage limit). A
 * null `userId` is a guest's order.
 */
async function orderWithCode(trx: Transaction<Database>, codeId: number, userId: number | null, email: string, counted: boolean): Promise<void> {
  const now = new Date().toISOString()
  const order = await insertOrder(trx, {
    user_id: userId,
    guest: userId === null,
    email: userId === null ? email : null,
    total_cents: 900,
    status: 'pending',
    created_at: now,
    updated_at: now,
    subtotal_cents: null,
    shipping_cents: null,
    shipping_address: null,
    shipping_method: null,
    note: null,
    ...noBreakdown,
    ...redemptionColumns(codeId, email),
  })
  await redeem(trx, { codeId, orderId: order.id, userId, email, counted, held: true })
}

describe.skipIf(dialect !== 'postgres')('a code without limits under concurrency (PostgreSQL)', () => {
  for (const limits of [{}, { perCustomerLimit: 1 }]) {
    it(`an order in flight with the code does not keep another customer's waiting (${'perCustomerLimit' in limits ? 'a per-customer limit only' : 'no limits'})`, async () => {
      const code = await makeCode({ code: `NO-QUEUE-${Object.keys(limits).length}`, ...limits })
      let letGo!: () => void
      const first = heldOrder(code.id, 7, 'first@example.com', false, new Promise<void>((resolve) => (letGo = resolve)))
      await first.ready
      // With the first uncommitted, the second commits: it waited for no lock (a lock wait would fail it at 2 s).
      const second = t.app.db.transaction().execute(async (trx) => {
        await sql`set local lock_timeout = '2s'`.execute(trx)
        await orderWithCode(trx, code.id, 8, 'second@example.com', false)
      })
      try {
        await second
      } finally {
        letGo()
      }
      await first.done
      expect((await getDiscountCode(t.app.db, code.id)).usageCount).toBe(2)
      expect(await usageCount(code.id)).toBe(0)
    })
  }

  it('an admin setting a limit waits for the orders in flight with the code, and counts them', async () => {
    const code = await makeCode({ code: 'IN-FLIGHT' })
    await checkout(code, { userId: 700, email: 'before@example.com' })
    let letGo!: () => void
    const first = heldOrder(code.id, 7, 'held@example.com', false, new Promise<void>((resolve) => (letGo = resolve)))
    const pid = await first.ready
    const change = setLimits(code.id, { usageLimit: 3 })
    try {
      await waitUntilBlockedBy(t.app.db, pid)
    } finally {
      letGo()
    }
    await first.done
    // Counted after the held order committed: 2 uses, so one more order and then the limit.
    expect((await change).usageCount).toBe(2)
    expect(await usageCount(code.id)).toBe(2)
    await checkout(code, { userId: 701, email: 'third@example.com' })
    await expect(checkout(code, { userId: 702, email: 'fourth@example.com' })).rejects.toMatchObject({ statusCode: 409, message: USED_UP })
    expect(await usageCount(code.id)).toBe(3)
  })

  it('an admin’s change that gives no limit does not wait for the orders in flight (a deactivation during a sale)', async () => {
    const code = await makeCode({ code: 'SWITCH-OFF' })
    let letGo!: () => void
    const first = heldOrder(code.id, 7, 'held@example.com', false, new Promise<void>((resolve) => (letGo = resolve)))
    await first.ready
    let outcome: string
    try {
      const change = updateDiscountCode(t.app.db, code.id, { active: false }, ADMIN).then(() => 'changed')
      outcome = await Promise.race([change, new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 3 s'), 3000))])
    } finally {
      letGo()
    }
    await first.done
    expect(outcome).toBe('changed')
    expect((await getDiscountCode(t.app.db, code.id)).active).toBe(false)
  })

  it('orders that come while an admin waits to give the code a limit queue behind the admin, then count against it', async () => {
    const code = await makeCode({ code: 'QUEUED' })
    let letGo!: () => void
    const first = heldOrder(code.id, 7, 'held@example.com', false, new Promise<void>((resolve) => (letGo = resolve)))
    const pid = await first.ready
    const change = setLimits(code.id, { usageLimit: 2 })
    let late: Promise<unknown> | undefined
    try {
      await waitUntilBlockedBy(t.app.db, pid)
      // This order would take the code without a limit; it waits behind the admin (two sessions now wait on the first).
      late = lateOrder(code.id, 901, 'late@example.com').then(
        () => 'placed',
        (error: unknown) => (error as Error).message,
      )
      await waitUntilBlockedBy(t.app.db, pid, 5000, 2)
    } finally {
      letGo()
    }
    await first.done
    expect((await change).usageCount).toBe(1)
    // It found the limit and took a use under it.
    expect(await late).toBe('placed')
    expect(await usageCount(code.id)).toBe(2)
    await expect(lateOrder(code.id, 902, 'third@example.com')).rejects.toMatchObject({ statusCode: 409, message: USED_UP })
  })

  it('an admin giving a limit while a release is in flight counts after it', async () => {
    const code = await makeCode({ code: 'RELEASING' })
    for (let i = 0; i < 2; i++) await checkout(code, { userId: 910 + i, email: `rel${i}@example.com` })
    const order = await t.app.db.selectFrom('orders').select('id').where('discount_code_id', '=', code.id).orderBy('id').executeTakeFirstOrThrow()
    let letGo!: () => void
    const hold = new Promise<void>((resolve) => (letGo = resolve))
    let released!: (pid: number) => void
    const ready = new Promise<number>((resolve) => (released = resolve))
    const releasing = t.app.db.transaction().execute(async (trx) => {
      const pid = await backendPid(trx)
      expect(await release(trx, order.id)).toBe(true)
      released(pid)
      await hold
    })
    const pid = await ready
    const change = setLimits(code.id, { usageLimit: 5 })
    try {
      await waitUntilBlockedBy(t.app.db, pid)
    } finally {
      letGo()
    }
    await releasing
    expect((await change).usageCount).toBe(1)
    expect(await usageCount(code.id)).toBe(1)
  })

  it('an order written holding a code takes the code’s shared lock with its row (checkout then reads the code once)', async () => {
    const code = await makeCode({ code: 'HELD-BY-INSERT' })
    const lockOf = (pid: number) =>
      sql<{ mode: string }>`select mode from pg_locks
        where locktype = 'advisory' and classid = ${CODE_LIMITS_LOCK} and objid = ${code.id} and objsubid = 2 and pid = ${pid}`.execute(t.app.db)
    await t.app.db.transaction().execute(async (trx) => {
      // redeem, told the insert held the lock (as checkout tells it), takes none of its own.
      await orderWithCode(trx, code.id, 7, 'ana@example.com', false)
      expect((await lockOf(await backendPid(trx))).rows).toEqual([{ mode: 'ShareLock' }])
    })
  })
})
