import { type Insertable, type Kysely, type Selectable, sql, type Transaction, type Updateable } from 'kysely'
import type { Database, OutboxTable, WebhookRow, WebhooksTable } from '../../db/database.js'
import { countOutboxWrite } from '../outbox/outbox.js'

type Db = Kysely<Database> | Transaction<Database>
export type DeliveryRow = Pick<
  Selectable<OutboxTable>,
  'id' | 'event' | 'status' | 'attempts' | 'last_status_code' | 'last_error' | 'next_attempt_at' | 'created_at' | 'delivered_at'
>

const deliveryColumns = ['id', 'event', 'status', 'attempts', 'last_status_code', 'last_error', 'next_attempt_at', 'created_at', 'delivered_at'] as const

export async function listWebhooks(db: Db): Promise<WebhookRow[]> {
  return db.selectFrom('webhooks').selectAll().orderBy('id').execute()
}

export async function listActiveWebhooks(db: Db): Promise<WebhookRow[]> {
  return db.selectFrom('webhooks').selectAll().where('active', '=', 1).orderBy('id').execute()
}

export async function findWebhook(db: Db, id: number): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function insertWebhook(db: Db, row: Insertable<WebhooksTable>): Promise<WebhookRow> {
  return db.insertInto('webhooks').values(row).returningAll().executeTakeFirstOrThrow()
}

export async function updateWebhook(db: Db, id: number, changes: Updateable<WebhooksTable>): Promise<WebhookRow | undefined> {
  return db.updateTable('webhooks').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
}

/** Deletes the webhook and every delivery of it, pending ones included (they stop). */
export async function deleteWebhook(trx: Transaction<Database>, id: number): Promise<boolean> {
  await trx.deleteFrom('outbox').where('channel', '=', 'webhook').where('webhook_id', '=', id).execute()
  const result = await trx.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/** Queues deliveries (outbox rows); call it inside the transaction of the change they tell about. */
export async function listDeliveries(
  db: Db,
  webhookId: number,
  query: { limit: number; offset: number; status?: 'pending' | 'delivered' | 'failed' | undefined },
): Promise<{ rows: DeliveryRow[]; total: number }> {
  const base = db
    .selectFrom('outbox')
    .where('channel', '=', 'webhook')
    .where('webhook_id', '=', webhookId)
    // A literal (one of three checked values): SQLite reads a bound one against outbox_due's condition (status =
    // 'pending') while planning, and would prepare the statement again at every run (src/db/sqlite-compiler.ts).
    .$if(query.status !== undefined, (qb) => qb.where('status', '=', sql.lit(query.status!)))
  const [rows, count] = await Promise.all([
    base.select(deliveryColumns).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit).offset(query.offset).execute(),
    base.select((eb) => eb.fn.countAll<number | string>().as('total')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.total) }
}

export async function findDelivery(db: Db, webhookId: number, deliveryId: string): Promise<DeliveryRow | undefined> {
  return db
    .selectFrom('outbox')
    .select(deliveryColumns)
    .where('channel', '=', 'webhook')
    .where('webhook_id', '=', webhookId)
    .where('id', '=', deliveryId)
    .executeTakeFirst()
}

/** Makes a delivery due now as pending, keeping its id, body and attempt count. */
export async function requeueDelivery(db: Db, webhookId: number, deliveryId: string, now: string): Promise<DeliveryRow | undefined> {
  // A row made due: the request's answer wakes the dispatcher (outbox.plugin.ts).
  countOutboxWrite()
  return db
    .updateTable('outbox')
    .set({ status: 'pending', next_attempt_at: now, delivered_at: null })
    .where('channel', '=', 'webhook')
    .where('webhook_id', '=', webhookId)
    .where('id', '=', deliveryId)
    .returning(deliveryColumns)
    .executeTakeFirst()
}
