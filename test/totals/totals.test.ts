import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MAX_AMOUNT_CENTS } from '../../src/shared/money.js'
import { computeTotals, shippingCents, type TaxRate, type Totals, type TotalsInput } from '../../src/modules/totals/totals.js'

// The totals function's invariants, over generated carts (fast-check), checked against an independent BigInt
// reference of its rules, and the cases that pin its rules (the worked example of docs/taxes-discounts.md).

const line = fc.record({ unitCents: fc.integer({ min: 0, max: 10_000_000 }), quantity: fc.integer({ min: 1, max: 1000 }) })
const rate = fc.option(fc.record({ priceCents: fc.integer({ min: 0, max: 100_000 }), freeOverCents: fc.option(fc.integer({ min: 0, max: 10_000_000 })) }))

const taxRate: fc.Arbitrary<TaxRate> = fc
  .record({
    taxClass: fc.constantFrom('standard', 'reduced', 'super_reduced', 'zero'),
    rate: fc.oneof(fc.constantFrom(0, 400, 1000, 2100, 10_000), fc.integer({ min: 0, max: 10_000 })),
  })
  .map((r) => ({ ...r, name: `IVA ${r.rate / 100}%` }))
// Ordinary carts, and some near the maximum amount (their products pass 2^53: the exact slow path).
const unitCents = fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 10_000_000 }), fc.integer({ min: 0, max: 99_999_999_999_999 }))
const taxedLine = fc.record({
  unitCents,
  quantity: fc.integer({ min: 1, max: 10 }),
  eligible: fc.boolean(),
  tax: fc.option(taxRate, { nil: undefined }),
})
const discount = fc.option(
  fc.oneof(
    fc.record({ type: fc.constant('percent' as const), percent: fc.oneof(fc.constantFrom(1, 1000, 3333, 10_000), fc.integer({ min: 1, max: 10_000 })) }),
    fc.record({ type: fc.constant('fixed' as const), valueCents: fc.integer({ min: 1, max: 100_000_000 }) }),
    fc.record({ type: fc.constant('free_shipping' as const) }),
  ),
)
const input: fc.Arbitrary<TotalsInput> = fc.record({
  lines: fc.array(taxedLine, { maxLength: 30 }),
  shipping: fc.option(
    fc.record({
      priceCents: fc.integer({ min: 0, max: 9_999_999_999 }),
      freeOverCents: fc.option(fc.integer({ min: 0, max: 10_000_000 })),
      tax: fc.option(taxRate),
    }),
  ),
  discount,
  pricesIncludeTax: fc.boolean(),
})

/** round(n / d) half-up, on BigInts. */
const roundDiv = (n: bigint, d: bigint): bigint => (2n * n + d) / (2n * d)

/** The rules again, on BigInts and written plainly (sorting, arrays), to compare the function with. */
function reference(inp: TotalsInput) {
  const included = inp.pricesIncludeTax !== false
  const subtotals = inp.lines.map((l) => BigInt(l.unitCents) * BigInt(l.quantity))
  const subtotal = subtotals.reduce((a, b) => a + b, 0n)
  const E = subtotals.reduce((a, s, i) => (inp.lines[i]!.eligible === false ? a : a + s), 0n)
  let D = 0n
  const d = inp.discount
  if (d && E > 0n) {
    if (d.type === 'percent') D = roundDiv(E * BigInt(d.percent), 10_000n)
    if (d.type === 'fixed') D = BigInt(d.valueCents) < E ? BigInt(d.valueCents) : E
  }
  const shares = subtotals.map((s, i) => (inp.lines[i]!.eligible === false || D === 0n ? 0n : (D * s) / E))
  const remainders = subtotals.map((s, i) => (inp.lines[i]!.eligible === false || D === 0n ? -1n : (D * s) % E))
  let left = D - shares.reduce((a, b) => a + b, 0n)
  const order = subtotals.map((_, i) => i).sort((a, b) => (remainders[a]! === remainders[b]! ? a - b : remainders[b]! > remainders[a]! ? 1 : -1))
  for (const i of order) {
    if (left === 0n) break
    shares[i]! += 1n
    left -= 1n
  }
  const afterDiscount = Number(subtotal - D)
  const shippingTotal = BigInt(shippingCents(inp.shipping, afterDiscount))
  const shippingDiscount = d?.type === 'free_shipping' ? shippingTotal : 0n
  const tax = (amount: bigint, r: number) => roundDiv(amount * BigInt(r), included ? 10_000n + BigInt(r) : 10_000n)
  const lineTaxes = subtotals.map((s, i) => (inp.lines[i]!.tax ? tax(s - shares[i]!, inp.lines[i]!.tax.rate) : 0n))
  const shippingTax = inp.shipping?.tax ? tax(shippingTotal - shippingDiscount, inp.shipping.tax.rate) : 0n
  const taxTotal = lineTaxes.reduce((a, b) => a + b, 0n) + shippingTax
  const total = subtotal - D - shippingDiscount + shippingTotal + (included ? 0n : taxTotal)
  return { subtotal, D, shares, lineTaxes, shippingTotal, shippingDiscount, shippingTax, taxTotal, total }
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)

function expectInvariants(totals: Totals): void {
  expect(sum(totals.lines.map((l) => l.discountCents)) + totals.shippingDiscountCents).toBe(totals.discountTotalCents)
  expect(sum(totals.taxLines.map((t) => t.amountCents))).toBe(totals.taxTotalCents)
  expect(sum(totals.lines.map((l) => l.totalCents)) + totals.shippingChargedCents).toBe(totals.totalCents)
  expect(sum(totals.lines.map((l) => l.subtotalCents))).toBe(totals.subtotalCents)
  const amounts = [
    totals.subtotalCents,
    totals.linesDiscountCents,
    totals.shippingTotalCents,
    totals.shippingDiscountCents,
    totals.discountTotalCents,
    totals.shippingTaxCents,
    totals.taxTotalCents,
    totals.shippingChargedCents,
    totals.totalCents,
    ...totals.lines.flatMap((l) => [l.subtotalCents, l.discountCents, l.taxCents, l.totalCents]),
    ...totals.taxLines.flatMap((t) => [t.baseCents, t.amountCents]),
  ]
  for (const value of amounts) expect(Number.isSafeInteger(value) && value >= 0, String(value)).toBe(true)
  for (const l of totals.lines) expect(l.discountCents).toBeLessThanOrEqual(l.subtotalCents)
  for (let i = 1; i < totals.taxLines.length; i++) expect(totals.taxLines[i - 1]!.rate).toBeGreaterThanOrEqual(totals.taxLines[i]!.rate)
}

describe('computeTotals', () => {
  it('Σ line totals = subtotal, subtotal + shipping = total, every line = unit × quantity, nothing negative', () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 50 }), rate, (lines, shipping) => {
        const totals = computeTotals({ lines, shipping })
        expect(totals.lines.reduce((sum, l) => sum + l.totalCents, 0)).toBe(totals.subtotalCents)
        expect(totals.subtotalCents + totals.shippingTotalCents).toBe(totals.totalCents)
        totals.lines.forEach((l, i) => expect(l.totalCents).toBe(lines[i]!.unitCents * lines[i]!.quantity))
        for (const value of [totals.subtotalCents, totals.shippingTotalCents, totals.totalCents, ...totals.lines.map((l) => l.totalCents)]) {
          expect(Number.isSafeInteger(value) && value >= 0).toBe(true)
        }
        expect(totals.withinLimits).toBe(totals.totalCents <= MAX_AMOUNT_CENTS)
      }),
    )
  })

  it('with codes, rates and both tax modes: the invariants hold and every figure is the rules’ (a BigInt reference)', () => {
    fc.assert(
      fc.property(input, (inp) => {
        const totals = computeTotals(inp)
        const ref = reference(inp)
        expect(totals.withinLimits).toBe(ref.subtotal <= BigInt(MAX_AMOUNT_CENTS) && ref.total <= BigInt(MAX_AMOUNT_CENTS))
        if (!totals.withinLimits) return
        expectInvariants(totals)
        expect(totals.lines.map((l) => BigInt(l.discountCents))).toEqual(ref.shares)
        expect(totals.lines.map((l) => BigInt(l.taxCents))).toEqual(ref.lineTaxes)
        expect(BigInt(totals.linesDiscountCents)).toBe(ref.D)
        expect([totals.shippingTotalCents, totals.shippingDiscountCents, totals.shippingTaxCents, totals.taxTotalCents, totals.totalCents].map(BigInt)).toEqual(
          [ref.shippingTotal, ref.shippingDiscount, ref.shippingTax, ref.taxTotal, ref.total],
        )
        inp.lines.forEach((l, i) => {
          if (l.eligible === false) expect(totals.lines[i]!.discountCents).toBe(0)
        })
      }),
      { numRuns: 500 },
    )
  })

  it('a tax line’s base is the net amount taxed: with prices including tax its base plus its amount is what it taxed', () => {
    fc.assert(
      fc.property(input, (inp) => {
        const totals = computeTotals(inp)
        if (!totals.withinLimits) return
        const included = inp.pricesIncludeTax !== false
        for (const taxLine of totals.taxLines) {
          const same = (t: TaxRate | null | undefined) => !!t && t.taxClass === taxLine.taxClass && t.rate === taxLine.rate && t.name === taxLine.name
          let taxed = sum(totals.lines.filter((_, i) => same(inp.lines[i]!.tax)).map((l) => l.subtotalCents - l.discountCents))
          if (same(inp.shipping?.tax)) taxed += totals.shippingTotalCents - totals.shippingDiscountCents
          expect(included ? taxLine.baseCents + taxLine.amountCents : taxLine.baseCents).toBe(taxed)
        }
      }),
    )
  })

  it('a 100 % code makes every line 0, taxes included', () => {
    fc.assert(
      fc.property(input, fc.boolean(), (inp, included) => {
        const lines = inp.lines.map((l) => ({ ...l, eligible: true }))
        const totals = computeTotals({ ...inp, lines, pricesIncludeTax: included, discount: { type: 'percent', percent: 10_000 } })
        if (!totals.withinLimits) return
        for (const l of totals.lines) expect([l.discountCents, l.taxCents, l.totalCents]).toEqual([l.subtotalCents, 0, 0])
        expect(totals.totalCents).toBe(totals.shippingChargedCents)
      }),
    )
  })

  it('with no rate, tax is 0, there are no tax lines and the totals are those without taxes, in both modes', () => {
    fc.assert(
      fc.property(input, fc.boolean(), (inp, included) => {
        const lines = inp.lines.map((l) => ({ ...l, tax: null }))
        const shipping = inp.shipping ? { ...inp.shipping, tax: null } : null
        const totals = computeTotals({ ...inp, lines, shipping, pricesIncludeTax: included })
        if (!totals.withinLimits) return
        expect([totals.taxTotalCents, totals.shippingTaxCents, totals.taxLines]).toEqual([0, 0, []])
        expect(totals.totalCents).toBe(totals.subtotalCents - totals.discountTotalCents + totals.shippingTotalCents)
        for (const l of totals.lines) expect(l.totalCents).toBe(l.subtotalCents - l.discountCents)
      }),
    )
  })

  it('largest remainder: the cents left go to the largest fractional parts, ties to the earlier line', () => {
    const equal = [1, 2, 3].map(() => ({ unitCents: 100, quantity: 1 }))
    // 1.00 over three lines of 1.00: 0.33 each, the cent left to the first.
    expect(computeTotals({ lines: equal, discount: { type: 'fixed', valueCents: 100 } }).lines.map((l) => l.discountCents)).toEqual([34, 33, 33])
    // 2.00: 0.66 each and two cents left: the first two.
    expect(computeTotals({ lines: equal, discount: { type: 'fixed', valueCents: 200 } }).lines.map((l) => l.discountCents)).toEqual([67, 67, 66])
    // A larger fractional part wins over an earlier line: 0.10 over 1.00, 2.00 → 3.33 and 6.66; the cent to the second.
    const unequal = [
      { unitCents: 100, quantity: 1 },
      { unitCents: 200, quantity: 1 },
    ]
    expect(computeTotals({ lines: unequal, discount: { type: 'fixed', valueCents: 10 } }).lines.map((l) => l.discountCents)).toEqual([3, 7])
    // An ineligible line between gets nothing, and is not "the earlier line".
    const skipping = [
      { unitCents: 100, quantity: 1, eligible: false },
      { unitCents: 100, quantity: 1 },
      { unitCents: 100, quantity: 1, eligible: false },
      { unitCents: 100, quantity: 1 },
    ]
    expect(computeTotals({ lines: skipping, discount: { type: 'fixed', valueCents: 101 } }).lines.map((l) => l.discountCents)).toEqual([0, 51, 0, 50])
    // A long cart of equal lines: 0.37 over 100 lines of 0.01, a cent each to the first 37; then a short cart again.
    const long = computeTotals({ lines: Array.from({ length: 100 }, () => ({ unitCents: 1, quantity: 1 })), discount: { type: 'fixed', valueCents: 37 } })
    expect(long.lines.map((l) => l.discountCents)).toEqual([...Array<number>(37).fill(1), ...Array<number>(63).fill(0)])
    expect(computeTotals({ lines: equal, discount: { type: 'fixed', valueCents: 100 } }).lines.map((l) => l.discountCents)).toEqual([34, 33, 33])
  })

  it('percent codes round half-up; a fixed code takes at most the eligible subtotal; free shipping discounts shipping alone', () => {
    // 12.5 % of 0.04 = 0.005 → 0.01.
    expect(computeTotals({ lines: [{ unitCents: 4, quantity: 1 }], discount: { type: 'percent', percent: 1250 } }).linesDiscountCents).toBe(1)
    expect(computeTotals({ lines: [{ unitCents: 3, quantity: 1 }], discount: { type: 'percent', percent: 1250 } }).linesDiscountCents).toBe(0)
    const fixed = computeTotals({
      lines: [
        { unitCents: 500, quantity: 1 },
        { unitCents: 900, quantity: 1, eligible: false },
      ],
      discount: { type: 'fixed', valueCents: 2000 },
    })
    expect([fixed.linesDiscountCents, fixed.totalCents]).toEqual([500, 900])
    const free = computeTotals({
      lines: [{ unitCents: 1000, quantity: 1 }],
      shipping: { priceCents: 490, freeOverCents: null },
      discount: { type: 'free_shipping' },
    })
    expect([free.shippingTotalCents, free.shippingDiscountCents, free.discountTotalCents, free.totalCents]).toEqual([490, 490, 490, 1000])
  })

  it('shipping is free from its threshold of the subtotal after the discount', () => {
    const shipping = { priceCents: 490, freeOverCents: 5000 }
    const lines = [{ unitCents: 5000, quantity: 1 }]
    expect(computeTotals({ lines, shipping }).shippingTotalCents).toBe(0)
    expect(computeTotals({ lines, shipping, discount: { type: 'fixed', valueCents: 1 } }).shippingTotalCents).toBe(490)
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
    expect(totals).toMatchObject({ subtotalCents: 6007, shippingTotalCents: 0, totalCents: 6007, withinLimits: true })
    expect(computeTotals({ lines: [{ unitCents: 1999, quantity: 2 }], shipping: { priceCents: 490, freeOverCents: 5000 } }).totalCents).toBe(4488)
  })

  describe('the worked example: 2 × 19.99 standard + 5.00 reduced, code 10 %, shipping 4.90 standard (ES 21 %, 10 %)', () => {
    const standard = { taxClass: 'standard', rate: 2100, name: 'IVA 21%' }
    const reduced = { taxClass: 'reduced', rate: 1000, name: 'IVA 10%' }
    const example = (pricesIncludeTax: boolean) =>
      computeTotals({
        lines: [
          { unitCents: 1999, quantity: 2, tax: standard },
          { unitCents: 500, quantity: 1, tax: reduced },
        ],
        shipping: { priceCents: 490, freeOverCents: null, tax: standard },
        discount: { type: 'percent', percent: 1000 },
        pricesIncludeTax,
      })

    it('prices including tax: D 4.50 split 4.00 / 0.50; taxes 6.24, 0.41, shipping 0.85 (7.50); total 45.38', () => {
      const totals = example(true)
      expect(totals.linesDiscountCents).toBe(450)
      expect(totals.lines.map((l) => l.discountCents)).toEqual([400, 50])
      expect(totals.lines.map((l) => l.taxCents)).toEqual([624, 41])
      expect(totals.lines.map((l) => l.totalCents)).toEqual([3598, 450])
      expect([totals.shippingTaxCents, totals.taxTotalCents, totals.totalCents]).toEqual([85, 750, 4538])
      expect(totals.taxLines).toEqual([
        { name: 'IVA 21%', taxClass: 'standard', rate: 2100, baseCents: 3379, amountCents: 709 },
        { name: 'IVA 10%', taxClass: 'reduced', rate: 1000, baseCents: 409, amountCents: 41 },
      ])
      expectInvariants(totals)
    })

    it('prices excluding tax: taxes 7.56, 0.45, shipping 1.03; total 54.42', () => {
      const totals = example(false)
      expect(totals.lines.map((l) => l.discountCents)).toEqual([400, 50])
      expect(totals.lines.map((l) => l.taxCents)).toEqual([756, 45])
      expect([totals.shippingTaxCents, totals.taxTotalCents, totals.totalCents]).toEqual([103, 904, 5442])
      expect(totals.taxLines).toEqual([
        { name: 'IVA 21%', taxClass: 'standard', rate: 2100, baseCents: 4088, amountCents: 859 },
        { name: 'IVA 10%', taxClass: 'reduced', rate: 1000, baseCents: 450, amountCents: 45 },
      ])
      expectInvariants(totals)
    })
  })

  it('exact at the maximum amount: products past 2^53 are computed exactly (21 % of 9,999,999,999,999.99)', () => {
    const big = computeTotals({ lines: [{ unitCents: MAX_AMOUNT_CENTS, quantity: 1, tax: { taxClass: 'standard', rate: 2100, name: 'IVA 21%' } }] })
    // 999999999999999 × 21 / 121 = 173553719008264.28… → 173553719008264.
    expect(big.lines[0]!.taxCents).toBe(173_553_719_008_264)
    const split = computeTotals({
      lines: [
        { unitCents: MAX_AMOUNT_CENTS - 2, quantity: 1 },
        { unitCents: 1, quantity: 1 },
      ],
      discount: { type: 'percent', percent: 3333 },
    })
    // D = round(999999999999998 × 0.3333) = 333299999999999.33… → 333299999999999.
    expect(split.linesDiscountCents).toBe(333_299_999_999_999)
    expect(split.lines.map((l) => l.discountCents)).toEqual([333_299_999_999_999, 0])
  })

  it('past the maximum amount the totals say so (the caller answers 409)', () => {
    expect(computeTotals({ lines: [{ unitCents: MAX_AMOUNT_CENTS, quantity: 1 }] }).withinLimits).toBe(true)
    expect(computeTotals({ lines: [{ unitCents: MAX_AMOUNT_CENTS, quantity: 1 }], shipping: { priceCents: 1, freeOverCents: null } }).withinLimits).toBe(false)
    expect(computeTotals({ lines: [{ unitCents: MAX_AMOUNT_CENTS, quantity: 2 }] }).withinLimits).toBe(false)
    // Prices without tax: the tax can take the total past it.
    const tax = { taxClass: 'standard', rate: 2100, name: 'IVA 21%' }
    expect(computeTotals({ lines: [{ unitCents: MAX_AMOUNT_CENTS, quantity: 1, tax }], pricesIncludeTax: false }).withinLimits).toBe(false)
  })
})
