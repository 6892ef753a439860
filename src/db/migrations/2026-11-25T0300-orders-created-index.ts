import type { Kysely } from 'kysely'

// The admin overview (GET /admin/api/stats) sums the orders of the last days: without this index both
// databases read every order to find them (100k orders: a full scan per call). status and total_cents are in
// it so the sums are read from the index alone.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('orders_created_idx').on('orders').columns(['created_at', 'status', 'total_cents']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('orders_created_idx').execute()
}
