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

/** Cents as the JSON number the contract shows (1999 -> 19.99); exact for any safe integer of cents. */
export function centsToAmount(cents: number): number {
  return Number(`${Math.trunc(cents / 100)}.${String(Math.abs(cents % 100)).padStart(2, '0')}`)
}
