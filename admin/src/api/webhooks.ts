import { unwrap } from './answers'
import { type Api, changed, dataProviderOf, paging, text } from './resource'
import type { components, operations } from './schema'

/** A webhook endpoint as the API answers it; `secret` only in the answer to its creation. */
export type Webhook = components['schemas']['Webhook'] & { secret?: string }
/** One delivery of a webhook's log. */
export type Delivery = components['schemas']['WebhookDelivery']
type WebhookEvent = operations['createWebhook']['requestBody']['content']['application/json']['events'][number]
type WebhookChange = operations['updateWebhook']['requestBody']['content']['application/json']

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
] as const satisfies readonly WebhookEvent[]

const isEvent = (value: unknown): value is WebhookEvent => WEBHOOK_EVENTS.some((event) => event === value)
/** The events ticked in the form (only the API's names are offered). */
const eventsOf = (value: unknown): WebhookEvent[] => (Array.isArray(value) ? value.filter(isEvent) : [])

const fields = ['url', 'events', 'description', 'active'] as const
const id = (webhook: number) => ({ params: { path: { id: webhook } } })

/** Webhooks: every endpoint at once (a shop has few), paged here; a change sends only the fields that changed. */
export function webhooksProvider(api: Api) {
  return dataProviderOf<Webhook>('webhooks', {
    async list(params) {
      const { limit, offset } = paging(params)
      const all = unwrap(await api.GET('/webhooks'))
      return { data: all.slice(offset, offset + limit), total: all.length }
    },
    one: async (webhook) => unwrap(await api.GET('/webhooks/{id}', id(webhook))),
    async create(data) {
      const description = text(data.description)
      const body = { url: text(data.url), events: eventsOf(data.events), ...(description ? { description } : {}) }
      return unwrap(await api.POST('/webhooks', { body }), fields)
    },
    async update(webhook, data, previous) {
      const body: WebhookChange = {}
      for (const field of changed(fields, data, previous)) {
        if (field === 'events') body.events = eventsOf(data.events)
        else if (field === 'active') body.active = data.active === true
        else body[field] = text(data[field])
      }
      if (Object.keys(body).length === 0) return unwrap(await api.GET('/webhooks/{id}', id(webhook)))
      return unwrap(await api.PATCH('/webhooks/{id}', { ...id(webhook), body }), fields)
    },
    async remove(webhook) {
      unwrap(await api.DELETE('/webhooks/{id}', id(webhook)))
    },
  })
}

/** A page of a webhook's deliveries, newest first, with how many there are in all (X-Total-Count). */
export async function listDeliveries(api: Api, webhook: number, limit = 50): Promise<{ data: Delivery[]; total: number | null }> {
  const result = await api.GET('/webhooks/{id}/deliveries', { params: { path: { id: webhook }, query: { limit, offset: 0 } } })
  const total = result.response.headers.get('X-Total-Count')
  return { data: unwrap(result), total: total === null ? null : Number(total) }
}

export async function retryDelivery(api: Api, webhook: number, deliveryId: string): Promise<Delivery> {
  return unwrap(await api.POST('/webhooks/{id}/deliveries/{deliveryId}/retry', { params: { path: { id: webhook, deliveryId } } }))
}
