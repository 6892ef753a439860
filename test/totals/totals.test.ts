import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MAX_AMOUNT_CENTS } from '../../src/shared/money.js'
import { computeTotals, shippingCents } from '../../src/modules/totals/totals.js'

// The totals function's invariants, over generated carts (fast-check), and the cases that pin its rules.

const line = fc.record({ unitCents: fc.integer({ min: 0, max: 10_000_000 }), quantity: fc.integer({ min: 1, max: 1000 }) })
const rate = fc.option(fc.record({ priceCents: fc.integer({ min: 0, max: 100_000 }), freeOverCents: fc.option(fc.integer({ min: 0, max: 10_000_000 })) }))

describe('computeTotals', () => {
  it('Σ line totals = subtotal, subtotal + shipping = total, every line = unit × quantity, nothing negative', () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 50 }), rate, (lines, shipping) => {
        const totals = computeTotals({ lines, shipping })
        expect(totals.lines.reduce((sum, l) => sum + l.totalCents, 0)).toBe(totals.subtotalCents)
        expect(totals.subtotalCents + totals.shippingCents).toBe(totals.totalCents)
        totals.lines.forEach((l, i) => expect(l.totalCents).toBe(lines[i]!.unitCents * lines[i]!.quantity))
        for (const value of [totals.subtotalCents, totals.shippingCents, totals.totalCents, ...totals.lines.map((l) => l.totalCents)]) {
          expect(Number.isSafeInteger(value) && value >= 0).toBe(true)
        }
        expect(totals.withinLimits).toBe(totals.totalCents <= MAX_AMOUNT_CENTS)
      }),
    )
  })

  it('shipping is the method’s price, and 0 from its free-shipping threshold on', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (price, threshold, subtotal) => {
          expect(shippingCents({ priceCents: price, freeOverCents: threshold }, subtotal)).toBe(subtotal >= threshold ? 0 : price)
          expect(shippingCents({ priceCents: price, freeOverCents: null }, subtotal)).toBe(price)
          expect(shippingCents(null, subtotal)).toBe(0)
        },
      ),
    )
  })

  it('a worked cart: 3 × 19.99 + 1 × 0.10, shipping 4.90 free from 50.00', () => {
    const totals = computeTotals({
      lines: [
        { unitCents: 1999, quantity: 3 },
        { unitCents: 10, quantity: 1 },
      ],
      shipping: { priceCents: 490, freeOverCents: 5000 },
    })
    expect(totals).toMatchObject({ subtotalCents: 6007, shippingCents: 0, totalCents: 6007, withinLimits: true })
    expect(computeTotals({ lines: [{ unitCents: 1999, quantity: 2 }], shipping: { priceCents: 490, freeOverCents: 5000 } }).totalCents).toBe(4488)
  })

  it('past the maximum amount the totals say so (the caller answers 409)', () => {
    expect(computeTotals({ lines: [{ unitCents: MAX_AMOUNT_CENTS, quantity: 1 }] }).withinLimits).toBe(true)
    expect(computeTotals({ lines: [{ unitCents: MAX_AMOUNT_CENTS, quantity: 1 }], shipping: { priceCents: 1, freeOverCents: null } }).withinLimits).toBe(false)
    expect(computeTotals({ lines: [{ unitCents: MAX_AMOUNT_CENTS, quantity: 2 }] }).withinLimits).toBe(false)
  })
})
