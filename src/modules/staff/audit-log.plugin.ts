import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { auditLogRoutes } from './audit-log.routes.js'
import { pruneAuditLog } from './audit-log.service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The audit log's retention job, one run (tests run it by hand): deletes entries older than AUDIT_LOG_RETENTION. */
    pruneAuditLog: (now?: number) => Promise<number>
  }
}

/** The retention job runs once a day, and once at start-up (an instance restarted daily would otherwise never run it). */
export const AUDIT_RETENTION_EVERY_MS = 24 * 60 * 60_000

/**
 * The audit log: GET /audit-log and the daily retention job. The job needs no claim across instances: deleting the
 * same old entries twice deletes nothing the second time. Its timer is unref'd and stopped when the app closes.
 */
async function auditLogPlugin(app: FastifyInstance, options: { config: Config; jobs?: boolean }): Promise<void> {
  const retentionMs = options.config.auditLogRetentionMs
  const prune = (now = Date.now()) => pruneAuditLog(app.db, retentionMs, now)
  app.decorate('pruneAuditLog', prune)
  await app.register(auditLogRoutes, { publicUrl: options.config.publicUrl })

  if (!(options.jobs ?? true) || retentionMs === 0) return
  let running: Promise<unknown> = Promise.resolve()
  const run = () => {
    running = running.then(() => prune()).catch((error: unknown) => app.log.error({ err: error, job: 'audit-log:retention' }, 'audit log retention failed'))
  }
  const first = setTimeout(run, 0)
  const timer = setInterval(run, AUDIT_RETENTION_EVERY_MS)
  first.unref()
  timer.unref()
  app.addHook('onClose', async () => {
    clearTimeout(first)
    clearInterval(timer)
    await running
  })
}

export default fp(auditLogPlugin, { name: 'audit-log', dependencies: ['database', 'auth'] })
