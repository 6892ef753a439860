import { createHash, randomBytes } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { isForeignKeyViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import { withinMaxAmount } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { addressInputToSnapshot, findOwnAddressSnapshot } from '../addresses/addresses.service.js'
import { findActiveShippingMethod } from '../shipping/shipping.service.js'
import * as repo from './cart.repository.js'
import { isPostgres } from '../../db/dialect.js'
import type { AddToCartInput, CartItem, UpdateCartInput } from './cart.schemas.js'

type Db = Kysely<Database>

export type CartRef = repo.CartRef
export type CartRecord = repo.CartRecord

/** What the cart module needs besides its database; app.ts builds it from the configuration. */
export interface CartSettings {
  /** A guest cart lives this long after its last change. */
  guestCartTtlMs: number
  /** false: POST /carts (and a guest's checkout) are refused. */
  guestCheckout: boolean
}

/** The defaults of GUEST_CART_TTL and GUEST_CHECKOUT. */
export const defaultCartSettings: CartSettings = { guestCartTtlMs: 30 * 24 * 60 * 60 * 1000, guestCheckout: true }

const TOKEN_PREFIX = 'ct_'
/** `ct_` and 43 base64url characters (32 random bytes). */
const TOKEN_PATTERN = /^ct_[A-Za-z0-9_-]{43}$/

/** The stored form of a cart token: its SHA-256, so a copy of the database opens no cart. */
export function hashCartToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

function expiryFrom(now: string, settings: CartSettings): string {
  return new Date(Date.parse(now) + settings.guestCartTtlMs).toISOString()
}

/** POST /carts: a new guest cart; the token is shown once, only its hash is kept. */
export async function createGuestCart(db: Db, settings: CartSettings): Promise<{ cartToken: string; expiresAt: string }> {
  if (!settings.guestCheckout) throw new AppError(403, 'guestCheckoutDisabled')
  const cartToken = TOKEN_PREFIX + randomBytes(32).toString('base64url')
  const now = nowIso()
  const expiresAt = expiryFrom(now, settings)
  await repo.insertGuestCart(db, { tokenHash: hashCartToken(cartToken), now, expiresAt })
  return { cartToken, expiresAt }
}

/** The guest cart an `X-Cart-Token` opens; 404 when the token is malformed, unknown or expired. */
export async function findGuestCartId(db: Db, token: string): Promise<number> {
  const cart = TOKEN_PATTERN.test(token) ? await repo.findGuestCart(db, hashCartToken(token), nowIso()) : undefined
  if (!cart) throw new AppError(404, 'cartNotFound')
  return cart.id
}

function cartItemRowToCartItem(row: repo.CartItemRecord, variant: repo.LineVariant | undefined): CartItem {
  return {
    id: row.id,
    cartId: row.cart_id,
    userId: row.user_id,
    productId: row.product_id,
    variantId: row.variant_id,
    sku: variant?.sku ?? null,
    variantTitle: variant?.title ?? null,
    options: variant?.options ?? [],
    quantity: row.quantity,
    createdAt: row.created_at,
  }
}

/** A line's answer: the row and its variant's SKU, title and option values. */
async function lineAnswer(db: Db, row: repo.CartItemRecord): Promise<CartItem> {
  return cartItemRowToCartItem(row, await repo.findLineVariant(db, row.variant_id))
}

/** The cart a change writes to: a guest cart (its life starts again) or the user's, made on first use. */
async function cartIdForChange(db: Db, ref: CartRef, now: string): Promise<number> {
  return ref.cartId ?? (await repo.ensureUserCart(db, ref.userId, now))
}

async function touched(db: Db, ref: CartRef, settings: CartSettings, now: string): Promise<void> {
  if (ref.cartId !== undefined) await repo.touchCart(db, ref.cartId, now, expiryFrom(now, settings))
}

/** Adds to the cart; `created` tells a new line (201) from quantities combined into an existing one (200). */
export async function addToCart(db: Db, ref: CartRef, settings: CartSettings, input: AddToCartInput): Promise<{ item: CartItem; created: boolean }> {
  if (input.productId === undefined && input.variantId === undefined) throw new ValidationError(messages.variantIdMissing, 'variantId')
  const now = nowIso()
  const productId = input.productId ?? (await repo.findVariantForCart(db, input.variantId!))?.product_id
  if (productId === undefined) throw new AppError(404, 'variantNotFound')
  let row: repo.AddedCartLine | undefined
  try {
    const line = { userId: ref.userId ?? null, productId, variantId: input.variantId, quantity: input.quantity, now }
    // A customer's cart row is found by the statement itself (a read less). When it writes nothing, the cart row is
    // made if missing (a racing first add may have made it since) and the line tried again: the refusals below
    // then read the line as it is.
    if (ref.userId !== undefined) row = await repo.upsertCartLine(db, { ...line, cart: { ofUser: ref.userId } })
    row ??= await repo.upsertCartLine(db, { ...line, cart: { id: await cartIdForChange(db, ref, now) } })
  } catch (error) {
    // The product was deleted between the statement's read and its insert.
    if (isForeignKeyViolation(error)) throw new AppError(404, 'productNotFound')
    throw error
  }
  if (!row) {
    // Why nothing was written: a variant of another product, a product hidden or gone, a variant to name, or the rules.
    const named = input.variantId !== undefined ? await repo.findVariantForCart(db, input.variantId) : undefined
    if (named && named.product_id !== productId) throw new AppError(422, 'variantOfAnotherProduct')
    const product = await repo.findProductForCart(db, productId)
    if (!product || product.status !== 'active') throw new AppError(404, 'productNotFound')
    if (input.variantId === undefined && Number(product.variants) > 1) throw new AppError(422, 'variantRequired')
    const variant = named ?? (input.variantId === undefined ? await repo.findOnlyVariant(db, productId) : undefined)
    if (!variant) throw new AppError(404, 'variantNotFound')
    const line = await repo.findCartLineOfVariant(db, ref, variant.id)
    const quantity = (line?.quantity ?? 0) + input.quantity
    if (quantity <= variant.stock && !withinMaxAmount(variant.price_cents, quantity)) throw new AppError(409, 'amountTooLarge')
    throw new AppError(409, 'insufficientStock')
  }
  await touched(db, ref, settings, now)
  // A combined line holds more than this request added (an existing line has at least 1), so equality means new.
  return { item: cartItemRowToCartItem(row, await repo.withOptions(db, row.variant_id, row)), created: row.quantity === input.quantity }
}

export async function updateCartItem(db: Db, ref: CartRef, settings: CartSettings, id: number, quantity: number): Promise<CartItem> {
  const now = nowIso()
  const row = await repo.updateCartLineQuantity(db, { id, ref, quantity, now })
  if (row) {
    await touched(db, ref, settings, now)
    return lineAnswer(db, row)
  }
  const line = await repo.findCartLine(db, id, ref)
  if (!line) throw new AppError(404, 'cartItemNotFound')
  const variant = await repo.findVariantForCart(db, line.variant_id)
  if (variant && quantity <= variant.stock && !withinMaxAmount(variant.price_cents, quantity)) {
    throw new AppError(409, 'amountTooLarge')
  }
  throw new AppError(409, 'insufficientStock')
}

export async function removeCartItem(db: Db, ref: CartRef, settings: CartSettings, id: number): Promise<void> {
  if (!(await repo.deleteCartLine(db, id, ref))) throw new AppError(404, 'cartItemNotFound')
  await touched(db, ref, settings, nowIso())
}

/** Empties the caller's cart (its lines; the checkout choices stay); an already empty cart is fine. */
export async function clearCart(db: Db, ref: CartRef, settings: CartSettings): Promise<void> {
  await repo.deleteCartLines(db, ref)
  await touched(db, ref, settings, nowIso())
}

/**
 * PATCH /cart: the checkout choices kept on the cart (`null` clears one). The same rules as checkout's body: an
 * address of the book or an inline one, not both (422); the user's own address and an active method (404). A
 * guest names no address of a book (404) and gives the order's e-mail; a user's orders go to the account's
 * e-mail (409).
 */
export async function updateCartChoices(db: Db, ref: CartRef, settings: CartSettings, input: UpdateCartInput): Promise<void> {
  if (input.shippingAddressId != null && input.shippingAddress != null) throw new ValidationError(messages.addressIdAndInline, 'shippingAddressId')
  if (input.email !== undefined && ref.cartId === undefined) throw new AppError(409, 'cartEmailIsAccount')
  const change: repo.CartChoices = {}
  if (input.shippingAddressId !== undefined) {
    if (input.shippingAddressId !== null) {
      if (ref.userId === undefined || !(await findOwnAddressSnapshot(db, ref.userId, input.shippingAddressId))) throw new AppError(404, 'addressNotFound')
      change.shipping_address = null
    }
    change.shipping_address_id = input.shippingAddressId
  }
  if (input.shippingAddress !== undefined) {
    if (input.shippingAddress !== null) {
      change.shipping_address = JSON.stringify(addressInputToSnapshot(input.shippingAddress))
      change.shipping_address_id = null
    } else {
      change.shipping_address = null
    }
  }
  if (input.shippingMethodId !== undefined) {
    if (input.shippingMethodId !== null && !(await findActiveShippingMethod(db, input.shippingMethodId))) throw new AppError(404, 'shippingMethodNotFound')
    change.shipping_method_id = input.shippingMethodId
  }
  if (input.email !== undefined) change.email = input.email === null ? null : input.email.toLowerCase()
  if (input.note !== undefined) change.note = input.note
  const now = nowIso()
  const cartId = await cartIdForChange(db, ref, now)
  await repo.updateCart(db, cartId, { ...change, updated_at: now, ...(ref.cartId !== undefined ? { expires_at: expiryFrom(now, settings) } : {}) })
}

/** Sets (a code string) or removes (null) the cart's discount code; the caller checks the code first. */
export async function setCartDiscountCode(db: Db, ref: CartRef, settings: CartSettings, code: string | null, knownCartId?: number): Promise<void> {
  const now = nowIso()
  // A cart row just read needs no second statement to find (or make) it.
  const cartId = knownCartId ?? (await cartIdForChange(db, ref, now))
  await repo.updateCart(db, cartId, { discount_code: code, updated_at: now, ...(ref.cartId !== undefined ? { expires_at: expiryFrom(now, settings) } : {}) })
}

/** The cart row and its lines (product, variant, option values), oldest line first, for the cart view. */
export async function readCart(db: Db, ref: CartRef) {
  const [cart, lines] = await Promise.all([repo.findCart(db, ref), readCartLines(db, ref)])
  return { cart, lines }
}

/** The cart's lines (product, variant, option values), oldest line first. */
async function readCartLines(db: Db, ref: CartRef) {
  return withVariantOptions(db, await repo.listCartLines(db, ref))
}

/**
 * A customer's cart lines (as readCartLines) and the code `code` names, read together (`codeRow`: null
 * when there is no such code, undefined when the cart has no line and so it was not read).
 */
export async function readUserLinesWithCode(db: Db, userId: number, code: string) {
  const { lines, codeRow } = await repo.listUserLinesWithCode(db, userId, code.toLowerCase())
  return { lines: await withVariantOptions(db, lines), codeRow }
}

async function withVariantOptions<Line extends { variant_id: number; values_key: string }>(db: Db, lines: Line[]) {
  const withOptions = lines.some((line) => line.values_key !== '')
    ? await repo.optionsOfVariants(
        db,
        lines.map((line) => line.variant_id),
      )
    : undefined
  return lines.map((line) => ({ ...line, options: withOptions?.get(line.variant_id) ?? [] }))
}

/**
 * A customer's cart keeps `code`: the row as written. A code is only ever applied to lines, and lines belong to a
 * cart row, so the row exists (undefined only if it went meanwhile: the caller reads the cart again).
 */
export async function setUserCartCode(db: Db, userId: number, code: string): Promise<CartRecord | undefined> {
  return repo.setCodeOfUserCart(db, userId, code, nowIso())
}

export type CartLine = Awaited<ReturnType<typeof readCart>>['lines'][number]

/**
 * Inside checkout's transaction: the cart row and its lines, the lines deleted (they stay locked until the
 * transaction ends, so a racing change waits or finds the cart empty).
 */
export async function takeCart(db: Db, ref: CartRef, references: repo.CheckoutReferences) {
  // The row first, locked: a merge into this cart waits for the order (or the order for the merge), so no line is
  // moved into the cart while the order takes its lines.
  // A customer's row comes with the row's code (codeRow: null when the cart has none or its code is gone; undefined
  // when not read), the address and method `references` names (`chosen`), the account's name and e-mail (`account`)
  // and whether the shop ships (`ships`; each undefined when not read): one statement. On PostgreSQL the cart's
  // choices are cleared in it too (see clearCartAfterOrder).
  const clearedOnLock = ref.userId !== undefined && isPostgres(db)
  const locked =
    ref.userId === undefined
      ? { cart: await repo.lockGuestCart(db, ref.cartId), codeRow: undefined, references: undefined, account: undefined, ships: undefined }
      : clearedOnLock
        ? await repo.lockAndClearCartOfUser(db, { userId: ref.userId, now: nowIso(), ...references })
        : await repo.readCartOfUserForCheckout(db, { userId: ref.userId, ...references })
  // Oldest line first, as the cart shows them (the discount's ties go to the line added first).
  const lines = (await repo.takeCartLines(db, ref)).sort((a, b) => a.id - b.id)
  return { cart: locked?.cart, codeRow: locked?.codeRow, chosen: locked?.references, account: locked?.account, ships: locked?.ships, lines, clearedOnLock }
}

/** The lines' variants and products as pricing needs them, in the lines' order (a variant gone since is left out). */
export async function linesForPricing(db: Db, lines: ReadonlyArray<{ variant_id: number; quantity: number }>) {
  const rows = new Map(
    (
      await repo.variantsForPricing(
        db,
        lines.map((line) => line.variant_id),
      )
    ).map((row) => [row.id, row]),
  )
  return lines.flatMap((line) => {
    const row = rows.get(line.variant_id)
    return row ? [{ ...row, product_id: row.product_id, quantity: line.quantity }] : []
  })
}

/** After an order: the cart's choices are cleared (its lines went with the order); a guest cart is deleted. */
export async function clearCartAfterOrder(db: Db, ref: CartRef, taken: { cart: CartRecord | undefined; clearedOnLock: boolean }): Promise<void> {
  const { cart } = taken
  if (cart === undefined || taken.clearedOnLock) return
  if (ref.cartId !== undefined) return repo.deleteCart(db, cart.id)
  // Most carts have no choice kept: nothing to write then (a statement less per order).
  const kept = [cart.email, cart.shipping_address_id, cart.shipping_address, cart.shipping_method_id, cart.note, cart.discount_code]
  if (kept.every((value) => value === null)) return
  await repo.clearCartChoices(db, cart.id, nowIso())
}

/**
 * On login or register with `X-Cart-Token`: the guest cart's lines move into the user's cart. The same variant's
 * quantities add up, capped at the stock (a line left at 0 is dropped); never a 409. The user's own choices win;
 * the guest's fill those the user has not made. The guest cart is deleted (its token then opens nothing). A
 * malformed, unknown or expired token is ignored: a login never fails for a stale cart.
 */
export async function mergeGuestCart(db: Db, token: string, userId: number): Promise<void> {
  if (!TOKEN_PATTERN.test(token)) return
  await db.transaction().execute(async (trx) => {
    const now = nowIso()
    const guest = await repo.findGuestCart(trx, hashCartToken(token), now)
    if (!guest) return
    const guestCart = await repo.findCart(trx, { cartId: guest.id })
    // Written first (locked until the merge commits): a checkout taking this cart waits for the merge, or it for the checkout.
    const cartId = await repo.lockUserCart(trx, userId, now)
    const userCart = await repo.findCart(trx, { cartId })
    const mine = new Map((await repo.linesWithStock(trx, cartId)).map((line) => [line.variant_id, line]))
    for (const line of await repo.linesWithStock(trx, guest.id)) {
      const existing = mine.get(line.variant_id)
      const quantity = Math.min((existing?.quantity ?? 0) + line.quantity, line.stock)
      if (existing) {
        await repo.deleteLine(trx, line.id)
        if (quantity > 0) await repo.setLineQuantity(trx, existing.id, quantity, now)
        else await repo.deleteLine(trx, existing.id)
      } else if (quantity > 0) {
        await repo.moveLine(trx, line.id, { cartId, userId, quantity, now })
      } else {
        await repo.deleteLine(trx, line.id)
      }
    }
    if (guestCart && userCart) {
      const keepAddress = userCart.shipping_address_id !== null || userCart.shipping_address !== null
      await repo.updateCart(trx, cartId, {
        ...(keepAddress ? {} : { shipping_address: guestCart.shipping_address }),
        shipping_method_id: userCart.shipping_method_id ?? guestCart.shipping_method_id,
        note: userCart.note ?? guestCart.note,
        discount_code: userCart.discount_code ?? guestCart.discount_code,
        updated_at: now,
      })
    }
    await repo.deleteCart(trx, guest.id)
  })
}

/** Guest carts past their life, removed with their lines (a job; at most `limit` per call). */
export async function sweepExpiredCarts(db: Db, limit = 500): Promise<number> {
  return repo.deleteExpiredCarts(db, nowIso(), limit)
}

/** The option values of these variants (`[{name, value}]` each, in option order), for order lines' snapshots. */
export async function variantOptions(db: Db, variantIds: readonly number[]) {
  return repo.optionsOfVariants(db, variantIds)
}
