import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { computeTotals, type TaxRate, type Totals, type TotalsInput } from '../../src/modules/totals/totals.js'
import { lineRefund, refundAmounts, shippingRefundTax } from '../../src/modules/totals/refunds.js'

// The refund arithmetic over generated orders (the totals function's own): however the units and the shipping are
// cut into refunds, the parts add up to what was charged, each line's to its own total and tax, and no refund moves
// a line's discount onto another.

const taxRate: fc.Arbitrary<TaxRate> = fc
  .record({ taxClass: fc.constantFrom('standard', 'reduced'), rate: fc.oneof(fc.constantFrom(0, 1000, 2100), fc.integer({ min: 0, max: 10_000 })) })
  .map((r) => ({ ...r, name: `IVA ${r.rate / 100}%` }))
const input: fc.Arbitrary<TotalsInput> = fc.record({
  lines: fc.array(
    fc.record({
      unitCents: fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 99_999_999_999 })),
      quantity: fc.integer({ min: 1, max: 12 }),
      eligible: fc.boolean(),
      tax: fc.option(taxRate, { nil: undefined }),
    }),
    { minLength: 1, maxLength: 8 },
  ),
  shipping: fc.option(fc.record({ priceCents: fc.integer({ min: 0, max: 100_000 }), freeOverCents: fc.constant(null), tax: fc.option(taxRate) })),
  discount: fc.option(
    fc.oneof(
      fc.record({ type: fc.constant('percent' as const), percent: fc.integer({ min: 1, max: 10_000 }) }),
      fc.record({ type: fc.constant('fixed' as const), valueCents: fc.integer({ min: 1, max: 10_000_000 }) }),
      fc.record({ type: fc.constant('free_shipping' as const) }),
    ),
  ),
  pricesIncludeTax: fc.boolean(),
})

/** A cut of `n` units into refunds of at least one unit each, from a list of random sizes. */
function cut(n: number, sizes: number[]): number[] {
  const parts: number[] = []
  let left = n
  for (const size of sizes) {
    if (left === 0) break
    const part = Math.min(left, Math.max(1, size))
    parts.push(part)
    left -= part
  }
  if (left > 0) parts.push(left)
  return parts
}

/** The order as stored: each line's total and tax, the shipping charged and its tax. */
function stored(totals: Totals) {
  const lines = totals.lines.map((line) => ({ quantity: line.quantity, totalCents: line.totalCents, taxCents: line.taxCents }))
  const shippingCharged = totals.totalCents - lines.reduce((sum, line) => sum + line.totalCents, 0)
  const shippingTax = totals.taxTotalCents - lines.reduce((sum, line) => sum + line.taxCents, 0)
  return { lines, shippingCharged, shippingTax }
}

describe('refund arithmetic', () => {
  it('refunding every unit and all shipping, in any cut, returns exactly what was paid; each line’s parts add up to its total and tax', () => {
    fc.assert(
      fc.property(
        input,
        fc.array(fc.integer({ min: 1, max: 5 }), { maxLength: 20 }),
        fc.array(fc.integer({ min: 0, max: 100_000 }), { maxLength: 5 }),
        (inp, sizes, shippingCuts) => {
          const totals = computeTotals(inp)
          fc.pre(totals.withinLimits)
          const order = stored(totals)
          let paidBack = 0
          order.lines.forEach((line) => {
            let refunded = 0
            let amount = 0
            let tax = 0
            for (const units of cut(line.quantity, sizes)) {
              const part = lineRefund({ ...line, refundedQuantity: refunded }, units)
              expect(part.amountCents).toBeGreaterThanOrEqual(0)
              expect(part.taxCents).toBeGreaterThanOrEqual(0)
              amount += part.amountCents
              tax += part.taxCents
              refunded += units
            }
            expect(amount).toBe(line.totalCents)
            expect(tax).toBe(line.taxCents)
            paidBack += amount
          })
          // The shipping in chunks (each at most what is left), then the rest.
          let shippingRefunded = 0
          let shippingTax = 0
          for (const chunk of [...shippingCuts, Number.MAX_SAFE_INTEGER]) {
            const cents = Math.min(chunk, order.shippingCharged - shippingRefunded)
            shippingTax += shippingRefundTax({ chargedCents: order.shippingCharged, taxCents: order.shippingTax, refundedCents: shippingRefunded }, cents)
            shippingRefunded += cents
          }
          expect(shippingRefunded + paidBack).toBe(totals.totalCents)
          expect(shippingTax).toBe(order.shippingTax)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('a refund never moves a discount onto the remaining lines: each line is priced from its own total, whatever else was refunded', () => {
    fc.assert(
      fc.property(input, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 4 })), { maxLength: 30 }), (inp, steps) => {
        const totals = computeTotals(inp)
        fc.pre(totals.withinLimits)
        const order = stored(totals)
        const refunded = order.lines.map(() => 0)
        const paid = order.lines.map(() => 0)
        for (const [pick, want] of steps) {
          const index = pick % order.lines.length
          const line = order.lines[index] as (typeof order.lines)[number]
          const units = Math.min(want, line.quantity - (refunded[index] as number))
          if (units === 0) continue
          const amounts = refundAmounts({
            lines: [{ ...line, refundedQuantity: refunded[index] as number, units }],
            shipping: { chargedCents: order.shippingCharged, taxCents: order.shippingTax, refundedCents: 0 },
            shippingCents: 0,
            refundableCents: Number.MAX_SAFE_INTEGER,
          })
          // Within a cent of the line's own price per unit (its share of the discount already in it).
          const exact = (line.totalCents * units) / line.quantity
          expect(Math.abs((amounts.amountCents as number) - exact)).toBeLessThan(1 + 1e-9)
          paid[index] = (paid[index] as number) + amounts.amountCents
          refunded[index] = (refunded[index] as number) + units
        }
        // What each line has left to give back is its own total less its own refunds: no other line's refund moved
        // anything onto it.
        order.lines.forEach((line, index) => {
          const rest = lineRefund({ ...line, refundedQuantity: refunded[index] as number }, line.quantity - (refunded[index] as number))
          expect((paid[index] as number) + rest.amountCents).toBe(line.totalCents)
        })
      }),
      { numRuns: 300 },
    )
  })

  it('without an amount, the parts are capped at what is refundable; with one, it is exactly that amount', () => {
    const line = { quantity: 3, totalCents: 1000, taxCents: 174, refundedQuantity: 0, units: 3 }
    const shipping = { chargedCents: 490, taxCents: 85, refundedCents: 0 }
    expect(refundAmounts({ lines: [line], shipping, shippingCents: 490, refundableCents: 1200 }).amountCents).toBe(1200)
    expect(refundAmounts({ lines: [line], shipping, shippingCents: 490, refundableCents: 5000 })).toMatchObject({ amountCents: 1490, taxCents: 259 })
    expect(refundAmounts({ lines: [line], shipping, shippingCents: 0, refundableCents: 5000, amountCents: 700 }).amountCents).toBe(700)
    // A(n) = round(L × n / q): 1000 over 3 units is 333, 334 (667), 333 (1000).
    expect([1, 1, 1].map((_, i) => lineRefund({ ...line, refundedQuantity: i }, 1).amountCents)).toEqual([333, 334, 333])
  })
})
