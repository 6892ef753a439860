import { api, unwrap } from './client'
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

type Events = NewWebhook['events']
const id = (value: number) => ({ params: { path: { id: value } } })

export const listWebhooks = async () => unwrap(await api.GET('/webhooks'))
export const getWebhook = async (webhook: number) => unwrap(await api.GET('/webhooks/{id}', id(webhook)))
export const createWebhook = async (body: { url: string; events: string[]; description?: string }) =>
  unwrap(await api.POST('/webhooks', { body: { ...body, events: body.events as Events } }), fields)
/** What PATCH /webhooks/{id} takes: any of url, events, description, active. */
type WebhookChange = NonNullable<paths['/webhooks/{id}']['patch']['requestBody']>['content']['application/json']
export const updateWebhook = async (webhook: number, body: Partial<Pick<Webhook, 'url' | 'events' | 'description' | 'active'>>) =>
  // The events come from the form's list of the API's names (WEBHOOK_EVENTS); the service checks them again.
  unwrap(await api.PATCH('/webhooks/{id}', { ...id(webhook), body: body as WebhookChange }), fields)
export const deleteWebhook = async (webhook: number) => {
  unwrap(await api.DELETE('/webhooks/{id}', id(webhook)))
}
/** A page of a webhook's deliveries, newest first, with how many there are in all (X-Total-Count). */
export const listDeliveries = async (webhook: number, limit = 50) => {
  const result = await api.GET('/webhooks/{id}/deliveries', { params: { path: { id: webhook }, query: { limit, offset: 0 } } })
  const total = result.response.headers.get('X-Total-Count')
  return { data: unwrap(result), total: total === null ? null : Number(total) }
}
export const retryDelivery = async (webhook: number, deliveryId: string) =>
  unwrap(await api.POST('/webhooks/{id}/deliveries/{deliveryId}/retry', { params: { path: { id: webhook, deliveryId } } }))
