/** Money is integer cents inside the service; these convert at the edges, without float arithmetic. */

const DECIMAL = /^(\d{1,10})(?:\.(\d{1,2}))?$/

/** Parses "19.99", "19.9", "19" or 19.99 into cents; null when not a non-negative amount with at most 2 decimals. */
export function parseCents(value: string | number): number | null {
  const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value.trim()
  const match = DECIMAL.exec(text)
  if (!match) return null
  const units = Number(match[1])
  const fraction = (match[2] ?? '').padEnd(2, '0')
  return units * 100 + Number(fraction)
}

/**
 * The largest amount the service handles, for a cart line and for an order: 9,999,999,999,999.99.
 * Fifteen significant digits, so every amount up to it is exact as a JS number of cents and as the
 * JSON number it is written as; a line or an order above it is refused (409), never rounded.
 */
export const MAX_AMOUNT_CENTS = 999_999_999_999_999

/** The highest unit price, in cents, at which `quantity` units stay within MAX_AMOUNT_CENTS. */
export function maxUnitCentsFor(quantity: number): number {
  let unitCents = Math.floor(MAX_AMOUNT_CENTS / quantity)
  // The division is a float's; these products are below 2^53, so exact, and settle it.
  while (unitCents * quantity > MAX_AMOUNT_CENTS) unitCents -= 1
  while ((unitCents + 1) * quantity <= MAX_AMOUNT_CENTS) unitCents += 1
  return unitCents
}

/** Whether `quantity` units at `unitCents` stay within MAX_AMOUNT_CENTS. */
export function withinMaxAmount(unitCents: number, quantity: number): boolean {
  return unitCents <= maxUnitCentsFor(quantity)
}

/** Cents as the JSON number the API answers (1999 -> 19.99); exact for any safe integer of cents. */
export function centsToAmount(cents: number): number {
  return Number(`${Math.trunc(cents / 100)}.${String(Math.abs(cents % 100)).padStart(2, '0')}`)
}
