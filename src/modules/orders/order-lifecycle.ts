import type { FastifyBaseLogger } from 'fastify'
import { type Kysely, type Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { AppError } from '../../shared/errors.js'
import type { EventSink } from '../../shared/event-sink.js'
import { nowIso } from '../../shared/time.js'
import type { Inventory } from '../inventory/inventory.service.js'
import { loadOrder, type PaymentDefaults } from './order-view.js'
import { release as releaseCode } from '../discounts/discounts.service.js'
import * as repo from './orders.repository.js'
import { appendOrderEvent, type OrderActor, systemActor } from './order-timeline.js'
import type { Order, OrderStatus } from './orders.schemas.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'
import { isPostgres } from '../../db/dialect.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>
type Log = Pick<FastifyBaseLogger, 'error' | 'warn' | 'info'>

/**
 * The order lifecycle: the only writer of `orders.status`. It holds the transition table, and runs the hooks that
 * other modules register (payments: refunds and intents) around every move, whoever asks for it: an admin, the
 * customer's cancel, a payment event, the expiry job.
 *
 * A move has three phases:
 * 1. `prepare`, outside any transaction: where a network call belongs (a refund through the provider). Throwing
 *    refuses the move and nothing has changed.
 * 2. One transaction: the order row is locked first (then, by the hooks, its payment row: one lock order
 *    everywhere, so two paths never wait on each other in a cycle), the status checked again and moved by a
 *    conditional update, the hooks' `apply` run (payments' rows), the stock put back on a cancel (inventory), the
 *    timeline and the events written (outbox).
 * 3. `afterCommit`: work that must not hold the transaction open (cancelling an intent); failures are logged.
 */

/** The moves an admin may make; anything else is a 409. */
export const transitions: Readonly<Record<OrderStatus, readonly OrderStatus[]>> = {
  pending: ['paid', 'cancelled'],
  paid: ['shipped', 'cancelled'],
  shipped: ['delivered'],
  delivered: [],
  cancelled: [],
}

/**
 * Who moves the order: an admin, its customer (cancel only), a payment event, the expiry job, or a shipment (the
 * first fulfillment moves a paid order to shipped; the last delivery, a shipped one to delivered).
 */
export type MoveCause = 'admin' | 'customer' | 'payment' | 'expiry' | 'fulfillment'

export interface OrderMove {
  orderId: number
  from: OrderStatus
  to: OrderStatus
  cause: MoveCause
  /** The user who asked (admin or customer); null for the service's own moves and for an API key's. */
  actorId: number | null
  /** Who the timeline names, when the caller says (an API key); otherwise found from `actorId` and `cause`. */
  actor?: OrderActor
  /**
   * The audit log's author of a move that is a change of its own: a staff member's or a job's. Null for a customer's
   * cancel, a payment event, and a move a fulfillment makes (the fulfillment's entry records it).
   */
  audit: AuditSource | null
  log: Log
}

export interface LifecycleHook {
  prepare?(move: OrderMove): Promise<void>
  apply?(trx: Trx, move: OrderMove): Promise<void>
  afterCommit?(move: OrderMove): Promise<void>
}

export interface MoveRequest {
  orderId: number
  to: OrderStatus
  cause: MoveCause
  actorId?: number | null
  actor?: OrderActor
  /** See OrderMove.audit. */
  audit: AuditSource | null
  /** Only this user's order (a customer's cancel): someone else's is "not found". */
  ownerId?: number | undefined
  log: Log
  /**
   * Called with the status the move starts from, once the order is found and the move allowed, before any of its
   * work: may refuse (a staff permission that depends on the order's state). The move's transaction refuses it if
   * the order moved meanwhile, so the status it was given is the one moved from.
   */
  vet?: (from: OrderStatus) => void
}

export interface LifecycleDeps {
  db: Db
  inventory: Inventory
  events: EventSink
  payments: PaymentDefaults
}

export class OrderLifecycle {
  private readonly hooks: LifecycleHook[] = []

  constructor(private readonly deps: LifecycleDeps) {}

  /** Registers a module's hook; hooks run in the order they were registered. */
  use(hook: LifecycleHook): void {
    this.hooks.push(hook)
  }

  /** The statuses an admin may move an order in `status` to. */
  nextStatuses(status: OrderStatus): readonly OrderStatus[] {
    return transitions[status]
  }

  /**
   * Locks the order row until the transaction ends (PostgreSQL; SQLite runs one transaction at a time) and returns
   * its status. Every path that changes an order or its payment takes this lock first.
   */
  async lock(trx: Trx, orderId: number, ownerId?: number): Promise<{ status: OrderStatus; user_id: number | null } | undefined> {
    return trx
      .selectFrom('orders')
      .select(['status', 'user_id'])
      .where('id', '=', orderId)
      .$if(ownerId !== undefined, (qb) => qb.where('user_id', '=', ownerId as number))
      .$if(isPostgres(trx), (qb) => qb.forUpdate())
      .executeTakeFirst()
  }

  /** Whether the order exists (a read outside any transaction). */
  async exists(db: Db, orderId: number): Promise<boolean> {
    return (await repo.findOrderStatus(db, orderId)) !== undefined
  }

  /** Whether `cause` may move an order from `from` to `to` (a 409 otherwise). */
  private check(cause: MoveCause, from: OrderStatus, to: OrderStatus): void {
    const allowed = cause === 'customer' ? from === 'pending' && to === 'cancelled' : transitions[from].includes(to)
    if (!allowed) throw new AppError(409, 'transitionNotAllowed', from, to)
  }

  /** A whole move: prepare, one transaction, after-commit work. Answers 404 for an unknown (or someone else's) order, 409 for a move not allowed. */
  async move(request: MoveRequest): Promise<void> {
    const { db } = this.deps
    const current = await repo.findOrderStatus(db, request.orderId, request.ownerId)
    if (!current) throw new AppError(404, 'orderNotFound')
    this.check(request.cause, current.status, request.to)
    request.vet?.(current.status)
    const move: OrderMove = {
      orderId: request.orderId,
      from: current.status,
      to: request.to,
      cause: request.cause,
      actorId: request.actorId ?? null,
      actor: request.actor,
      audit: request.audit,
      log: request.log,
    }
    for (const hook of this.hooks) if (hook.prepare) await hook.prepare(move)
    const after = await db.transaction().execute(async (trx) => {
      const locked = await this.lock(trx, move.orderId, request.ownerId)
      if (!locked) throw new AppError(404, 'orderNotFound')
      // Moved by someone else since it was read: the move is judged again from where it is now.
      if (locked.status !== move.from) throw new AppError(409, 'transitionNotAllowed', locked.status, move.to)
      return this.moveWithin(trx, move)
    })
    await after()
  }

  /**
   * A move inside a transaction the caller holds, with the order locked by `lock()` and found in `move.from`
   * (a payment event, the expiry). No prepare phase: a move that needs one goes through `move()`. Returns the
   * after-commit work, for the caller to run once it has committed.
   */
  async moveWithin(trx: Trx, move: OrderMove): Promise<() => Promise<void>> {
    this.check(move.cause === 'customer' ? 'customer' : 'admin', move.from, move.to)
    const now = nowIso()
    const before = move.audit === null ? undefined : await loadOrder(trx, this.deps.payments, move.orderId)
    if (!(await repo.updateOrderStatus(trx, move.orderId, move.from, move.to, now))) {
      const found = await repo.findOrderStatus(trx, move.orderId)
      throw new AppError(409, 'transitionNotAllowed', found?.status ?? move.from, move.to)
    }
    for (const hook of this.hooks) if (hook.apply) await hook.apply(trx, move)
    if (move.to === 'cancelled') {
      const lines = await repo.listOrderLines(trx, move.orderId)
      await this.deps.inventory.release(
        trx,
        // A line whose variant is gone (deleted with its product) has nothing to go back to. Units a refund already
        // cancelled (refunded before they shipped) were put back, or kept out, by that refund's `restock`.
        lines.flatMap((line) =>
          line.variant_id === null || line.quantity - line.cancelled_quantity <= 0
            ? []
            : [{ productId: line.product_id, variantId: line.variant_id, quantity: line.quantity - line.cancelled_quantity }],
        ),
      )
      // A pending order cancelled (by its customer, an admin or the expiry) gives its code's use back; a paid one never does.
      if (move.from === 'pending') await releaseCode(trx, move.orderId)
    }
    await appendOrderEvent(trx, {
      orderId: move.orderId,
      type: 'order.status_changed',
      at: now,
      actor: await this.actorOf(trx, move),
      data: { from: move.from, to: move.to, cause: move.cause },
    })
    const after = await this.emitStatusEvents(trx, move.orderId, move.to)
    await recordAudit(trx, { by: move.audit, action: 'order.status_change', entityType: 'order', entityId: move.orderId, before, after })
    return async () => {
      for (const hook of this.hooks) {
        if (!hook.afterCommit) continue
        try {
          await hook.afterCommit(move)
        } catch (error) {
          move.log.error({ err: error, orderId: move.orderId }, 'after-commit work of an order move failed')
        }
      }
    }
  }

  /** The timeline's actor of a move: the user who asked, a guest cancelling through their link, or the shop. */
  private async actorOf(trx: Trx, move: OrderMove): Promise<OrderActor> {
    if (move.actor !== undefined) return move.actor
    if (move.actorId !== null) return { type: 'user', id: move.actorId }
    if (move.cause === 'customer') {
      const row = await trx.selectFrom('orders').select('email').where('id', '=', move.orderId).executeTakeFirst()
      if (row?.email) return { type: 'guest', email: row.email }
    }
    return systemActor
  }

  /**
   * order.status_changed always, and order.paid, order.cancelled or order.delivered (`{order}`) for those moves,
   * with the order as it now is (answered).
   */
  private async emitStatusEvents(trx: Trx, orderId: number, to: OrderStatus): Promise<Order> {
    const order = await loadOrder(trx, this.deps.payments, orderId)
    const { events } = this.deps
    await events.emit(trx, { type: 'order.status_changed', data: order })
    if (to === 'paid') await events.emit(trx, { type: 'order.paid', data: order })
    if (to === 'cancelled') await events.emit(trx, { type: 'order.cancelled', data: order })
    if (to === 'delivered') await events.emit(trx, { type: 'order.delivered', data: { order } })
    return order
  }
}
