import type { Kysely, Transaction } from 'kysely'
import type { AddressRow, Database } from '../../db/database.js'
import { prepared } from '../../db/prepared.js'

type Db = Kysely<Database> | Transaction<Database>

export type NewAddress = Omit<AddressRow, 'id'>
export type AddressChanges = Partial<Omit<AddressRow, 'id' | 'user_id' | 'created_at'>>

export async function listAddresses(db: Db, userId: number): Promise<AddressRow[]> {
  return db.selectFrom('addresses').selectAll().where('user_id', '=', userId).orderBy('id').execute()
}

/** The address when it is this user's; someone else's is the same as a missing one. */
export async function findOwnAddress(db: Db, userId: number, id: number): Promise<AddressRow | undefined> {
  return (await findOwnAddressStatement(db, { id, userId })).rows[0]
}

// Read by every checkout and cart view with an address from the book: compiled once.
const findOwnAddressStatement = prepared((db, v: { id: number; userId: number }) =>
  db.selectFrom('addresses').selectAll().where('id', '=', v.id).where('user_id', '=', v.userId),
)

export async function insertAddress(db: Db, row: NewAddress): Promise<AddressRow> {
  return db.insertInto('addresses').values(row).returningAll().executeTakeFirstOrThrow()
}

export async function updateOwnAddress(db: Db, userId: number, id: number, changes: AddressChanges): Promise<AddressRow | undefined> {
  return db.updateTable('addresses').set(changes).where('id', '=', id).where('user_id', '=', userId).returningAll().executeTakeFirst()
}

export async function deleteOwnAddress(db: Db, userId: number, id: number): Promise<boolean> {
  const result = await db.deleteFrom('addresses').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}
