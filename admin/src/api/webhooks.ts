import { callApi } from './client'
import type { paths } from './schema'

type Json<T> = T extends { content: { 'application/json': infer Body } } ? Body : never

/** A webhook endpoint as the API answers it (the generated schema); `secret` only in its creation's answer. */
export type Webhook = Json<paths['/webhooks/{id}']['get']['responses'][200]> & { secret?: string }
/** What POST /webhooks takes: its `events` are the API's list of event names. */
type NewWebhook = NonNullable<paths['/webhooks']['post']['requestBody']>['content']['application/json']
/** One delivery of a webhook's log. */
export type Delivery = Json<paths['/webhooks/{id}/deliveries']['get']['responses'][200]>[number]

/** The events an endpoint can subscribe to, in the order the form offers them (checked against the API's list). */
export const WEBHOOK_EVENTS = [
  'order.created',
  'order.paid',
  'order.status_changed',
  'order.cancelled',
  'product.created',
  'product.updated',
  'product.deleted',
  'stock.low',
] as const satisfies readonly NewWebhook['events'][number][]

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
