/** When a failed delivery is tried again: `firstDelayMs × factor^(n−1)` after the n-th failure, capped, ± jitter. */
export interface RetrySchedule {
  firstDelayMs: number
  factor: number
  maxDelayMs: number
  /** A message still undelivered this long after its creation is `failed`. */
  giveUpAfterMs: number
  /** 0.25: each delay is drawn between 75 % and 125 % of its nominal value. */
  jitter: number
}

export const defaultRetrySchedule: RetrySchedule = {
  // 22.5–37.5 s, then 1.5–2.5 min, 6–10 min, 24–40 min, 1.6–2.7 h, then every 3–5 h until 24 h have passed.
  firstDelayMs: 30_000,
  factor: 4,
  maxDelayMs: 4 * 3_600_000,
  giveUpAfterMs: 24 * 3_600_000,
  jitter: 0.25,
}

/** When the next attempt is due after the `failures`-th failure of a message created at `createdAt`; null: give up. */
export function nextAttemptAt(schedule: RetrySchedule, failures: number, createdAt: string, now: number, random = Math.random): string | null {
  const deadline = Date.parse(createdAt) + schedule.giveUpAfterMs
  if (now >= deadline) return null
  const nominal = Math.min(schedule.maxDelayMs, schedule.firstDelayMs * schedule.factor ** Math.max(0, failures - 1))
  const delay = nominal * (1 - schedule.jitter + 2 * schedule.jitter * random())
  // The last attempt is made at the deadline itself, not skipped.
  return new Date(Math.min(deadline, now + Math.max(0, Math.round(delay)))).toISOString()
}
