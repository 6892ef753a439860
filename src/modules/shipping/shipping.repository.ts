import type { Insertable, Kysely, Transaction, Updateable } from 'kysely'
import type { Database, ShippingMethodRow, ShippingMethodsTable } from '../../db/database.js'
import { prepared } from '../../db/prepared.js'

type Db = Kysely<Database> | Transaction<Database>

export async function listShippingMethods(db: Db, filter: { activeOnly: boolean }): Promise<ShippingMethodRow[]> {
  return db
    .selectFrom('shipping_methods')
    .selectAll()
    .$if(filter.activeOnly, (qb) => qb.where('active', '=', 1))
    .orderBy('price_cents')
    .orderBy('id')
    .execute()
}

export async function findShippingMethod(db: Db, id: number): Promise<ShippingMethodRow | undefined> {
  return (await findShippingMethodStatement(db, { id })).rows[0]
}

// Read by every checkout and cart view with a method: compiled once.
const findShippingMethodStatement = prepared((db, v: { id: number }) => db.selectFrom('shipping_methods').selectAll().where('id', '=', v.id))

/** Whether the shop ships at all: one indexed probe, on every checkout. */
export async function hasActiveShippingMethod(db: Db): Promise<boolean> {
  return (await hasActiveShippingMethodStatement(db, {})).rows.length > 0
}

// Asked by every checkout.
const hasActiveShippingMethodStatement = prepared((db) => db.selectFrom('shipping_methods').select('id').where('active', '=', 1).limit(1))

export async function insertShippingMethod(db: Db, row: Insertable<ShippingMethodsTable>): Promise<ShippingMethodRow> {
  return db.insertInto('shipping_methods').values(row).returningAll().executeTakeFirstOrThrow()
}

export async function updateShippingMethod(db: Db, id: number, changes: Updateable<ShippingMethodsTable>): Promise<ShippingMethodRow | undefined> {
  return db.updateTable('shipping_methods').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
}

export async function deleteShippingMethod(db: Db, id: number): Promise<boolean> {
  const result = await db.deleteFrom('shipping_methods').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/** Whether a method names the tax class. */
export async function usesTaxClass(db: Db, code: string): Promise<boolean> {
  return (await db.selectFrom('shipping_methods').select('id').where('tax_class', '=', code).limit(1).executeTakeFirst()) !== undefined
}
