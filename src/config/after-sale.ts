import type { Config } from './index.js'
import type { Reader } from './read.js'

/** Whether `zone` is a time zone the runtime knows (an IANA name such as Europe/Madrid, or UTC). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/**
 * After the sale: the zone whose calendar days the withdrawal and return windows count in, and their lengths. The
 * withdrawal window cannot be shorter than the 14 days the law gives; a shop may give more.
 */
export function readAfterSale(read: Reader): Pick<Config, 'shopTimezone' | 'withdrawalDays' | 'returnDays'> {
  let shopTimezone = read.string('SHOP_TIMEZONE') ?? 'UTC'
  if (!isTimeZone(shopTimezone)) {
    read.problem(`SHOP_TIMEZONE must be an IANA time zone such as Europe/Madrid or UTC (got "${shopTimezone}")`)
    shopTimezone = 'UTC'
  }
  return {
    shopTimezone,
    withdrawalDays: read.integer('WITHDRAWAL_DAYS', 14, 14, 3650),
    returnDays: read.integer('RETURN_DAYS', 30, 1, 3650),
  }
}
