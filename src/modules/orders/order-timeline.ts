import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { prepared } from '../../db/prepared.js'
import { nowIso } from '../../shared/time.js'

type Db = Kysely<Database> | Transaction<Database>
type Trx = Transaction<Database>

/**
 * Who made a change on an order's timeline: a signed-in user (staff or the customer), a guest through their order
 * link (their e-mail is the name shown), or the shop itself (a payment event, the expiry job). API keys arrive with
 * staff permissions.
 */
export type OrderActor = { type: 'user'; id: number } | { type: 'api_key'; id: number; name: string } | { type: 'guest'; email: string } | { type: 'system' }

/** Staff as the request knows them: a user, or an API key (whose id is the key's, never a user's). */
export interface StaffCaller {
  id: number
  apiKey?: { id: number; name: string }
}

/** The timeline's actor for a staff member or key acting through a route. */
export function orderActorOf(caller: StaffCaller): OrderActor {
  return caller.apiKey !== undefined ? { type: 'api_key', id: caller.apiKey.id, name: caller.apiKey.name } : { type: 'user', id: caller.id }
}

/** The user behind a caller, for columns that name a user: none for an API key. */
export function userIdOf(caller: StaffCaller): number | null {
  return caller.apiKey !== undefined ? null : caller.id
}

export const systemActor: OrderActor = { type: 'system' }

/** An entry of the timeline as the API shows it. */
export type OrderTimelineEvent = {
  id: number
  type: string
  at: string
  actor: { type: 'user' | 'guest' | 'api_key' | 'system'; id: number | null; name: string | null }
  data: Record<string, unknown>
}

export interface OrderEventInput {
  orderId: number
  type: string
  actor: OrderActor
  data: Record<string, unknown>
  /** The change's instant; now by default. */
  at?: string
}

/**
 * Writes one entry of the order's timeline. Call it with the change's own transaction, so that the entry exists if
 * and only if the change does. A user's name is not copied here: the timeline reads it from the user when shown.
 */
export async function appendOrderEvent(trx: Trx, event: OrderEventInput): Promise<number> {
  const actor = event.actor
  const { rows } = await insertEventStatement(trx, {
    orderId: event.orderId,
    type: event.type,
    at: event.at ?? nowIso(),
    actorType: actor.type,
    actorId: actor.type === 'user' || actor.type === 'api_key' ? actor.id : null,
    actorName: actor.type === 'guest' ? actor.email : actor.type === 'api_key' ? actor.name : null,
    data: JSON.stringify(event.data),
  })
  const row = rows[0]
  if (!row) throw new Error('insert into order_events returned no row')
  return row.id
}

// Compiled once: every checkout writes one entry, in its transaction (building the statement each time cost a tenth
// of a checkout's own database work).
const insertEventStatement = prepared(
  (db, v: { orderId: number; type: string; at: string; actorType: OrderActor['type']; actorId: number | null; actorName: string | null; data: string }) =>
    db
      .insertInto('order_events')
      .values({ order_id: v.orderId, type: v.type, at: v.at, actor_type: v.actorType, actor_id: v.actorId, actor_name: v.actorName, data: v.data })
      .returning('id'),
)

/** The order's timeline, oldest first (one query; a user's current name, null once the user is deleted). */
export async function listOrderEvents(db: Db, orderId: number, eventId?: number): Promise<OrderTimelineEvent[]> {
  const rows = await db
    .selectFrom('order_events as e')
    .leftJoin('users as u', (join) => join.onRef('u.id', '=', 'e.actor_id').on('e.actor_type', '=', 'user'))
    .select(['e.id', 'e.type', 'e.at', 'e.actor_type', 'e.actor_id', 'e.actor_name', 'e.data', 'u.name as user_name'])
    .where('e.order_id', '=', orderId)
    .$if(eventId !== undefined, (qb) => qb.where('e.id', '=', eventId as number))
    .orderBy('e.id')
    .execute()
  return rows.map((row) => ({
    id: row.id,
    type: row.type,
    at: row.at,
    actor: { type: row.actor_type, id: row.actor_id, name: row.actor_name ?? row.user_name ?? null },
    data: JSON.parse(row.data) as Record<string, unknown>,
  }))
}
