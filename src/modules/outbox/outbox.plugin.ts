import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { type DispatcherOverrides, dispatcherOptions, type Outbox, OutboxDispatcher } from './dispatch-loop.js'
import { emailNotifications } from './notifications.js'
import { afterSaleNotifications } from '../returns/notifications.js'
import { outboxWriteCount } from './outbox.js'
import { createSendThread } from './send-thread.js'

/** What the plugin is given: the service's configuration, and the dispatcher's options to change (tests). */
export interface OutboxPluginOptions {
  config: Config
  options?: DispatcherOverrides
}

declare module 'fastify' {
  interface FastifyInstance {
    outbox: Outbox
  }
  interface FastifyRequest {
    /** outboxWriteCount() when a write request began. */
    outboxWritesAtStart: number | undefined
  }
}

/**
 * The dispatcher: delivers the outbox's due rows after commit, at least once, off the request path. Woken after
 * each write request that queued rows (onResponse) and by emit, and polls as a safety net. Several instances on one
 * PostgreSQL share the work: each claims rows with FOR UPDATE SKIP LOCKED and holds them for a lease.
 */
async function outboxPlugin(app: FastifyInstance, pluginOptions: OutboxPluginOptions): Promise<void> {
  const options = dispatcherOptions(pluginOptions.options)
  const { config } = pluginOptions
  const sender = createSendThread({
    mail: {
      smtpUrl: config.mail.smtpUrl,
      from: config.mail.from,
      timeoutMs: config.mail.timeoutMs,
      dataDir: config.dataDir,
      currency: config.payments.currency,
      publicUrl: config.publicUrl,
    },
  })
  const dispatcher = new OutboxDispatcher(app.db, app.dialect, app.log, options, config.lowStockThreshold, sender)
  app.decorate('outbox', dispatcher as Outbox)
  dispatcher.registerChannel('email', async (message, signal) => {
    const { outcome, sent } = await sender.run({ kind: 'email', mail: { id: message.id, payload: message.payload, createdAt: message.createdAt } }, signal)
    // Recipient and subject only, never the body: a password reset's link is a credential.
    if (sent?.file) app.log.info({ to: sent.to, subject: sent.subject, file: sent.file }, 'e-mail written as a file (no SMTP_URL)')
    else if (sent) app.log.debug({ to: sent.to, subject: sent.subject }, 'e-mail sent')
    return outcome
  })
  dispatcher.onEvent(emailNotifications(pluginOptions.config))
  dispatcher.onEvent(afterSaleNotifications(pluginOptions.config))
  // A write request's transaction has committed by the time it answers: what it queued goes now. A request that
  // queued nothing (no outbox row was written in this process while it ran) wakes nothing: each claim is a query,
  // and most admin writes (a price, a stock level) queue no e-mail or webhook.
  app.decorateRequest('outboxWritesAtStart', undefined)
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') request.outboxWritesAtStart = outboxWriteCount()
    done()
  })
  app.addHook('onResponse', (request, _reply, done) => {
    if (request.outboxWritesAtStart !== undefined && request.outboxWritesAtStart !== outboxWriteCount()) dispatcher.wake()
    done()
  })
  app.addHook('onReady', async () => dispatcher.start())
  app.addHook('onClose', async () => {
    await dispatcher.close()
    await sender.close()
  })
}

export default fp(outboxPlugin, { name: 'outbox', dependencies: ['database'] })
