import { callApi } from './client'

export const WEBHOOK_EVENTS = [
  'order.created',
  'order.paid',
  'order.status_changed',
  'order.cancelled',
  'product.created',
  'product.updated',
  'product.deleted',
  'stock.low',
] as const

export interface Webhook {
  id: number
  url: string
  events: string[]
  description: string
  active: boolean
  createdAt: string
  updatedAt: string
  /** Only in the answer to its creation. */
  secret?: string
}

export interface Delivery {
  id: string
  event: string
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  lastStatusCode: number | null
  lastError: string | null
  nextAttemptAt: string | null
  createdAt: string
  deliveredAt: string | null
}

const fields = ['url', 'events', 'description', 'active'] as const

export const listWebhooks = async () => (await callApi<Webhook[]>('GET', '/webhooks')).data
export const getWebhook = async (id: number) => (await callApi<Webhook>('GET', `/webhooks/${id}`)).data
export const createWebhook = async (body: { url: string; events: string[]; description?: string }) =>
  (await callApi<Webhook>('POST', '/webhooks', body, fields)).data
export const updateWebhook = async (id: number, body: Partial<Pick<Webhook, 'url' | 'events' | 'description' | 'active'>>) =>
  (await callApi<Webhook>('PATCH', `/webhooks/${id}`, body, fields)).data
export const deleteWebhook = async (id: number) => {
  await callApi<{ message: string }>('DELETE', `/webhooks/${id}`)
}
export const listDeliveries = async (id: number, limit = 50) => callApi<Delivery[]>('GET', `/webhooks/${id}/deliveries?limit=${limit}&offset=0`)
export const retryDelivery = async (id: number, deliveryId: string) => (await callApi<Delivery>('POST', `/webhooks/${id}/deliveries/${deliveryId}/retry`)).data
