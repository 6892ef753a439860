import { unwrap } from './answers'
import { type Api, dataProviderOf, filtersOf, idValue, paging, text, totalOf, type Values } from './resource'
import type { components } from './schema'

export type Return = components['schemas']['Return']
export type ReturnStatus = Return['status']
export type Withdrawal = components['schemas']['Withdrawal']

/** The statuses in their order (the API's list, checked against its type). */
export const RETURN_STATUSES = ['requested', 'approved', 'rejected', 'received'] as const satisfies readonly ReturnStatus[]

function isReturnStatus(value: unknown): value is ReturnStatus {
  return RETURN_STATUSES.some((status) => status === value)
}

/**
 * What a return page asks of a return, as react-admin's update: `{action: "approve"}`, `{action: "reject", reason}`,
 * or `{action: "receive", refund, restock}` (every unit of the return; with `refund`, under a key of its own so that
 * a retried click refunds once).
 */
async function moveReturn(api: Api, id: number, data: Values): Promise<Return> {
  const path = { params: { path: { id } } }
  if (data.action === 'approve') return unwrap(await api.POST('/returns/{id}/approve', path))
  if (data.action === 'reject') return unwrap(await api.POST('/returns/{id}/reject', { ...path, body: { reason: text(data.reason) } }), ['reason'])
  if (data.action === 'receive') {
    const refund = data.refund === true
    const restock = data.restock !== false
    const current = unwrap(await api.GET('/returns/{id}', path))
    const items = current.items.map((item) => ({ orderItemId: item.orderItemId, quantity: item.quantity, restock }))
    const key = typeof data.idempotencyKey === 'string' ? data.idempotencyKey : crypto.randomUUID()
    return unwrap(
      await api.POST('/returns/{id}/receive', {
        params: { path: { id }, header: refund ? { 'idempotency-key': key } : {} },
        body: { items, refund },
      }),
    )
  }
  throw new Error(`Not a move of a return: ${String(data.action)}`)
}

/** Returns: newest first, by status and order; staff approve, reject and receive them. */
export function returnsProvider(api: Api) {
  return dataProviderOf<Return>('returns', {
    async list(params) {
      const { limit, offset } = paging(params)
      const filter = filtersOf(params)
      const orderId = idValue(filter.orderId)
      const query = { limit, offset, ...(isReturnStatus(filter.status) ? { status: filter.status } : {}), ...(orderId !== undefined ? { orderId } : {}) }
      const result = await api.GET('/returns', { params: { query } })
      return { data: unwrap(result), total: totalOf(result.response) }
    },
    one: async (id) => unwrap(await api.GET('/returns/{id}', { params: { path: { id } } })),
    update: async (id, data) => moveReturn(api, id, data),
  })
}

/** Withdrawals: newest first, by order and by whether a return was made of them; staff make that return. */
export function withdrawalsProvider(api: Api) {
  return dataProviderOf<Withdrawal>('withdrawals', {
    async list(params) {
      const { limit, offset } = paging(params)
      const filter = filtersOf(params)
      const orderId = idValue(filter.orderId)
      const converted =
        filter.converted === true || filter.converted === 'true' ? true : filter.converted === false || filter.converted === 'false' ? false : undefined
      const query = { limit, offset, ...(orderId !== undefined ? { orderId } : {}), ...(converted !== undefined ? { converted } : {}) }
      const result = await api.GET('/withdrawals', { params: { query } })
      return { data: unwrap(result), total: totalOf(result.response) }
    },
    one: async (id) => unwrap(await api.GET('/withdrawals/{id}', { params: { path: { id } } })),
    // `{action: "return"}`: the return of its shipped units; the answer is the withdrawal, now with its `returnId`.
    async update(id, data) {
      if (data.action !== 'return') throw new Error(`Not a move of a withdrawal: ${String(data.action)}`)
      unwrap(await api.POST('/withdrawals/{id}/return', { params: { path: { id } } }))
      return unwrap(await api.GET('/withdrawals/{id}', { params: { path: { id } } }))
    },
  })
}
