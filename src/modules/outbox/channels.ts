/** Where a message goes: an e-mail (src/modules/outbox/mail) or a webhook endpoint (src/modules/webhooks). */
export type Channel = 'email' | 'webhook'

export const CHANNELS: readonly Channel[] = ['email', 'webhook']

/** One outbox row as a channel sees it. `attempts` counts the attempts made before this one. */
export interface OutboxMessage {
  id: string
  channel: Channel
  webhookId: number | null
  event: string | null
  /** The row's JSON, parsed: an e-mail's {template, to, data}; a webhook delivery's body. */
  payload: unknown
  attempts: number
  createdAt: string
}

/** What a channel says of one attempt. `permanent` failures are not retried (a receiver that can never accept it). */
export type DeliveryOutcome = { ok: true; statusCode?: number } | { ok: false; error: string; statusCode?: number; permanent?: boolean }

/** Delivers one message; must give up when `signal` aborts (the delivery's timeout, or the app closing). */
export type Deliver = (message: OutboxMessage, signal: AbortSignal) => Promise<DeliveryOutcome>
