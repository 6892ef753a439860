import { unwrap } from './answers'
import type { Api } from './resource'
import type { components } from './schema'

export type Fulfillment = components['schemas']['Fulfillment']
export type OrderEvent = components['schemas']['OrderEvent']

/** The fields of the ship form that a refusal may be about (shown beside the field). */
export const SHIP_FIELDS = ['items', 'carrier', 'trackingNumber', 'trackingUrl'] as const

export interface ShipInput {
  items?: { orderItemId: number; quantity: number }[]
  carrier?: string
  trackingNumber?: string
  trackingUrl?: string
  notifyCustomer: boolean
}

/** POST /orders/:id/fulfillments: ships the units given (every unit left when `items` is left out). */
export async function ship(api: Api, orderId: number, input: ShipInput): Promise<Fulfillment> {
  return unwrap(await api.POST('/orders/{id}/fulfillments', { params: { path: { id: orderId } }, body: input }), SHIP_FIELDS)
}

/** POST /fulfillments/:id/delivered: delivered now. */
export async function markDelivered(api: Api, fulfillmentId: number): Promise<Fulfillment> {
  return unwrap(await api.POST('/fulfillments/{id}/delivered', { params: { path: { id: fulfillmentId } }, body: {} }))
}

/** GET /orders/:id/events: the order's timeline, oldest first. */
export async function orderEvents(api: Api, orderId: number): Promise<OrderEvent[]> {
  return unwrap(await api.GET('/orders/{id}/events', { params: { path: { id: orderId } } }))
}

/** POST /orders/:id/notes: a note on the timeline. */
export async function addNote(api: Api, orderId: number, text: string): Promise<OrderEvent> {
  return unwrap(await api.POST('/orders/{id}/notes', { params: { path: { id: orderId } }, body: { text } }), ['text'])
}
