import { hostname } from 'node:os'

/** What a process warning is logged with: the service's logger once it exists (pino's warn). */
export interface WarningLogger {
  warn(fields: object, message: string): void
}

/** The one line a warning is logged as: its name (unless the generic `Warning`) and message, spaces collapsed. */
export function warningMessage(warning: Error): string {
  const message = warning.message.replace(/\s+/g, ' ').trim()
  return warning.name === 'Warning' || warning.name === '' ? message : `${warning.name}: ${message}`
}

/**
 * Process warnings (process.emitWarning: deprecations, a dependency's notice such as the AWS SDK's
 * NodeVersionSupportWarning) as JSON log lines, once each: per code, or, for a warning without one, per
 * name and message. Until `attach` gives the service's logger, lines are written to standard output in
 * the logger's shape (level 40), so that a warning during start-up is JSON too.
 */
export function createWarningRouter(write: (line: string) => void = (line) => process.stdout.write(line)) {
  const seen = new Set<string>()
  let logger: WarningLogger | undefined
  return {
    attach(log: WarningLogger): void {
      logger = log
    },
    onWarning(warning: Error & { code?: unknown; detail?: unknown }): void {
      const code = typeof warning.code === 'string' ? warning.code : undefined
      const key = code ?? `${warning.name}: ${warning.message}`
      if (seen.has(key)) return
      seen.add(key)
      const fields = {
        warning: { name: warning.name, ...(code ? { code } : {}), ...(typeof warning.detail === 'string' ? { detail: warning.detail } : {}) },
      }
      const message = warningMessage(warning)
      if (logger) logger.warn(fields, message)
      else write(`${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, hostname: hostname(), ...fields, msg: message })}\n`)
    },
  }
}

/**
 * Takes process warnings over from Node's own printer, which writes plain-text lines (nine for the AWS SDK's
 * notice on Node 20) to standard error, in the middle of a JSON log. Only where Node would print them: with
 * --no-warnings or NODE_NO_WARNINGS=1 Node has no printer, and warnings stay silent as before.
 */
export function routeProcessWarnings(): ReturnType<typeof createWarningRouter> {
  const router = createWarningRouter()
  if (process.listenerCount('warning') === 0) return router
  process.removeAllListeners('warning')
  process.on('warning', (warning) => router.onWarning(warning))
  return router
}
