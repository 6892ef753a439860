import { appendOrderEvent } from '../orders/order-timeline.js'
import { createHash } from 'node:crypto'
import type { Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { AppError } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import { loadOrder } from '../orders/order-view.js'
import * as repo from './returns.repository.js'
import { checkDistinctLines, deliveryState, type ReturnsDeps } from './returns.service.js'
import type { ListWithdrawalsQuery, Withdrawal, WithdrawalInput, WithdrawalPreview } from './returns.schemas.js'
import { windowClosed, withdrawalDeadline } from './windows.js'

type Trx = Transaction<Database>

/** A repeated confirmation within this time answers the first, sending nothing again. */
const REPEAT_WINDOW_MS = 24 * 60 * 60 * 1000

type WithdrawalLine = {
  orderItemId: number
  name: string | null
  variantTitle: string | null
  quantity: number
}

/** The declaration, word for word: `<quantity> × <name>` (and ` (<variantTitle>)`) for each line, joined by `; `. */
export function withdrawalStatement(name: string, email: string, orderId: number, items: readonly WithdrawalLine[]): string {
  const list = items.map((item) => `${item.quantity} × ${item.name ?? ''}${item.variantTitle ? ` (${item.variantTitle})` : ''}`).join('; ')
  return `Por la presente, ${name} (${email}) comunica que desiste del contrato de compraventa del pedido #${orderId} respecto de: ${list}.`
}

/** Units of each line already withdrawn from, by order line id. */
function withdrawnUnits(withdrawals: ReadonlyArray<{ items: string }>): Map<number, number> {
  const units = new Map<number, number>()
  for (const withdrawal of withdrawals) {
    for (const item of JSON.parse(withdrawal.items) as WithdrawalLine[]) units.set(item.orderItemId, (units.get(item.orderItemId) ?? 0) + item.quantity)
  }
  return units
}

/** The request's fingerprint: the same order, e-mail, name and items (as asked) are the same request. */
function requestHash(input: WithdrawalInput, email: string): string {
  const items = input.items ? [...input.items].sort((a, b) => a.orderItemId - b.orderItemId).map((item) => [item.orderItemId, item.quantity]) : null
  return createHash('sha256')
    .update(JSON.stringify([input.orderId, email, input.name, items]))
    .digest('hex')
}

type Checked = { kind: 'new'; preview: WithdrawalPreview } | { kind: 'repeat'; first: Withdrawal }

/**
 * The checks of a preview and a confirmation, after the body's (422, the route's schema, then repeated lines): no
 * order with that id and e-mail (404; the e-mail ignoring case, a guest's or the account's), then `repeat` (a
 * confirmation's earlier twin answers before anything else is checked), a cancelled order (409), past the window
 * (409), a line of another order (422), more units than are left to withdraw (409).
 */
async function check(deps: ReturnsDeps, trx: Trx, input: WithdrawalInput, repeat?: () => Promise<Withdrawal | undefined>): Promise<Checked> {
  const email = input.email.toLowerCase()
  const order = await repo.findOrderContact(trx, input.orderId)
  const orderEmail = order ? (order.guest === 1 ? order.email : order.user_email) : null
  if (!order || orderEmail === null || orderEmail.toLowerCase() !== email) throw new AppError(404, 'withdrawalOrderNotFound')
  if (repeat) {
    const first = await repeat()
    if (first) return { kind: 'repeat', first }
  }
  if (order.status === 'cancelled') throw new AppError(409, 'withdrawalOrderCancelled')
  const lines = await repo.findOrderLines(trx, order.id)
  const { zone, withdrawalDays } = deps.settings
  const deadline = withdrawalDeadline(await deliveryState(trx, order.id, lines), zone, withdrawalDays)
  if (windowClosed(deadline, deps.now?.() ?? new Date(), zone)) throw new AppError(409, 'withdrawalWindowClosed', deadline as string)

  const byId = new Map(lines.map((line) => [line.id, line]))
  const withdrawn = withdrawnUnits(await repo.findOrderWithdrawals(trx, order.id))
  const left = (line: repo.OrderLineRow) => Math.max(0, line.quantity - line.cancelled_quantity - (withdrawn.get(line.id) ?? 0))
  let asked: Array<{ line: repo.OrderLineRow; quantity: number }>
  if (input.items) {
    for (const item of input.items) if (!byId.has(item.orderItemId)) throw new AppError(422, 'orderItemNotInOrder', item.orderItemId)
    asked = input.items.map((item) => ({ line: byId.get(item.orderItemId)!, quantity: item.quantity }))
    for (const { line, quantity } of asked) if (quantity > left(line)) throw new AppError(409, 'withdrawalQuantityTooLarge', line.id)
  } else {
    // Every unit not yet withdrawn or cancelled; nothing left is the first line's "too many".
    asked = lines.filter((line) => left(line) > 0).map((line) => ({ line, quantity: left(line) }))
    if (asked.length === 0) throw new AppError(409, 'withdrawalQuantityTooLarge', lines[0]?.id ?? 0)
  }
  const items = asked.map(({ line, quantity }) => ({ orderItemId: line.id, name: line.name, variantTitle: line.variant_title, quantity }))
  return {
    kind: 'new',
    preview: {
      orderId: order.id,
      name: input.name,
      email: input.email,
      items,
      statement: withdrawalStatement(input.name, input.email, order.id, items),
      deadline,
    },
  }
}

/** POST /withdrawals/preview: what a confirmation would declare, changing nothing. */
export async function previewWithdrawal(deps: ReturnsDeps, input: WithdrawalInput): Promise<WithdrawalPreview> {
  checkDistinctLines(input.items)
  return deps.db.transaction().execute(async (trx) => {
    const checked = await check(deps, trx, input)
    if (checked.kind !== 'new') throw new Error('a preview has no repeat')
    return checked.preview
  })
}

/** The withdrawal as the API shows it; `ip` and `userAgent` only to staff. */
export function toWithdrawal(row: repo.WithdrawalRow, staff: boolean): Withdrawal {
  return {
    id: row.id,
    orderId: row.order_id,
    name: row.name,
    email: row.email,
    items: JSON.parse(row.items) as WithdrawalLine[],
    statement: row.statement,
    receivedAt: row.received_at,
    deadline: row.deadline,
    returnId: row.return_id,
    ...(staff ? { ip: row.ip, userAgent: row.user_agent } : {}),
  }
}

/**
 * POST /withdrawals/confirm: records the withdrawal as declared, and queues in the same transaction its timeline
 * entry and `withdrawal.received` (the customer's receipt and the admins' e-mail). The order is locked, so two
 * confirmations never withdraw the same unit; the same request again within 24 hours answers the first withdrawal
 * and sends nothing. Nothing of the order, its stock or its payment changes.
 */
export async function confirmWithdrawal(
  deps: ReturnsDeps,
  input: WithdrawalInput,
  client: { ip: string | null; userAgent: string | null },
): Promise<{ withdrawal: Withdrawal; created: boolean }> {
  checkDistinctLines(input.items)
  const hash = requestHash(input, input.email.toLowerCase())
  return deps.db.transaction().execute(async (trx) => {
    // The lock first: a racing twin waits here, then finds this one's row.
    await repo.lockOrder(trx, input.orderId)
    const since = new Date((deps.now?.() ?? new Date()).getTime() - REPEAT_WINDOW_MS).toISOString()
    const repeat = async () => {
      const first = await repo.findRepeatedWithdrawal(trx, input.orderId, hash, since)
      return first ? toWithdrawal(first, false) : undefined
    }
    const checked = await check(deps, trx, input, repeat)
    if (checked.kind === 'repeat') return { withdrawal: checked.first, created: false }
    const { preview } = checked
    const receivedAt = nowIso()
    const id = await repo.insertWithdrawal(trx, {
      order_id: preview.orderId,
      name: preview.name,
      email: preview.email,
      items: JSON.stringify(preview.items),
      statement: preview.statement,
      received_at: receivedAt,
      deadline: preview.deadline,
      ip: client.ip,
      user_agent: client.userAgent?.slice(0, 500) ?? null,
      request_hash: hash,
    })
    const withdrawal = toWithdrawal((await repo.findWithdrawal(trx, id))!, false)
    await appendOrderEvent(trx, {
      orderId: preview.orderId,
      type: 'withdrawal.received',
      at: receivedAt,
      actor: { type: 'guest', email: preview.email },
      data: { withdrawal },
    })
    const order = await loadOrder(trx, deps.payments, preview.orderId)
    await deps.events.emit(trx, { type: 'withdrawal.received', data: { order, withdrawal } })
    return { withdrawal, created: true }
  })
}

/** GET /withdrawals: newest first; `orderId`, `converted` (made into a return or not). */
export async function listWithdrawals(deps: ReturnsDeps, query: ListWithdrawalsQuery): Promise<{ withdrawals: Withdrawal[]; total: number }> {
  const filter = { orderId: query.orderId, converted: query.converted }
  const [rows, total] = await Promise.all([
    repo.listWithdrawals(deps.db, { ...filter, limit: query.limit, offset: query.offset }),
    repo.countWithdrawals(deps.db, filter),
  ])
  return { withdrawals: rows.map((row) => toWithdrawal(row, true)), total }
}

export async function getWithdrawal(deps: ReturnsDeps, id: number): Promise<Withdrawal> {
  const row = await repo.findWithdrawal(deps.db, id)
  if (!row) throw new AppError(404, 'withdrawalNotFound')
  return toWithdrawal(row, true)
}
