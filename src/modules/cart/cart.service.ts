import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { isForeignKeyViolation } from '../../shared/db-errors.js'
import { AppError } from '../../shared/errors.js'
import { centsToAmount, withinMaxAmount } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { computeTotals } from '../totals/totals.js'
import * as repo from './cart.repository.js'
import type { AddToCartInput, CartItem, CartView } from './cart.schemas.js'

type Db = Kysely<Database>

function cartItemRowToCartItem(row: repo.CartItemRecord): CartItem {
  return { id: row.id, userId: row.user_id, productId: row.product_id, variantId: row.variant_id, quantity: row.quantity, createdAt: row.created_at }
}

/** The caller's cart; a user without lines has an empty cart (it exists on demand, no row needed). */
export async function getCart(db: Db, userId: number): Promise<CartView> {
  const rows = await repo.listCartLines(db, userId)
  // The same function as checkout's: what the cart shows is what the order charges (before shipping).
  const totals = computeTotals({ lines: rows.map((row) => ({ unitCents: row.price_cents, quantity: row.quantity })) })
  const items = rows.map((row, i) => ({
    id: row.id,
    productId: row.product_id,
    variantId: row.variant_id,
    variantTitle: row.title,
    sku: row.sku,
    available: row.status === 'active',
    quantity: row.quantity,
    subtotal: centsToAmount(totals.lines[i]!.subtotalCents),
    product: { id: row.product_id, name: row.name, price: centsToAmount(row.price_cents), imageUrl: row.image_url },
  }))
  return { items, total: centsToAmount(totals.subtotalCents) }
}

/** Adds to the cart; `created` tells a new line (201) from quantities combined into an existing one (200). */
export async function addToCart(db: Db, userId: number, input: AddToCartInput): Promise<{ item: CartItem; created: boolean }> {
  let row: repo.CartItemRecord | undefined
  try {
    row = await repo.upsertCartLine(db, { userId, productId: input.productId, variantId: input.variantId, quantity: input.quantity, now: nowIso() })
  } catch (error) {
    // The product was deleted between the statement's read and its insert.
    if (isForeignKeyViolation(error)) throw new AppError(404, 'productNotFound')
    throw error
  }
  if (!row) {
    // Why nothing was written: a product hidden or gone, a variant to name, a variant of another product, or the rules.
    const product = await repo.findProductForCart(db, input.productId)
    if (!product || product.status !== 'active') throw new AppError(404, 'productNotFound')
    if (input.variantId === undefined && Number(product.variants) > 1) throw new AppError(422, 'variantRequired')
    const variant = input.variantId !== undefined ? await repo.findVariantForCart(db, input.variantId) : await repo.findOnlyVariant(db, input.productId)
    if (!variant || variant.product_id !== input.productId) throw new AppError(404, 'variantNotFound')
    const line = await repo.findCartLineOfVariant(db, userId, variant.id)
    const quantity = (line?.quantity ?? 0) + input.quantity
    if (quantity <= variant.stock && !withinMaxAmount(variant.price_cents, quantity)) throw new AppError(409, 'amountTooLarge')
    throw new AppError(409, 'insufficientStock')
  }
  // A combined line holds more than this request added (an existing line has at least 1), so equality means new.
  return { item: cartItemRowToCartItem(row), created: row.quantity === input.quantity }
}

export async function updateCartItem(db: Db, userId: number, id: number, quantity: number): Promise<CartItem> {
  const row = await repo.updateCartLineQuantity(db, { id, userId, quantity, now: nowIso() })
  if (row) return cartItemRowToCartItem(row)
  const line = await repo.findCartLine(db, id, userId)
  if (!line) throw new AppError(404, 'cartItemNotFound')
  const variant = await repo.findVariantForCart(db, line.variant_id)
  if (variant && quantity <= variant.stock && !withinMaxAmount(variant.price_cents, quantity)) {
    throw new AppError(409, 'amountTooLarge')
  }
  throw new AppError(409, 'insufficientStock')
}

export async function removeCartItem(db: Db, userId: number, id: number): Promise<void> {
  if (!(await repo.deleteCartLine(db, id, userId))) throw new AppError(404, 'cartItemNotFound')
}

/** Empties the caller's cart; an already empty cart is fine. */
export async function clearCart(db: Db, userId: number): Promise<void> {
  await repo.deleteCartLines(db, userId)
}
