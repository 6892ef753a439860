// The outbox's entry: what the rest of the service imports, from the files that hold it. The event contract is
// events.ts, the channels' contract channels.ts, the back-off retry.ts, the claiming and delivering loop (and the
// event sink, emit and stockChanged) dispatch-loop.ts, the Fastify plugin outbox.plugin.ts. Nothing in the
// module imports this file, so re-exporting the plugin makes no cycle.
export { default, type OutboxPluginOptions } from './outbox.plugin.js'
export { defaultDispatcherOptions, type DispatcherOptions, type DispatcherOverrides, type Outbox } from './dispatch-loop.js'
export type { Channel, Deliver, DeliveryOutcome, OutboxMessage } from './channels.js'
export { SHOP_EVENT_TYPES, type EventListener, type ShopEvent, type ShopEventType } from './events.js'
export { defaultRetrySchedule, nextAttemptAt, type RetrySchedule } from './retry.js'
