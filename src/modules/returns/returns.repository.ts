import { type Insertable, type Kysely, type Transaction } from 'kysely'
import type { Database, ReturnStatus, ReturnsTable, WithdrawalsTable } from '../../db/database.js'
import { isPostgres } from '../../db/dialect.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

/**
 * The order's contact and status, its row locked until the transaction ends (PostgreSQL; SQLite runs one transaction
 * at a time). Every change of an order's returns or withdrawals takes this lock first, as the order's lifecycle does,
 * so two requests never count the same unit as returnable or withdrawable.
 */
export async function lockOrder(trx: Trx, orderId: number) {
  return trx
    .selectFrom('orders')
    .select(['id', 'status', 'user_id', 'guest', 'email'])
    .where('id', '=', orderId)
    .$if(isPostgres(trx), (qb) => qb.forUpdate())
    .executeTakeFirst()
}

/** The order's contact without a lock: its kind, its guest e-mail, and its account's e-mail and name. */
export async function findOrderContact(db: Db | Trx, orderId: number) {
  return db
    .selectFrom('orders as o')
    .leftJoin('users as u', 'u.id', 'o.user_id')
    .select(['o.id', 'o.status', 'o.user_id', 'o.guest', 'o.email', 'u.email as user_email', 'u.name as user_name'])
    .where('o.id', '=', orderId)
    .executeTakeFirst()
}

/** The order's lines with what after-sale counts of them, in the order they were bought. */
export async function findOrderLines(db: Db | Trx, orderId: number) {
  return db
    .selectFrom('order_items')
    .select(['id', 'product_id', 'variant_id', 'name', 'variant_title', 'quantity', 'fulfilled_quantity', 'cancelled_quantity'])
    .where('order_id', '=', orderId)
    .orderBy('id')
    .execute()
}
export type OrderLineRow = Awaited<ReturnType<typeof findOrderLines>>[number]

/** The order's shipments: how many, how many not yet delivered, and the latest delivery. */
export async function deliverySummary(db: Db | Trx, orderId: number) {
  const row = await db
    .selectFrom('fulfillments')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('shipments'),
      eb.fn.count<number | string>('delivered_at').as('delivered'),
      eb.fn.max('delivered_at').as('last_delivered_at'),
    ])
    .where('order_id', '=', orderId)
    .executeTakeFirstOrThrow()
  return { shipments: Number(row.shipments), delivered: Number(row.delivered), lastDeliveredAt: row.last_delivered_at ?? null }
}

/**
 * Units of each of the order's lines held by its returns that were not rejected, by order line id: a received
 * return holds the units that arrived (those that did not may be returned again), any other its units asked for.
 */
export async function unitsInReturns(db: Db | Trx, orderId: number): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('return_items as ri')
    .innerJoin('returns as r', 'r.id', 'ri.return_id')
    .select([
      'ri.order_item_id',
      (eb) =>
        eb.fn
          .sum<number | string>(
            eb
              .case()
              .when('r.status', '=', 'received')
              .then(eb.fn.coalesce('ri.received_quantity', eb.lit(0)))
              .else(eb.ref('ri.quantity'))
              .end(),
          )
          .as('units'),
    ])
    .where('r.order_id', '=', orderId)
    .where('r.status', '<>', 'rejected')
    .groupBy('ri.order_item_id')
    .execute()
  return new Map(rows.map((row) => [row.order_item_id, Number(row.units)]))
}

// ---- returns ----

export async function insertReturn(trx: Trx, row: Insertable<ReturnsTable>): Promise<number> {
  return (await trx.insertInto('returns').values(row).returning('id').executeTakeFirstOrThrow()).id
}

export async function insertReturnItems(
  trx: Trx,
  returnId: number,
  items: ReadonlyArray<{ orderItemId: number; quantity: number; reason: string | null }>,
): Promise<void> {
  await trx
    .insertInto('return_items')
    .values(items.map((item) => ({ return_id: returnId, order_item_id: item.orderItemId, quantity: item.quantity, reason: item.reason })))
    .execute()
}

export async function findReturn(db: Db | Trx, id: number) {
  return db.selectFrom('returns').selectAll().where('id', '=', id).executeTakeFirst()
}
export type ReturnRow = NonNullable<Awaited<ReturnType<typeof findReturn>>>

export async function findReturnItems(db: Db | Trx, returnIds: readonly number[]) {
  if (returnIds.length === 0) return []
  return db.selectFrom('return_items').selectAll().where('return_id', 'in', returnIds).orderBy('return_id').orderBy('order_item_id').execute()
}
export type ReturnItemRow = Awaited<ReturnType<typeof findReturnItems>>[number]

/** Moves a return from `from` to `to`; false when its status is no longer `from` (a concurrent move won). */
export async function moveReturn(
  trx: Trx,
  id: number,
  from: ReturnStatus,
  to: ReturnStatus,
  now: string,
  extra: { reject_reason?: string; refund_id?: number } = {},
): Promise<boolean> {
  const result = await trx
    .updateTable('returns')
    .set({ status: to, updated_at: now, ...extra })
    .where('id', '=', id)
    .where('status', '=', from)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

export async function setReceivedQuantity(trx: Trx, returnId: number, orderItemId: number, received: number): Promise<void> {
  await trx
    .updateTable('return_items')
    .set({ received_quantity: received })
    .where('return_id', '=', returnId)
    .where('order_item_id', '=', orderItemId)
    .execute()
}

export interface ReturnFilter {
  orderId?: number | undefined
  status?: ReturnStatus | undefined
}

export async function listReturns(db: Db, filter: ReturnFilter & { limit: number; offset: number }) {
  return db
    .selectFrom('returns')
    .selectAll()
    .$if(filter.orderId !== undefined, (qb) => qb.where('order_id', '=', filter.orderId as number))
    .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status as ReturnStatus))
    .orderBy('id', 'desc')
    .limit(filter.limit)
    .offset(filter.offset)
    .execute()
}

export async function countReturns(db: Db, filter: ReturnFilter): Promise<number> {
  const row = await db
    .selectFrom('returns')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .$if(filter.orderId !== undefined, (qb) => qb.where('order_id', '=', filter.orderId as number))
    .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status as ReturnStatus))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

// ---- withdrawals ----

export async function insertWithdrawal(trx: Trx, row: Insertable<WithdrawalsTable>): Promise<number> {
  return (await trx.insertInto('withdrawals').values(row).returning('id').executeTakeFirstOrThrow()).id
}

const withdrawalColumns = [
  'w.id',
  'w.order_id',
  'w.name',
  'w.email',
  'w.items',
  'w.statement',
  'w.received_at',
  'w.deadline',
  'w.ip',
  'w.user_agent',
  'w.request_hash',
  'r.id as return_id',
] as const

function withdrawalsWithReturn(db: Db | Trx) {
  return db.selectFrom('withdrawals as w').leftJoin('returns as r', 'r.withdrawal_id', 'w.id')
}

export async function findWithdrawal(db: Db | Trx, id: number) {
  return withdrawalsWithReturn(db).select(withdrawalColumns).where('w.id', '=', id).executeTakeFirst()
}
export type WithdrawalRow = NonNullable<Awaited<ReturnType<typeof findWithdrawal>>>

/** The order's withdrawals, oldest first. */
export async function findOrderWithdrawals(db: Db | Trx, orderId: number) {
  return withdrawalsWithReturn(db).select(withdrawalColumns).where('w.order_id', '=', orderId).orderBy('w.id').execute()
}

/** The first withdrawal of the same request received since `since`, if any. */
export async function findRepeatedWithdrawal(trx: Trx, orderId: number, requestHash: string, since: string) {
  return withdrawalsWithReturn(trx)
    .select(withdrawalColumns)
    .where('w.order_id', '=', orderId)
    .where('w.request_hash', '=', requestHash)
    .where('w.received_at', '>=', since)
    .orderBy('w.id')
    .executeTakeFirst()
}

export interface WithdrawalFilter {
  orderId?: number | undefined
  converted?: boolean | undefined
}

function filterWithdrawals<Q extends ReturnType<typeof withdrawalsWithReturn>>(qb: Q, filter: WithdrawalFilter): Q {
  let query = qb
  if (filter.orderId !== undefined) query = query.where('w.order_id', '=', filter.orderId) as Q
  if (filter.converted === true) query = query.where('r.id', 'is not', null) as Q
  if (filter.converted === false) query = query.where('r.id', 'is', null) as Q
  return query
}

export async function listWithdrawals(db: Db, filter: WithdrawalFilter & { limit: number; offset: number }) {
  return filterWithdrawals(withdrawalsWithReturn(db), filter)
    .select(withdrawalColumns)
    .orderBy('w.id', 'desc')
    .limit(filter.limit)
    .offset(filter.offset)
    .execute()
}

export async function countWithdrawals(db: Db, filter: WithdrawalFilter): Promise<number> {
  const row = await filterWithdrawals(withdrawalsWithReturn(db), filter)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

// ---- the timeline ----

export async function findUserName(db: Db | Trx, id: number): Promise<string | null> {
  return (await db.selectFrom('users').select('name').where('id', '=', id).executeTakeFirst())?.name ?? null
}
