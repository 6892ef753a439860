import { MAX_AMOUNT_CENTS } from '../../shared/money.js'

/**
 * The totals module: the one function that turns lines, a discount code, shipping and taxes into money. The cart
 * view, checkout and the refunds all read it, so what the customer sees is what the order charges. Pure (no
 * database, no clock, no configuration: the caller passes the rates and whether prices include tax) and in
 * integer cents. The steps, in order (docs/taxes-discounts.md tells them with a worked example):
 *
 * 1. `line.subtotal = unit × quantity`; `subtotal = Σ line.subtotal`.
 * 2. The discount `D` over the eligible lines (`E` their subtotal): percent `p` → round(E × p / 100), fixed `v` →
 *    min(v, E); split by largest remainder (floor shares, the cents left one each to the largest fractional parts,
 *    ties to the earlier line).
 * 3. Shipping: the method's price, or 0 when `subtotal − D ≥ freeOver`; a free-shipping code discounts all of it.
 * 4. Tax per line at its rate on `line.subtotal − line.discount` (prices with tax: `round(base × r / (100 + r))`,
 *    the line's total is its base; without: `round(base × r / 100)`, added to the line's total); shipping alike.
 * 5. `taxTotal`, and `total = subtotal − discountTotal + shippingTotal` (+ `taxTotal` when prices exclude tax).
 * 6. Tax lines: the rounded taxes grouped by class, rate and name, highest rate first, with their net base.
 *
 * `round` is half-up. Rates and percentages are integer hundredths of a percent (21 % = 2100, 5.5 % = 550): no
 * float takes part. Every product is exact: on Numbers when it stays below 2^52 (every cart of ordinary amounts),
 * on BigInts past that (amounts run up to MAX_AMOUNT_CENTS, about 10^15, times a rate of up to 10,000).
 */

/** A tax rate as the totals function uses it: `rate` in hundredths of a percent (21 % = 2100), 0–10,000. */
export interface TaxRate {
  taxClass: string
  rate: number
  name: string
}

export interface TotalsLine {
  unitCents: number
  quantity: number
  /** Whether the discount code applies to this line (its products and categories); true when left out. */
  eligible?: boolean | undefined
  /** The rate of the line's tax class in the tax country; none (null or left out): no tax, no tax line. */
  tax?: TaxRate | null | undefined
}

/** A shipping method's price rule: `priceCents`, or 0 from `freeOverCents` of subtotal (after the discount) on. */
export interface ShippingRate {
  priceCents: number
  freeOverCents: number | null
  /** The rate of the method's tax class in the tax country; none: shipping carries no tax. */
  tax?: TaxRate | null | undefined
}

/** A discount code's effect: `percent` in hundredths of a percent (10 % = 1000, 1–10,000), `fixed` in cents. */
export type TotalsDiscount = { type: 'percent'; percent: number } | { type: 'fixed'; valueCents: number } | { type: 'free_shipping' }

export interface TotalsLineResult {
  unitCents: number
  quantity: number
  /** unit × quantity. */
  subtotalCents: number
  /** The line's share of the code's discount. */
  discountCents: number
  /** The applied rate, in hundredths of a percent (0 without one). */
  taxRate: number
  taxCents: number
  /** What the line charges: `subtotal − discount`, plus its tax when prices exclude tax. */
  totalCents: number
}

export interface TaxLine {
  name: string
  taxClass: string
  /** Hundredths of a percent. */
  rate: number
  /** The net amount taxed: the taxed amounts less their tax when prices include tax, the taxed amounts otherwise. */
  baseCents: number
  amountCents: number
}

export interface Totals {
  lines: TotalsLineResult[]
  subtotalCents: number
  /** `D`: the code's discount on the lines (Σ line discounts). */
  linesDiscountCents: number
  /** The method's price, or 0 from its threshold on (before a free-shipping code). */
  shippingTotalCents: number
  /** What a free-shipping code takes off shipping. */
  shippingDiscountCents: number
  /** `D + shippingDiscount`. */
  discountTotalCents: number
  shippingTaxCents: number
  taxTotalCents: number
  /** What shipping charges: `shippingTotal − shippingDiscount`, plus its tax when prices exclude tax. */
  shippingChargedCents: number
  totalCents: number
  pricesIncludeTax: boolean
  taxLines: TaxLine[]
  /**
   * False when a line, the subtotal or the total is above MAX_AMOUNT_CENTS (the caller refuses it with a 409); the
   * figures are then not to be used.
   */
  withinLimits: boolean
}

export interface TotalsInput {
  lines: readonly TotalsLine[]
  shipping?: ShippingRate | null | undefined
  discount?: TotalsDiscount | null | undefined
  /** Whether prices (and shipping) are entered with tax; true when left out (the default of PRICES_INCLUDE_TAX). */
  pricesIncludeTax?: boolean | undefined
}

/** 100 % in hundredths of a percent. */
const HUNDRED = 10_000
/** Below this a product of two non-negative integers, and `q × d` near it, are exact as Numbers. */
const EXACT = 2 ** 52

// The remainder of the last mulDiv, handed back without allocating a pair.
let remainder = 0

/**
 * floor(a × b / d) for non-negative safe integers whose quotient is a safe integer; the remainder is left in
 * `remainder`. Exact: Numbers while a × b < 2^52 (the float division may be one off, which the remainder corrects),
 * BigInts past that.
 */
function mulDiv(a: number, b: number, d: number): number {
  const n = a * b
  if (n < EXACT) {
    let q = Math.floor(n / d)
    let r = n - q * d
    if (r < 0) {
      q -= 1
      r += d
    } else if (r >= d) {
      q += 1
      r -= d
    }
    remainder = r
    return q
  }
  const big = BigInt(a) * BigInt(b)
  const bigD = BigInt(d)
  remainder = Number(big % bigD)
  return Number(big / bigD)
}

/** round(a × b / d), half-up, exactly. */
function mulDivRound(a: number, b: number, d: number): number {
  const q = mulDiv(a, b, d)
  return 2 * remainder >= d ? q + 1 : q
}

/**
 * `round(total × n / q)`, half-up and exact: the share of `n` of a line's `q` units in an amount of the line (its
 * total, its tax). The refunds' cumulative rule (refunds.ts) is built on it.
 */
export function shareOf(totalCents: number, n: number, q: number): number {
  if (q <= 0 || n <= 0 || totalCents === 0) return 0
  if (n >= q) return totalCents
  return mulDivRound(totalCents, n, q)
}

/** The tax in `amount` at `rate`: included, round(amount × r / (100 + r)); excluded, round(amount × r / 100). */
function taxOf(amountCents: number, rate: number, included: boolean): number {
  if (rate === 0 || amountCents === 0) return 0
  return mulDivRound(amountCents, rate, included ? HUNDRED + rate : HUNDRED)
}

/** What shipping costs at this subtotal (after the lines' discount). */
export function shippingCents(rate: ShippingRate | null | undefined, subtotalCents: number): number {
  if (!rate) return 0
  return rate.freeOverCents !== null && subtotalCents >= rate.freeOverCents ? 0 : rate.priceCents
}

/** Adds a taxed amount to its tax line (class, rate and name), making the line on its first amount. */
function addToTaxLine(taxLines: TaxLine[], tax: TaxRate, netCents: number, amountCents: number): void {
  for (const line of taxLines) {
    if (line.taxClass === tax.taxClass && line.rate === tax.rate && line.name === tax.name) {
      line.baseCents += netCents
      line.amountCents += amountCents
      return
    }
  }
  taxLines.push({ name: tax.name, taxClass: tax.taxClass, rate: tax.rate, baseCents: netCents, amountCents })
}

/** Highest rate first; then by class and name, so that the order never depends on the lines'. */
function byRate(a: TaxLine, b: TaxLine): number {
  if (a.rate !== b.rate) return b.rate - a.rate
  if (a.taxClass !== b.taxClass) return a.taxClass < b.taxClass ? -1 : 1
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

export function computeTotals(input: TotalsInput): Totals {
  const included = input.pricesIncludeTax !== false
  const discount = input.discount ?? null
  const count = input.lines.length
  let withinLimits = true

  // 1. Subtotals, and E: the eligible lines' subtotal.
  const lines: TotalsLineResult[] = new Array<TotalsLineResult>(count)
  let subtotalCents = 0
  let eligibleCents = 0
  for (let i = 0; i < count; i++) {
    const line = input.lines[i]!
    const lineSubtotal = line.unitCents * line.quantity
    subtotalCents += lineSubtotal
    // Past the maximum a sum stops being exact (and a JSON number stops being one).
    if (lineSubtotal > MAX_AMOUNT_CENTS || subtotalCents > MAX_AMOUNT_CENTS) withinLimits = false
    if (line.eligible !== false) eligibleCents += lineSubtotal
    lines[i] = { unitCents: line.unitCents, quantity: line.quantity, subtotalCents: lineSubtotal, discountCents: 0, taxRate: 0, taxCents: 0, totalCents: 0 }
  }
  // Past the maximum the figures are refused anyway; this keeps the steps below from failing on them.
  if (!withinLimits) eligibleCents = Math.min(eligibleCents, MAX_AMOUNT_CENTS)

  // 2. The discount D, and its split by largest remainder.
  let linesDiscountCents = 0
  if (discount !== null && eligibleCents > 0) {
    if (discount.type === 'percent') linesDiscountCents = mulDivRound(eligibleCents, Math.min(discount.percent, HUNDRED), HUNDRED)
    else if (discount.type === 'fixed') linesDiscountCents = Math.min(discount.valueCents, eligibleCents)
  }
  if (linesDiscountCents > 0 && withinLimits) splitDiscount(input.lines, lines, linesDiscountCents, eligibleCents)

  // 3. Shipping, free from its threshold of the discounted subtotal, and what a free-shipping code takes off.
  const shipping = input.shipping ?? null
  const shippingTotalCents = shippingCents(shipping, subtotalCents - linesDiscountCents)
  const shippingDiscountCents = discount !== null && discount.type === 'free_shipping' ? shippingTotalCents : 0
  const discountTotalCents = linesDiscountCents + shippingDiscountCents

  // 4. Tax per line, then shipping's; 6. the tax lines as they go.
  const taxLines: TaxLine[] = []
  let taxTotalCents = 0
  for (let i = 0; i < count; i++) {
    const result = lines[i]!
    const tax = input.lines[i]!.tax
    const base = result.subtotalCents - result.discountCents
    if (tax && withinLimits) {
      const amount = taxOf(base, tax.rate, included)
      result.taxRate = tax.rate
      result.taxCents = amount
      taxTotalCents += amount
      addToTaxLine(taxLines, tax, included ? base - amount : base, amount)
      result.totalCents = included ? base : base + amount
    } else {
      result.totalCents = base
    }
  }
  const shippingBase = shippingTotalCents - shippingDiscountCents
  let shippingTaxCents = 0
  const shippingTax = shipping?.tax
  if (shippingTax && shippingBase > 0 && withinLimits) {
    shippingTaxCents = taxOf(shippingBase, shippingTax.rate, included)
    taxTotalCents += shippingTaxCents
    addToTaxLine(taxLines, shippingTax, included ? shippingBase - shippingTaxCents : shippingBase, shippingTaxCents)
  }
  if (taxLines.length > 1) taxLines.sort(byRate)

  // 5. The total.
  const shippingChargedCents = included ? shippingBase : shippingBase + shippingTaxCents
  const totalCents = subtotalCents - discountTotalCents + shippingTotalCents + (included ? 0 : taxTotalCents)
  if (totalCents > MAX_AMOUNT_CENTS) withinLimits = false

  return {
    lines,
    subtotalCents,
    linesDiscountCents,
    shippingTotalCents,
    shippingDiscountCents,
    discountTotalCents,
    shippingTaxCents,
    taxTotalCents,
    shippingChargedCents,
    totalCents,
    pricesIncludeTax: included,
    taxLines,
    withinLimits,
  }
}

// The remainders of the largest-remainder split, kept between calls (grown for a longer cart), so that a call
// allocates nothing but its result. The function is synchronous: no two calls share it at once.
let remainders = new Float64Array(64)

/**
 * Gives each eligible line floor(D × line / E), then the cents left one each to the lines of the largest fractional
 * parts (the remainders of D × line / E, over the same E, compared as integers), ties to the earlier line. The cents
 * left are fewer than the lines of a remainder above 0, so no line gets two.
 */
function splitDiscount(input: readonly TotalsLine[], lines: TotalsLineResult[], discountCents: number, eligibleCents: number): void {
  if (remainders.length < lines.length) remainders = new Float64Array(Math.max(lines.length, remainders.length * 2))
  const left = remainders
  let given = 0
  for (let i = 0; i < lines.length; i++) {
    if (input[i]!.eligible === false) {
      left[i] = -1
      continue
    }
    const share = mulDiv(discountCents, lines[i]!.subtotalCents, eligibleCents)
    lines[i]!.discountCents = share
    left[i] = remainder
    given += share
  }
  for (let cents = discountCents - given; cents > 0; cents--) {
    // The largest remainder not yet served; `>` keeps the earlier of equal ones.
    let best = -1
    for (let i = 0; i < lines.length; i++) if (left[i]! > (best < 0 ? 0 : left[best]!)) best = i
    if (best < 0) break
    lines[best]!.discountCents += 1
    left[best] = -1
  }
}
