import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import type { Fulfillment } from './fulfillments.schemas.js'

type Db = Kysely<Database> | Transaction<Database>
type Trx = Transaction<Database>

function selectFulfillments(db: Db) {
  return db
    .selectFrom('fulfillments as f')
    .leftJoin('fulfillment_items as fi', 'fi.fulfillment_id', 'f.id')
    .select([
      'f.id',
      'f.order_id',
      'f.carrier',
      'f.tracking_number',
      'f.tracking_url',
      'f.shipped_at',
      'f.delivered_at',
      'f.created_at',
      'fi.order_item_id',
      'fi.quantity',
    ])
    .orderBy('f.id')
    .orderBy('fi.order_item_id')
}

type Row = Awaited<ReturnType<ReturnType<typeof selectFulfillments>['execute']>>[number]

function toFulfillments(rows: Row[]): Fulfillment[] {
  const byId = new Map<number, Fulfillment>()
  for (const row of rows) {
    let fulfillment = byId.get(row.id)
    if (!fulfillment) {
      fulfillment = {
        id: row.id,
        orderId: row.order_id,
        items: [],
        carrier: row.carrier,
        trackingNumber: row.tracking_number,
        trackingUrl: row.tracking_url,
        shippedAt: row.shipped_at,
        deliveredAt: row.delivered_at,
        createdAt: row.created_at,
      }
      byId.set(row.id, fulfillment)
    }
    if (row.order_item_id !== null && row.quantity !== null) fulfillment.items.push({ orderItemId: row.order_item_id, quantity: row.quantity })
  }
  return [...byId.values()]
}

/** The fulfillments of these orders, oldest first, each with its lines: one query for a whole page of orders. */
export async function listFulfillments(db: Db, orderIds: readonly number[]): Promise<Map<number, Fulfillment[]>> {
  const byOrder = new Map<number, Fulfillment[]>()
  if (orderIds.length === 0) return byOrder
  for (const fulfillment of toFulfillments(await selectFulfillments(db).where('f.order_id', 'in', orderIds).execute())) {
    const list = byOrder.get(fulfillment.orderId) ?? []
    list.push(fulfillment)
    byOrder.set(fulfillment.orderId, list)
  }
  return byOrder
}

export async function findFulfillment(db: Db, id: number): Promise<Fulfillment | undefined> {
  return toFulfillments(await selectFulfillments(db).where('f.id', '=', id).execute())[0]
}

export async function findFulfillmentOrderId(db: Db, id: number): Promise<number | undefined> {
  return (await db.selectFrom('fulfillments').select('order_id').where('id', '=', id).executeTakeFirst())?.order_id
}

/** The order's lines with their counters, in id order. */
export async function listShippableLines(trx: Trx, orderId: number) {
  return trx
    .selectFrom('order_items')
    .select(['id', 'quantity', 'fulfilled_quantity', 'cancelled_quantity'])
    .where('order_id', '=', orderId)
    .orderBy('id')
    .execute()
}

/**
 * Counts `quantity` more units of the line as shipped, only while that many are left to ship (`quantity − fulfilled −
 * cancelled`): false when they are not (another request shipped or refunded them first).
 */
export async function takeUnits(trx: Trx, orderItemId: number, quantity: number): Promise<boolean> {
  const result = await trx
    .updateTable('order_items')
    .set((eb) => ({ fulfilled_quantity: eb('fulfilled_quantity', '+', quantity) }))
    .where('id', '=', orderItemId)
    .where((eb) => eb(eb(eb('quantity', '-', eb.ref('fulfilled_quantity')), '-', eb.ref('cancelled_quantity')), '>=', quantity))
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

export async function insertFulfillment(
  trx: Trx,
  row: { order_id: number; carrier: string | null; tracking_number: string | null; tracking_url: string | null; shipped_at: string; created_at: string },
  items: ReadonlyArray<{ orderItemId: number; quantity: number }>,
): Promise<number> {
  const { id } = await trx.insertInto('fulfillments').values(row).returning('id').executeTakeFirstOrThrow()
  await trx
    .insertInto('fulfillment_items')
    .values(items.map((item) => ({ fulfillment_id: id, order_item_id: item.orderItemId, quantity: item.quantity })))
    .execute()
  return id
}

export async function updateFulfillment(
  trx: Trx,
  id: number,
  set: Partial<{ carrier: string | null; tracking_number: string | null; tracking_url: string | null; delivered_at: string }>,
): Promise<void> {
  if (Object.keys(set).length > 0) await trx.updateTable('fulfillments').set(set).where('id', '=', id).execute()
}

/** Marks delivered at `at` the order's fulfillments not yet delivered; returns their ids. */
export async function deliverUndelivered(trx: Trx, orderId: number, at: string): Promise<number[]> {
  const rows = await trx
    .updateTable('fulfillments')
    .set({ delivered_at: at })
    .where('order_id', '=', orderId)
    .where('delivered_at', 'is', null)
    .returning('id')
    .execute()
  return rows.map((row) => row.id).sort((a, b) => a - b)
}

/** Whether every fulfillment of the order is delivered (and it has at least one). */
export async function allDelivered(trx: Trx, orderId: number): Promise<boolean> {
  const row = await trx
    .selectFrom('fulfillments')
    .select((eb) => [eb.fn.countAll<number | string>().as('n'), eb.fn.count<number | string>('delivered_at').as('delivered')])
    .where('order_id', '=', orderId)
    .executeTakeFirstOrThrow()
  return Number(row.n) > 0 && Number(row.n) === Number(row.delivered)
}
