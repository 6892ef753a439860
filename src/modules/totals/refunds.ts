import { shareOf } from './totals.js'

/**
 * The arithmetic of a refund, next to the totals function it undoes: pure, in integer cents, from what the order
 * snapshot charged (each line's total and tax, the shipping and its tax). A part of a line or of the shipping is
 * priced by a cumulative rule: for a line of `q` units charged `L`, the first `n` units refunded are worth
 * `A(n) = round(L × n / q)`, so `k` more after `j` are worth `A(j + k) − A(j)`. However a line is cut into refunds,
 * its parts add up to `L` exactly; each line is priced from its own total (its share of the discount already in
 * it), so a refund never moves a discount onto the lines that stay. The tax inside is priced alike from the line's
 * tax, and the shipping's tax from the shipping's, pro rata of the shipping refunded.
 */

export interface RefundableLine {
  /** Units bought. */
  quantity: number
  /** What the line charged (its total), and the tax inside it. */
  totalCents: number
  taxCents: number
  /** Units already refunded. */
  refundedQuantity: number
}

export interface RefundPart {
  amountCents: number
  taxCents: number
}

/** What `units` more units of `line` are worth, after those already refunded. */
export function lineRefund(line: RefundableLine, units: number): RefundPart {
  const { quantity: q, totalCents, taxCents, refundedQuantity: j } = line
  const k = j + units
  return {
    amountCents: shareOf(totalCents, k, q) - shareOf(totalCents, j, q),
    taxCents: shareOf(taxCents, k, q) - shareOf(taxCents, j, q),
  }
}

export interface RefundableShipping {
  /** The shipping the order charged (after its discount, with its tax when prices exclude it), and its tax. */
  chargedCents: number
  taxCents: number
  /** Shipping already refunded. */
  refundedCents: number
}

/** The tax inside `cents` more of shipping refunded, pro rata: the cumulative rule on the shipping's cents. */
export function shippingRefundTax(shipping: RefundableShipping, cents: number): number {
  const { chargedCents: s, taxCents: t, refundedCents: before } = shipping
  return shareOf(t, before + cents, s) - shareOf(t, before, s)
}

export interface RefundRequest {
  lines: ReadonlyArray<RefundableLine & { units: number }>
  shipping: RefundableShipping
  /** Shipping to refund, in cents (≤ what is left of it: the caller checks). */
  shippingCents: number
  /** What the payment still holds: `amount − refunded`. */
  refundableCents: number
  /** An amount chosen by the caller (≤ refundable: the caller checks); without it, the parts, capped at refundable. */
  amountCents?: number | undefined
}

export interface RefundAmounts {
  lines: RefundPart[]
  shippingTaxCents: number
  /** Σ of the parts' taxes. */
  taxCents: number
  /** Σ of the lines' amounts and the shipping: what the parts are worth. */
  partsCents: number
  /** What is paid back: `amountCents` when given, else the parts capped at what is refundable. */
  amountCents: number
}

/** A refund's amounts: each line's part, the shipping's tax, and what is paid back. */
export function refundAmounts(request: RefundRequest): RefundAmounts {
  const lines = request.lines.map((line) => lineRefund(line, line.units))
  const shippingTaxCents = shippingRefundTax(request.shipping, request.shippingCents)
  const partsCents = lines.reduce((sum, part) => sum + part.amountCents, 0) + request.shippingCents
  const taxCents = lines.reduce((sum, part) => sum + part.taxCents, 0) + shippingTaxCents
  const amountCents = request.amountCents ?? Math.min(partsCents, request.refundableCents)
  return { lines, shippingTaxCents, taxCents, partsCents, amountCents }
}
