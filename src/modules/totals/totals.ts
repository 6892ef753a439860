import { MAX_AMOUNT_CENTS } from '../../shared/money.js'

/**
 * The totals module: the one function that turns lines and shipping into money: the cart view and checkout both call it, so what
 * the customer sees is what the order charges. Pure (no database, no clock) and in integer cents. Part 3's
 * taxes and discounts are added here, and the refunds' per-unit amounts will be read from its lines.
 */

export interface TotalsLine {
  unitCents: number
  quantity: number
}

/** A shipping method's price rule: `priceCents`, or 0 from `freeOverCents` of subtotal on. */
export interface ShippingRate {
  priceCents: number
  freeOverCents: number | null
}

export interface Totals {
  lines: Array<TotalsLine & { totalCents: number }>
  subtotalCents: number
  shippingCents: number
  totalCents: number
  /** False when a line, the subtotal or the total is above MAX_AMOUNT_CENTS (the caller refuses it with a 409). */
  withinLimits: boolean
}

/** What shipping costs at this subtotal. */
export function shippingCents(rate: ShippingRate | null | undefined, subtotalCents: number): number {
  if (!rate) return 0
  return rate.freeOverCents !== null && subtotalCents >= rate.freeOverCents ? 0 : rate.priceCents
}

export function computeTotals(input: { lines: readonly TotalsLine[]; shipping?: ShippingRate | null | undefined }): Totals {
  let subtotalCents = 0
  let withinLimits = true
  const lines = input.lines.map((line) => {
    const totalCents = line.unitCents * line.quantity
    subtotalCents += totalCents
    // Past the maximum a sum stops being exact (and a JSON number stops being one).
    if (totalCents > MAX_AMOUNT_CENTS || subtotalCents > MAX_AMOUNT_CENTS) withinLimits = false
    return { ...line, totalCents }
  })
  const shipping = shippingCents(input.shipping, subtotalCents)
  const totalCents = subtotalCents + shipping
  if (totalCents > MAX_AMOUNT_CENTS) withinLimits = false
  return { lines, subtotalCents, shippingCents: shipping, totalCents, withinLimits }
}
