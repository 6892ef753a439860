import { unwrap } from './answers'
import { api } from './client'
import type { components } from './schema'

export type Refund = components['schemas']['Refund']
export type RefundPreview = components['schemas']['RefundPreview']

/** What the refund form sends: units per line (with restock), shipping, and a reason. */
export interface RefundRequest {
  items: Array<{ orderItemId: number; quantity: number; restock: boolean }>
  shippingAmount?: number
  reason?: string
}

const body = (request: RefundRequest) => ({
  ...(request.items.length > 0 ? { items: request.items } : {}),
  ...(request.shippingAmount ? { shippingAmount: request.shippingAmount } : {}),
  ...(request.reason ? { reason: request.reason } : {}),
})

/** POST /orders/:id/refunds/preview: what the refund would give back now (nothing is written). */
export async function previewRefund(orderId: number, request: RefundRequest): Promise<RefundPreview> {
  return unwrap(await api.POST('/orders/{id}/refunds/preview', { params: { path: { id: orderId } }, body: body(request) }))
}

/**
 * POST /orders/:id/refunds under `key`: the form keeps one key for one refund, so that sending it again after a
 * failure (the API did not answer, Stripe was down) never refunds twice.
 */
export async function createRefund(orderId: number, key: string, request: RefundRequest): Promise<Refund> {
  return unwrap(await api.POST('/orders/{id}/refunds', { params: { path: { id: orderId }, header: { 'idempotency-key': key } }, body: body(request) }))
}
