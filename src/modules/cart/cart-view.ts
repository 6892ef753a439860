import type { Kysely } from 'kysely'
import type { Database, ShippingMethodRow } from '../../db/database.js'
import { centsToAmount } from '../../shared/money.js'
import type { AddressSnapshot } from '../addresses/addresses.schemas.js'
import { findOwnAddressSnapshot } from '../addresses/addresses.service.js'
import { findActiveShippingMethod } from '../shipping/shipping.service.js'
import { type TaxRateLookup, taxRatesFor } from '../taxes/taxes.service.js'
import { computeTotals, type Totals, type TotalsDiscount } from '../totals/totals.js'
import { type CheckedCode, type CodeEvaluation, checkCode, type DiscountCustomer, type DiscountLine, evaluateCode } from '../discounts/discounts.service.js'
import { getUser } from '../users/users.service.js'
import { type CartRecord, type CartRef, type CartSettings, readCart, readUserLinesWithCode, setCartDiscountCode, setUserCartCode } from './cart.service.js'
import type { CartView } from './cart.schemas.js'

type Db = Kysely<Database>

/** The shop's pricing settings the cart view and checkout share. */
export interface PricingSettings {
  currency: string
  pricesIncludeTax: boolean
  /** The tax country without a shipping address. */
  shopCountry: string
  /** How the rates are read: taxRatesFor by default; app.ts gives the cached form. */
  taxRates?: TaxRateLookup | undefined
}

/** The cart's shipping address: one of the user's book (it may since have been deleted: then none) or the inline one. */
export async function cartAddress(db: Db, ref: CartRef, cart: CartRecord | undefined): Promise<AddressSnapshot | undefined> {
  if (!cart) return undefined
  if (cart.shipping_address_id !== null && ref.userId !== undefined) return findOwnAddressSnapshot(db, ref.userId, cart.shipping_address_id)
  return cart.shipping_address !== null ? (JSON.parse(cart.shipping_address) as AddressSnapshot) : undefined
}

/** The cart's shipping method while it is active (a method since deactivated is shown as none). */
export async function cartMethod(db: Db, cart: CartRecord | undefined): Promise<ShippingMethodRow | undefined> {
  return cart?.shipping_method_id != null ? findActiveShippingMethod(db, cart.shipping_method_id) : undefined
}

/**
 * Who the cart's code counts for: the user (and their account's e-mail), or the guest cart's e-mail. Read only when
 * a code asks (one with a per-customer limit).
 */
export function cartCustomer(db: Db, ref: CartRef, cart: CartRecord | undefined): () => Promise<DiscountCustomer> {
  const { userId } = ref
  if (userId !== undefined) return async () => ({ userId, email: (await getUser(db, userId)).email })
  return async () => ({ userId: null, email: cart?.email ?? null })
}

/** The cart's lines as a discount code sees them. */
export function discountLines(lines: ReadonlyArray<{ product_id: number; category_id: number | null; price_cents: number; quantity: number }>): DiscountLine[] {
  return lines.map((line) => ({ productId: line.product_id, categoryId: line.category_id, subtotalCents: line.price_cents * line.quantity }))
}

/**
 * POST /cart/discount: checks the code against the cart now (the first failed rule answers: 404 unknown or
 * inactive, then the 409s), then keeps it on the cart, replacing any other. Checkout checks it again.
 */
export async function applyCartDiscount(db: Db, ref: CartRef, settings: CartSettings, pricing: PricingSettings, code: string): Promise<CartView> {
  // A customer's cart row comes back from the write that keeps the code (a statement less), and their lines come
  // with the code's row (another); a guest's, whose e-mail a per-customer limit counts, is read first.
  const { userId } = ref
  const {
    cart: guestCart,
    lines,
    codeRow,
  } = userId === undefined ? { ...(await readCart(db, ref)), codeRow: undefined } : { cart: undefined, ...(await readUserLinesWithCode(db, userId, code)) }
  const checked = await checkCode(db, {
    code,
    row: codeRow,
    now: new Date(),
    customer: cartCustomer(db, ref, guestCart),
    lines: discountLines(lines),
    currency: pricing.currency,
  })
  let cart: CartRecord | undefined
  if (userId !== undefined) cart = await setUserCartCode(db, userId, checked.code.code)
  else {
    await setCartDiscountCode(db, ref, settings, checked.code.code, guestCart?.id)
    cart = guestCart && { ...guestCart, discount_code: checked.code.code }
  }
  // The answer is the cart with its new code, and the check just made (no second read of either).
  const evaluation: CodeEvaluation = { applicable: true, ...checked }
  return getCartView(db, ref, pricing, { code: checked.code.code, lines: linesKey(lines), evaluation }, cart && { cart, lines })
}

/** What a code's check depends on in a cart: each line's id, variant and quantity. */
function linesKey(lines: ReadonlyArray<{ id: number; variant_id: number; quantity: number }>): string {
  return lines.map((line) => `${line.id}:${line.variant_id}:${line.quantity}`).join(',')
}

/** A line as the price of a cart needs it. */
export interface PricedLine {
  product_id: number
  category_id: number | null
  tax_class: string
  price_cents: number
  quantity: number
}

/**
 * The one way a cart is priced, for its view and for checkout: the tax rates of its lines' and its method's
 * classes in the tax country (the shipping address's, else SHOP_COUNTRY; a region's rate beats the country's),
 * the code when it applies, and the totals function.
 */
export async function priceCart(
  db: Db,
  pricing: PricingSettings,
  input: { lines: readonly PricedLine[]; method: ShippingMethodRow | undefined; address: AddressSnapshot | undefined; code: CheckedCode | undefined },
): Promise<{ totals: Totals; taxCountry: string }> {
  const taxCountry = input.address?.country ?? pricing.shopCountry
  const classes = new Set(input.lines.map((line) => line.tax_class))
  if (input.method) classes.add(input.method.tax_class)
  const rates = await (pricing.taxRates ?? taxRatesFor)(db, { country: taxCountry, region: input.address?.region }, classes)
  const code = input.code
  const totals = computeTotals({
    lines: input.lines.map((line, i) => ({
      unitCents: line.price_cents,
      quantity: line.quantity,
      eligible: code ? code.eligible[i] === true : false,
      tax: rates.get(line.tax_class) ?? null,
    })),
    shipping: input.method
      ? { priceCents: input.method.price_cents, freeOverCents: input.method.free_over_cents, tax: rates.get(input.method.tax_class) ?? null }
      : null,
    discount: code ? totalsDiscount(code) : null,
    pricesIncludeTax: pricing.pricesIncludeTax,
  })
  return { totals, taxCountry }
}

function totalsDiscount(code: CheckedCode): TotalsDiscount {
  if (code.type === 'percent') return { type: 'percent', percent: code.storedValue ?? 0 }
  if (code.type === 'fixed') return { type: 'fixed', valueCents: code.storedValue ?? 0 }
  return { type: 'free_shipping' }
}

/** Tax lines as the API shows them: amounts and the rate (a percentage) as numbers. */
export function taxLinesView(totals: Totals) {
  return totals.taxLines.map((line) => ({
    name: line.name,
    taxClass: line.taxClass,
    rate: centsToAmount(line.rate),
    base: centsToAmount(line.baseCents),
    amount: centsToAmount(line.amountCents),
  }))
}

/**
 * GET /cart: the lines and the full breakdown, from the totals function with the cart's method, code and tax
 * country, so what the customer sees is what checkout charges. `checked`: a code's check the caller just made (used
 * while the lines are the same); `read`: the cart and its lines as the caller just read and wrote them.
 */
export async function getCartView(
  db: Db,
  ref: CartRef,
  pricing: PricingSettings,
  checked?: { code: string; lines: string; evaluation: CodeEvaluation },
  read?: Awaited<ReturnType<typeof readCart>>,
): Promise<CartView> {
  const { cart, lines } = read ?? (await readCart(db, ref))
  const [address, method] = cart ? await Promise.all([cartAddress(db, ref, cart), cartMethod(db, cart)]) : [undefined, undefined]
  const evaluation =
    cart?.discount_code == null
      ? undefined
      : checked !== undefined && checked.code === cart.discount_code && checked.lines === linesKey(lines)
        ? checked.evaluation
        : await evaluateCode(db, {
            code: cart.discount_code,
            now: new Date(),
            customer: cartCustomer(db, ref, cart),
            lines: discountLines(lines),
            currency: pricing.currency,
          })
  const { totals, taxCountry } = await priceCart(db, pricing, { lines, method, address, code: evaluation?.applicable ? evaluation : undefined })
  const items = lines.map((row, i) => {
    const line = totals.lines[i]!
    return {
      id: row.id,
      productId: row.product_id,
      variantId: row.variant_id,
      variantTitle: row.title,
      sku: row.sku,
      options: row.options,
      available: row.status === 'active',
      quantity: row.quantity,
      subtotal: centsToAmount(line.subtotalCents),
      discount: centsToAmount(line.discountCents),
      taxRate: centsToAmount(line.taxRate),
      tax: centsToAmount(line.taxCents),
      total: centsToAmount(line.totalCents),
      product: { id: row.product_id, name: row.name, price: centsToAmount(row.price_cents), imageUrl: row.image_url },
    }
  })
  return {
    items,
    subtotal: centsToAmount(totals.subtotalCents),
    discountTotal: centsToAmount(totals.discountTotalCents),
    shippingTotal: centsToAmount(totals.shippingTotalCents),
    taxTotal: centsToAmount(totals.taxTotalCents),
    total: centsToAmount(totals.totalCents),
    currency: pricing.currency,
    pricesIncludeTax: pricing.pricesIncludeTax,
    taxCountry,
    email: cart?.email ?? null,
    shippingAddress: address ?? null,
    shippingMethod: method ? { id: method.id, name: method.name, price: centsToAmount(method.price_cents) } : null,
    note: cart?.note ?? null,
    discount: cart?.discount_code != null && evaluation ? discountView(cart.discount_code, evaluation) : null,
    taxLines: taxLinesView(totals),
  }
}

/** The cart's code as the view shows it: `{code, type, value, applicable, reason}` (type and value null once the code is gone). */
function discountView(typed: string, evaluation: CodeEvaluation) {
  const code = evaluation.code
  return {
    code: code?.code ?? typed,
    type: code?.type ?? null,
    value: code?.value ?? null,
    applicable: evaluation.applicable,
    reason: evaluation.applicable ? null : evaluation.reason,
  }
}
