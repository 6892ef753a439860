import type { Config } from './index.js'
import { durationMs, type Reader } from './read.js'

/** AUDIT_LOG_RETENTION: how long audit entries are kept (JWT_EXPIRES_IN's forms; `0` keeps them forever). */
export function readStaff(read: Reader): Pick<Config, 'auditLogRetentionMs'> {
  const raw = read.string('AUDIT_LOG_RETENTION') ?? '365d'
  if (raw === '0') return { auditLogRetentionMs: 0 }
  const ms = durationMs(raw)
  if (ms === undefined || ms < 1000) {
    read.problem(`AUDIT_LOG_RETENTION must be 0 or a duration of at least one second such as 365d, 12h or 3600 (got "${raw}")`)
    return { auditLogRetentionMs: durationMs('365d') as number }
  }
  return { auditLogRetentionMs: ms }
}
