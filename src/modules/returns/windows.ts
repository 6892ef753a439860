/**
 * The withdrawal and return windows, counted in calendar days of the shop's zone (SHOP_TIMEZONE). A window ends at
 * the end of its last day there, whatever the hour of the delivery it counts from and whatever the clocks did in
 * between (a change to or from summer time moves no day), so two instants are compared by their local dates only.
 */

const dateFormats = new Map<string, Intl.DateTimeFormat>()

/** The date `YYYY-MM-DD` that `instant` falls on in `zone`. */
export function localDate(instant: Date, zone: string): string {
  let format = dateFormats.get(zone)
  if (!format) {
    // en-CA writes dates as YYYY-MM-DD.
    format = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' })
    dateFormats.set(zone, format)
  }
  return format.format(instant)
}

/** `date` (`YYYY-MM-DD`) plus `days` calendar days. */
export function addDays(date: string, days: number): string {
  const day = new Date(`${date}T00:00:00.000Z`)
  day.setUTCDate(day.getUTCDate() + days)
  return day.toISOString().slice(0, 10)
}

/** A date falling on a Saturday or Sunday moves to the Monday after; any other date stays. */
export function nextWorkingDay(date: string): string {
  const weekday = new Date(`${date}T00:00:00.000Z`).getUTCDay()
  return weekday === 6 ? addDays(date, 2) : weekday === 0 ? addDays(date, 1) : date
}

/** What the windows count from: whether the order has reached the customer in full, and when its last parcel did. */
export interface DeliveryState {
  /** Every line shipped (or cancelled), and every shipment delivered. */
  delivered: boolean
  /** The latest `deliveredAt` of the order's shipments (ISO 8601), when `delivered`. */
  lastDeliveredAt: string | null
}

/**
 * The last day (`YYYY-MM-DD` in `zone`) a customer may withdraw: `days` days after the day of the last delivery, a
 * Saturday or Sunday moved to the Monday after. Null while the order has not reached the customer in full: the
 * window stays open until then.
 */
export function withdrawalDeadline(state: DeliveryState, zone: string, days: number): string | null {
  if (!state.delivered || state.lastDeliveredAt === null) return null
  return nextWorkingDay(addDays(localDate(new Date(state.lastDeliveredAt), zone), days))
}

/** The last day (`YYYY-MM-DD` in `zone`) a customer may ask for a return: `days` days after the last delivery. */
export function returnDeadline(state: DeliveryState, zone: string, days: number): string | null {
  if (!state.delivered || state.lastDeliveredAt === null) return null
  return addDays(localDate(new Date(state.lastDeliveredAt), zone), days)
}

/** Whether a window ending at the end of `deadline` (in `zone`; null: not ending yet) is over at `now`. */
export function windowClosed(deadline: string | null, now: Date, zone: string): boolean {
  return deadline !== null && localDate(now, zone) > deadline
}
