import type { Kysely } from 'kysely'
import type { Database, ShippingMethodRow } from '../../db/database.js'
import { centsToAmount } from '../../shared/money.js'
import type { AddressSnapshot } from '../addresses/addresses.schemas.js'
import { findOwnAddressSnapshot } from '../addresses/addresses.service.js'
import { findActiveShippingMethod } from '../shipping/shipping.service.js'
import { computeTotals } from '../totals/totals.js'
import { type CodeEvaluation, checkCode, type DiscountCustomer, type DiscountLine, evaluateCode } from '../discounts/discounts.service.js'
import { getUser } from '../users/users.service.js'
import { type CartRecord, type CartRef, type CartSettings, readCart, setCartDiscountCode } from './cart.service.js'
import type { CartView } from './cart.schemas.js'

type Db = Kysely<Database>

/** The shop's pricing settings the cart view and checkout share. */
export interface PricingSettings {
  currency: string
  pricesIncludeTax: boolean
  /** The tax country without a shipping address. */
  shopCountry: string
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

/** Who the cart's code counts for: the user (and their account's e-mail), or the guest cart's e-mail. */
export async function cartCustomer(db: Db, ref: CartRef, cart: CartRecord | undefined): Promise<DiscountCustomer> {
  if (ref.userId !== undefined) return { userId: ref.userId, email: (await getUser(db, ref.userId)).email }
  return { userId: null, email: cart?.email ?? null }
}

/** The cart's lines as a discount code sees them. */
export function discountLines(lines: ReadonlyArray<{ product_id: number; category_id: number | null; price_cents: number; quantity: number }>): DiscountLine[] {
  return lines.map((line) => ({ productId: line.product_id, categoryId: line.category_id, subtotalCents: line.price_cents * line.quantity }))
}

/**
 * POST /cart/discount: checks the code against the cart now (the first failed rule answers: 404 unknown or
 * inactive, then the 409s), then keeps it on the cart, replacing any other. Checkout checks it again.
 */
export async function applyCartDiscount(db: Db, ref: CartRef, settings: CartSettings, pricing: PricingSettings, code: string): Promise<void> {
  const { cart, lines } = await readCart(db, ref)
  const checked = await checkCode(db, {
    code,
    now: new Date(),
    customer: await cartCustomer(db, ref, cart),
    lines: discountLines(lines),
    currency: pricing.currency,
  })
  await setCartDiscountCode(db, ref, settings, checked.code.code)
}

/**
 * GET /cart: the lines and the full breakdown, from the totals function with the cart's method, code and tax
 * country, so what the customer sees is what checkout charges.
 */
export async function getCartView(db: Db, ref: CartRef, pricing: PricingSettings): Promise<CartView> {
  const { cart, lines } = await readCart(db, ref)
  const [address, method] = cart ? await Promise.all([cartAddress(db, ref, cart), cartMethod(db, cart)]) : [undefined, undefined]
  const evaluation =
    cart?.discount_code != null
      ? await evaluateCode(db, {
          code: cart.discount_code,
          now: new Date(),
          customer: await cartCustomer(db, ref, cart),
          lines: discountLines(lines),
          currency: pricing.currency,
        })
      : undefined
  const totals = computeTotals({
    lines: lines.map((row) => ({ unitCents: row.price_cents, quantity: row.quantity })),
    shipping: method ? { priceCents: method.price_cents, freeOverCents: method.free_over_cents } : null,
  })
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
      subtotal: centsToAmount(line.totalCents),
      discount: 0,
      taxRate: 0,
      tax: 0,
      total: centsToAmount(line.totalCents),
      product: { id: row.product_id, name: row.name, price: centsToAmount(row.price_cents), imageUrl: row.image_url },
    }
  })
  return {
    items,
    subtotal: centsToAmount(totals.subtotalCents),
    discountTotal: 0,
    shippingTotal: centsToAmount(totals.shippingCents),
    taxTotal: 0,
    total: centsToAmount(totals.totalCents),
    currency: pricing.currency,
    pricesIncludeTax: pricing.pricesIncludeTax,
    taxCountry: address?.country ?? pricing.shopCountry,
    email: cart?.email ?? null,
    shippingAddress: address ?? null,
    shippingMethod: method ? { id: method.id, name: method.name, price: centsToAmount(method.price_cents) } : null,
    note: cart?.note ?? null,
    discount: cart?.discount_code != null && evaluation ? discountView(cart.discount_code, evaluation) : null,
    taxLines: [],
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
