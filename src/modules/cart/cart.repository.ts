import { type Kysely, type QueryResult, sql } from 'kysely'
import type { AddressesTable, AddressRow, Database, DiscountCodeRow, DiscountCodesTable, ShippingMethodRow, ShippingMethodsTable } from '../../db/database.js'
import { type AllColumns, parseRowJson, rowJson } from '../../db/row-json.js'
import { prepared, preparedList } from '../../db/prepared.js'
import { MAX_AMOUNT_CENTS, maxUnitCentsFor } from '../../shared/money.js'
import { isPostgres } from '../../db/dialect.js'

type Db = Kysely<Database>

const cartItemColumns = ['id', 'cart_id', 'user_id', 'product_id', 'variant_id', 'quantity', 'created_at'] as const

export type CartItemRecord = {
  id: number
  cart_id: number
  user_id: number | null
  product_id: number
  variant_id: number
  quantity: number
  created_at: string
}

/**
 * Whose lines: a user's (found by the lines' `user_id` copy, no cart row needed) or a guest cart's. A user's cart
 * id is known once a line is written (addToCart makes the cart row first).
 */
export type CartRef = { userId: number; cartId?: undefined } | { userId?: undefined; cartId: number }

// ---- carts ----

const cartColumns = [
  'id',
  'user_id',
  'email',
  'shipping_address_id',
  'shipping_address',
  'shipping_method_id',
  'note',
  'discount_code',
  'created_at',
  'updated_at',
  'expires_at',
] as const

/** A guest cart by its token's hash, while it has not expired. */
export async function findGuestCart(db: Db, tokenHash: string, now: string) {
  return (await findGuestCartStatement(db, { tokenHash, now })).rows[0]
}

const findGuestCartStatement = prepared((db, v: { tokenHash: string; now: string }) =>
  db.selectFrom('carts').select(['id', 'expires_at']).where('token_hash', '=', v.tokenHash).where('expires_at', '>', v.now),
)

export async function insertGuestCart(db: Db, cart: { tokenHash: string; now: string; expiresAt: string }): Promise<number> {
  const row = await db
    .insertInto('carts')
    .values({ token_hash: cart.tokenHash, created_at: cart.now, updated_at: cart.now, expires_at: cart.expiresAt })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

/**
 * The user's cart row, made on first use. Read first: a user's cart row exists after the first add, and a read
 * costs less than the write the upsert makes (it rewrites the row even when it exists); two first adds racing both
 * reach the upsert, which gives both the same row.
 */
export async function ensureUserCart(db: Db, userId: number, now: string): Promise<number> {
  const [found] = (await findUserCartIdStatement(db, { userId })).rows
  return found ? found.id : lockUserCart(db, userId, now)
}

/**
 * The user's cart row, made if missing, and written either way: inside a transaction the row then stays locked
 * until it ends (PostgreSQL), so a merge into the cart and a checkout taking it wait for each other.
 */
export async function lockUserCart(db: Db, userId: number, now: string): Promise<number> {
  const [row] = (await ensureUserCartStatement(db, { userId, now })).rows
  if (!row) throw new Error('insert into carts returned no row')
  return row.id
}

const findUserCartIdStatement = prepared((db, v: { userId: number }) => db.selectFrom('carts').select('id').where('user_id', '=', v.userId))

const ensureUserCartStatement = prepared((db, v: { userId: number; now: string }) =>
  db
    .insertInto('carts')
    .values({ user_id: v.userId, created_at: v.now, updated_at: v.now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ updated_at: sql`excluded.updated_at` }))
    .returning('id'),
)

/** The cart row (its checkout choices) of a user or a guest cart; undefined for a user who never used a cart. */
export async function findCart(db: Db, ref: CartRef) {
  const { rows } = ref.cartId !== undefined ? await findCartById(db, { cartId: ref.cartId }) : await findCartOfUser(db, { userId: ref.userId })
  return rows[0]
}

/**
 * A guest cart's row, locked until the transaction ends (PostgreSQL; SQLite's writer lock does it already): checkout
 * takes it first, and a merge into the cart (which writes the row first) waits for the order or the order for it.
 */
export async function lockGuestCart(db: Db, cartId: number) {
  return (await lockCartById(db, { cartId })).rows[0]
}

const lockCartById = prepared((db, v: { cartId: number }) =>
  db
    .selectFrom('carts')
    .select(cartColumns)
    .where('id', '=', v.cartId)
    .$if(isPostgres(db), (q) => q.forUpdate()),
)

/**
 * PostgreSQL, checkout: a customer's cart row locked, and its choices cleared when it kept any (the order takes
 * them), in one statement: a round trip less than locking, then clearing. Answers the row as it was, with the code it
 * holds (`codeRow`, null when that code is gone), read for checkout's check, the address and method the body
 * names (`references`), the account's name and e-mail (`account`) and whether the shop ships: each a round trip
 * less. The order's transaction rolls the clearing back if the order fails.
 */
export async function lockAndClearCartOfUser(db: Db, v: { userId: number; now: string } & CheckoutReferences) {
  const statement = v.addressId === null && v.methodId === null ? lockAndClearCartOfUserStatement : lockAndClearCartWithReferencesStatement
  return checkoutCart((await statement(db, v)).rows[0])
}

/**
 * SQLite: what `lockAndClearCartOfUser` reads, in one statement too (its choices are cleared after the order, by
 * clearCartAfterOrder: SQLite has no write inside a `WITH`). The transaction's `begin immediate` holds the
 * database's write lock already, so the read needs no lock of its own.
 */
export async function readCartOfUserForCheckout(db: Db, v: { userId: number } & CheckoutReferences) {
  const statement = v.addressId === null && v.methodId === null ? readCartOfUserStatement : readCartOfUserWithReferencesStatement
  return checkoutCart((await statement(db, v)).rows[0])
}

function checkoutCart(row: CheckoutCartRow | undefined) {
  if (!row) return undefined
  const { code_row, address_row, method_row, account_row, ships, ...cart } = row
  return {
    cart,
    codeRow: parseRowJson(code_row),
    references: { addressRow: parseRowJson(address_row), methodRow: parseRowJson(method_row) },
    account: parseRowJson(account_row) ?? undefined,
    // PostgreSQL answers a boolean, SQLite 1 or 0.
    ships: Boolean(ships),
  }
}

/**
 * The book address and the shipping method a checkout's body names (null when it names none), read with the cart
 * row: each comes back as its row, or null when it is missing, someone else's or inactive.
 */
export interface CheckoutReferences {
  addressId: number | null
  methodId: number | null
}

// Every column of the rows read beside the cart (rowJson lists them on SQLite, which has no row-to-JSON).
const discountCodeColumns = {
  id: true,
  code: true,
  type: true,
  value: true,
  min_subtotal_cents: true,
  starts_at: true,
  ends_at: true,
  usage_limit: true,
  per_customer_limit: true,
  usage_count: true,
  product_ids: true,
  category_ids: true,
  active: true,
  created_at: true,
  updated_at: true,
} satisfies AllColumns<DiscountCodesTable>
const addressColumns = {
  id: true,
  user_id: true,
  full_name: true,
  line1: true,
  line2: true,
  city: true,
  region: true,
  postal_code: true,
  country: true,
  phone: true,
  created_at: true,
  updated_at: true,
} satisfies AllColumns<AddressesTable>
export const shippingMethodColumns = {
  id: true,
  name: true,
  price_cents: true,
  countries: true,
  free_over_cents: true,
  active: true,
  tax_class: true,
  created_at: true,
  updated_at: true,
} satisfies AllColumns<ShippingMethodsTable>

/**
 * A customer's cart row with what checkout needs beside it, each read by a subquery: the row's code (`code_row`,
 * null when it has none or the code is gone), the account's name and e-mail (the order and its e-mail need them),
 * whether the shop ships (an active method: checkout asks when the order names no method), and, `withReferences`,
 * the address and method the body names. Two forms, so a plain order plans no lookup it does not need.
 */
function cartOfUserForCheckout(db: Db, v: { userId: number } & CheckoutReferences, withReferences: boolean) {
  const postgres = isPostgres(db)
  return (
    db
      .selectFrom('carts')
      .select(cartColumns)
      // Codes are ASCII: lower() folds them as the codes' unique index does.
      .select(
        sql<
          DiscountCodeRow | string | null
        >`(select ${rowJson(postgres, 'dc', discountCodeColumns)} from discount_codes dc where lower(dc.code) = lower(carts.discount_code))`.as('code_row'),
      )
      .select(
        sql<
          { name: string; email: string } | string | null
        >`(select ${rowJson(postgres, 'u', { name: true, email: true })} from (select name, email from users where id = carts.user_id) u)`.as('account_row'),
      )
      .select(sql<boolean | number>`exists (select 1 from shipping_methods where active = 1)`.as('ships'))
      .select(
        withReferences
          ? sql<
              AddressRow | string | null
            >`(select ${rowJson(postgres, 'a', addressColumns)} from addresses a where a.id = ${v.addressId} and a.user_id = ${v.userId})`.as('address_row')
          : sql<null>`null`.as('address_row'),
      )
      .select(
        withReferences
          ? sql<
              ShippingMethodRow | string | null
            >`(select ${rowJson(postgres, 'm', shippingMethodColumns)} from shipping_methods m where m.id = ${v.methodId} and m.active = 1)`.as('method_row')
          : sql<null>`null`.as('method_row'),
      )
      .where('user_id', '=', v.userId)
  )
}

type CheckoutCartRow = Awaited<ReturnType<ReturnType<typeof cartOfUserForCheckout>['execute']>>[number]

const readCartOfUserStatement = prepared((db, v: { userId: number } & CheckoutReferences) => cartOfUserForCheckout(db, v, false))
const readCartOfUserWithReferencesStatement = prepared((db, v: { userId: number } & CheckoutReferences) => cartOfUserForCheckout(db, v, true))
const lockAndClearCartOfUserStatement = prepared(lockAndClearCartOfUserQuery(false))
const lockAndClearCartWithReferencesStatement = prepared(lockAndClearCartOfUserQuery(true))

function lockAndClearCartOfUserQuery(withReferences: boolean) {
  return (db: Kysely<Database>, v: { userId: number; now: string } & CheckoutReferences) =>
    db
      .with('old', () => cartOfUserForCheckout(db, v, withReferences).forUpdate())
      // A data-modifying WITH runs whether or not the query reads it; most carts keep no choice and are not written.
      .with('cleared', (qb) =>
        qb
          .updateTable('carts')
          .from('old')
          .set(clearedChoices(v.now))
          .whereRef('carts.id', '=', 'old.id')
          .where((eb) =>
            eb.or([
              eb('old.email', 'is not', null),
              eb('old.shipping_address_id', 'is not', null),
              eb('old.shipping_address', 'is not', null),
              eb('old.shipping_method_id', 'is not', null),
              eb('old.note', 'is not', null),
              eb('old.discount_code', 'is not', null),
            ]),
          ),
      )
      .selectFrom('old')
      .selectAll()
}

// Compiled once: the cart view and checkout read the cart row on every call.
const findCartById = prepared((db, v: { cartId: number }) => db.selectFrom('carts').select(cartColumns).where('id', '=', v.cartId))
const findCartOfUser = prepared((db, v: { userId: number }) => db.selectFrom('carts').select(cartColumns).where('user_id', '=', v.userId))

export type CartRecord = NonNullable<Awaited<ReturnType<typeof findCart>>>

/** Marks a change: a guest cart lives GUEST_CART_TTL after its last change. */
export async function touchCart(db: Db, cartId: number, now: string, expiresAt: string | null): Promise<void> {
  await touchCartStatement(db, { cartId, now, expiresAt })
}

const touchCartStatement = prepared((db, v: { cartId: number; now: string; expiresAt: string | null }) =>
  db
    .updateTable('carts')
    .set({ updated_at: v.now, expires_at: sql<string | null>`coalesce(${v.expiresAt}, expires_at)` })
    .where('id', '=', v.cartId),
)

export type CartChoices = Partial<{
  email: string | null
  shipping_address_id: number | null
  shipping_address: string | null
  shipping_method_id: number | null
  note: string | null
  discount_code: string | null
}>

export async function updateCart(db: Db, cartId: number, change: CartChoices & { updated_at: string; expires_at?: string }): Promise<void> {
  await db.updateTable('carts').set(change).where('id', '=', cartId).execute()
}

/** After an order: the cart's choices (e-mail, address, method, note, code) are cleared; its lines went with the order. */
export async function clearCartChoices(db: Db, cartId: number, now: string): Promise<void> {
  await clearCartChoicesStatement(db, { cartId, now })
}

// Compiled once: every order from a cart with a choice kept (a code, an address) clears it.
const clearCartChoicesStatement = prepared((db, v: { cartId: number; now: string }) =>
  db.updateTable('carts').set(clearedChoices(v.now)).where('id', '=', v.cartId),
)

/** A cart's choices as an order leaves them: all cleared (both databases' clearing writes this). */
function clearedChoices(now: string) {
  return { email: null, shipping_address_id: null, shipping_address: null, shipping_method_id: null, note: null, discount_code: null, updated_at: now }
}

/** A customer's cart keeps a code: the row as written, or undefined when they have no cart row yet. */
export async function setCodeOfUserCart(db: Db, userId: number, code: string | null, now: string) {
  return (await setCodeOfUserCartStatement(db, { userId, code, now })).rows[0]
}

const setCodeOfUserCartStatement = prepared((db, v: { userId: number; code: string | null; now: string }) =>
  db.updateTable('carts').set({ discount_code: v.code, updated_at: v.now }).where('user_id', '=', v.userId).returning(cartColumns),
)

export async function deleteCart(db: Db, cartId: number): Promise<void> {
  await db.deleteFrom('carts').where('id', '=', cartId).execute()
}

/** Guest carts past their expiry, at most `limit` at a time (their lines go with them). */
export async function deleteExpiredCarts(db: Db, now: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('carts')
    .where('id', 'in', (eb) => eb.selectFrom('carts').select('id').where('expires_at', '<=', now).limit(limit))
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}

/** A guest cart's lines with their variant's stock, for merging them into a user's. */
export async function linesWithStock(db: Db, cartId: number) {
  return db
    .selectFrom('cart_items as c')
    .innerJoin('product_variants as v', 'v.id', 'c.variant_id')
    .select(['c.id', 'c.variant_id', 'c.quantity', 'v.stock'])
    .where('c.cart_id', '=', cartId)
    .orderBy('c.id')
    .execute()
}

export async function moveLine(db: Db, id: number, to: { cartId: number; userId: number; quantity: number; now: string }): Promise<void> {
  await db.updateTable('cart_items').set({ cart_id: to.cartId, user_id: to.userId, quantity: to.quantity, updated_at: to.now }).where('id', '=', id).execute()
}

export async function setLineQuantity(db: Db, id: number, quantity: number, now: string): Promise<void> {
  await db.updateTable('cart_items').set({ quantity, updated_at: now }).where('id', '=', id).execute()
}

export async function deleteLine(db: Db, id: number): Promise<void> {
  await db.deleteFrom('cart_items').where('id', '=', id).execute()
}

// ---- lines ----

/** The product fields the cart needs, and how many variants it has; read straight from the tables (the catalog module is not a dependency). */
export async function findProductForCart(db: Db, id: number) {
  return db
    .selectFrom('products as p')
    .select(['p.id', 'p.name', 'p.status', sql<number>`(select count(*) from product_variants v where v.product_id = p.id)`.as('variants')])
    .where('p.id', '=', id)
    .executeTakeFirst()
}

/** A variant's stock and price, with its product. */
export async function findVariantForCart(db: Db, id: number) {
  return db.selectFrom('product_variants').select(['id', 'product_id', 'stock', 'price_cents']).where('id', '=', id).executeTakeFirst()
}

/** A cart's lines with each line's product and variant, in one query, oldest line first. */
export async function listCartLines(db: Db, ref: CartRef) {
  return (ref.cartId !== undefined ? await listGuestLinesStatement(db, { cartId: ref.cartId }) : await listUserLinesStatement(db, { userId: ref.userId })).rows
}

function listLines(db: Db) {
  return db
    .selectFrom('cart_items as c')
    .innerJoin('products as p', 'p.id', 'c.product_id')
    .innerJoin('product_variants as v', 'v.id', 'c.variant_id')
    .select([
      'c.id',
      'c.product_id',
      'c.variant_id',
      'c.quantity',
      'p.name',
      'p.status',
      'p.category_id',
      sql<string>`coalesce(v.tax_class, p.tax_class)`.as('tax_class'),
      'v.price_cents',
      'p.image_url',
      'v.title',
      'v.sku',
      'v.values_key',
    ])
    .orderBy('c.id')
}

const listUserLinesStatement = prepared((db, v: { userId: number }) => listLines(db).where('c.user_id', '=', v.userId))

/**
 * POST /cart/discount: a customer's cart lines and the code they apply, in one statement (on PostgreSQL a round
 * trip less than reading them one after the other). Each line carries the code's row (`code_row`, null when no code has
 * that text); a cart without lines answers no row, and so no code: the caller reads it alone then.
 */
export async function listUserLinesWithCode(db: Db, userId: number, codeKey: string) {
  const rows = (await listUserLinesWithCodeStatement(db, { userId, codeKey })).rows
  return { lines: rows.map(({ code_row: _, ...line }) => line), codeRow: rows.length > 0 ? parseRowJson(rows[0]?.code_row) : undefined }
}

const listUserLinesWithCodeStatement = prepared((db, v: { userId: number; codeKey: string }) =>
  listLines(db)
    // Codes are ASCII: lower() folds them as the codes' unique index does. Not correlated: run once per statement.
    .select(
      sql<
        DiscountCodeRow | string | null
      >`(select ${rowJson(isPostgres(db), 'dc', discountCodeColumns)} from discount_codes dc where lower(dc.code) = ${v.codeKey})`.as('code_row'),
    )
    .where('c.user_id', '=', v.userId),
)
const listGuestLinesStatement = prepared((db, v: { cartId: number }) => listLines(db).where('c.cart_id', '=', v.cartId))

/**
 * Adds `quantity` of a variant to the user's cart in one statement: a new line, or the quantities combined.
 * Without `variantId`, the product's variant when it has exactly one. The product must be active. The stock rule
 * is part of the statement (the insert selects only a variant with enough stock; the update applies only while
 * the combined quantity fits), so concurrent adds can never push a line over the stock. So is the amount rule:
 * the line's subtotal stays within MAX_AMOUNT_CENTS.
 * Returns undefined when nothing was written (unknown product or variant, not enough stock, too large an amount).
 */
export async function upsertCartLine(
  db: Db,
  line: { cart: { id: number } | { ofUser: number }; userId: number | null; productId: number; variantId?: number; quantity: number; now: string },
): Promise<AddedCartLine | undefined> {
  const { cart, ...rest } = line
  const values = { ...rest, maxUnitCents: maxUnitCentsFor(line.quantity) }
  const named = line.variantId
  let result: QueryResult<AddedCartLine>
  if ('id' in cart) {
    const withCart = { ...values, cartId: cart.id }
    result = named !== undefined ? await upsertVariantLine(db, { ...withCart, variantId: named }) : await upsertOnlyVariantLine(db, withCart)
  } else {
    const ofUser = { ...values, cartUserId: cart.ofUser }
    result = named !== undefined ? await upsertVariantLineOfUser(db, { ...ofUser, variantId: named }) : await upsertOnlyVariantLineOfUser(db, ofUser)
  }
  return result.rows[0]
}

/** A line as an add wrote it, with its variant's SKU, title and options key (for the answer: no read after). */
export type AddedCartLine = CartItemRecord & { sku: string | null; title: string | null; values_key: string }

type LineValues = { userId: number | null; productId: number; quantity: number; now: string; maxUnitCents: number }

/**
 * The statement of upsertCartLine, for the variant named (`variantId`) or the product's only one, into the cart
 * `cartId`, or into the cart of the user `cartUserId` (found by the statement: a read less; no row written when the
 * user has no cart row yet).
 */
function upsertLineStatement(
  db: Db,
  line: LineValues & { cartId?: number; cartUserId?: number },
  into: 'cartId' | 'cartUserId',
  variantId: number | undefined,
) {
  const columns = [
    sql<number | null>`cast(${line.userId} as integer)`.as('user_id'),
    'v.product_id',
    'v.id',
    sql<number>`cast(${line.quantity} as integer)`.as('quantity'),
    sql<string>`cast(${line.now} as text)`.as('created_at'),
    sql<string>`cast(${line.now} as text)`.as('updated_at'),
  ] as const
  const from = db.selectFrom('product_variants as v').innerJoin('products as p', 'p.id', 'v.product_id')
  let variants =
    into === 'cartId'
      ? from.select([sql<number>`cast(${line.cartId!} as integer)`.as('cart_id'), ...columns])
      : from.innerJoin('carts as c', (join) => join.on((eb) => eb('c.user_id', '=', line.cartUserId!))).select(['c.id as cart_id', ...columns])
  variants = variants
    .where('v.product_id', '=', line.productId)
    .where('p.status', '=', 'active')
    .where('v.stock', '>=', line.quantity)
    .where('v.price_cents', '<=', line.maxUnitCents)
  variants =
    variantId !== undefined
      ? variants.where('v.id', '=', variantId)
      : variants.where(sql<boolean>`not exists (select 1 from product_variants o where o.product_id = v.product_id and o.id <> v.id)`)
  return db
    .insertInto('cart_items')
    .columns(['cart_id', 'user_id', 'product_id', 'variant_id', 'quantity', 'created_at', 'updated_at'])
    .expression(variants)
    .onConflict((oc) =>
      oc
        .columns(['cart_id', 'variant_id'])
        .doUpdateSet({
          quantity: sql`cart_items.quantity + excluded.quantity`,
          updated_at: sql`excluded.updated_at`,
        })
        // Written as a difference, and the sum in 64 bits, so the checks themselves cannot overflow a 32-bit integer.
        .where(sql<boolean>`excluded.quantity <= (select v.stock from product_variants v where v.id = excluded.variant_id) - cart_items.quantity`)
        .where(
          sql<boolean>`(select v.price_cents from product_variants v where v.id = excluded.variant_id) <= cast(${MAX_AMOUNT_CENTS} as bigint) / (cast(cart_items.quantity as bigint) + excluded.quantity)`,
        ),
    )
    .returning([
      ...cartItemColumns,
      sql<string | null>`(select v.sku from product_variants v where v.id = cart_items.variant_id)`.as('sku'),
      sql<string | null>`(select v.title from product_variants v where v.id = cart_items.variant_id)`.as('title'),
      sql<string>`(select v.values_key from product_variants v where v.id = cart_items.variant_id)`.as('values_key'),
    ])
}

// The shape (whose cart, which variant) is chosen here, never from the values (prepared's stand-ins).
const upsertVariantLine = prepared((db, line: LineValues & { cartId: number; variantId: number }) => upsertLineStatement(db, line, 'cartId', line.variantId))
const upsertOnlyVariantLine = prepared((db, line: LineValues & { cartId: number }) => upsertLineStatement(db, line, 'cartId', undefined))
const upsertVariantLineOfUser = prepared((db, line: LineValues & { cartUserId: number; variantId: number }) =>
  upsertLineStatement(db, line, 'cartUserId', line.variantId),
)
const upsertOnlyVariantLineOfUser = prepared((db, line: LineValues & { cartUserId: number }) => upsertLineStatement(db, line, 'cartUserId', undefined))

/** Sets a line's quantity when the line is the user's, the product has that much stock and the subtotal stays within MAX_AMOUNT_CENTS. */
export async function updateCartLineQuantity(db: Db, change: { id: number; ref: CartRef; quantity: number; now: string }): Promise<CartItemRecord | undefined> {
  return ofCart(db.updateTable('cart_items').set({ quantity: change.quantity, updated_at: change.now }).where('id', '=', change.id), change.ref)
    .where((eb) => eb(eb.selectFrom('product_variants as v').select('v.stock').whereRef('v.id', '=', 'cart_items.variant_id'), '>=', change.quantity))
    .where((eb) =>
      eb(eb.selectFrom('product_variants as v').select('v.price_cents').whereRef('v.id', '=', 'cart_items.variant_id'), '<=', maxUnitCentsFor(change.quantity)),
    )
    .returning(cartItemColumns)
    .executeTakeFirst()
}

export async function findCartLineOfVariant(db: Db, ref: CartRef, variantId: number) {
  return ofCart(db.selectFrom('cart_items').select('quantity').where('variant_id', '=', variantId), ref).executeTakeFirst()
}

/** The variant of a product that has only one. */
export async function findOnlyVariant(db: Db, productId: number) {
  return db.selectFrom('product_variants').select(['id', 'product_id', 'stock', 'price_cents']).where('product_id', '=', productId).executeTakeFirst()
}

export async function findCartLine(db: Db, id: number, ref: CartRef) {
  return ofCart(db.selectFrom('cart_items').select(cartItemColumns).where('id', '=', id), ref).executeTakeFirst()
}

export async function deleteCartLine(db: Db, id: number, ref: CartRef): Promise<boolean> {
  const result = await ofCart(db.deleteFrom('cart_items').where('id', '=', id), ref).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function deleteCartLines(db: Db, ref: CartRef): Promise<number> {
  const result = await ofCart(db.deleteFrom('cart_items'), ref).executeTakeFirst()
  return Number(result.numDeletedRows)
}

/** Empties a cart inside checkout's transaction and returns what it held; the deleted rows stay locked until it ends. */
export async function takeCartLines(db: Db, ref: CartRef) {
  return (ref.cartId !== undefined ? await takeGuestLinesStatement(db, { cartId: ref.cartId }) : await takeUserLinesStatement(db, { userId: ref.userId })).rows
}

const takeUserLinesStatement = prepared((db, v: { userId: number }) =>
  db.deleteFrom('cart_items').where('user_id', '=', v.userId).returning(['id', 'product_id', 'variant_id', 'quantity']),
)
const takeGuestLinesStatement = prepared((db, v: { cartId: number }) =>
  db.deleteFrom('cart_items').where('cart_id', '=', v.cartId).returning(['id', 'product_id', 'variant_id', 'quantity']),
)

/** What pricing a cart needs of its lines' variants and products (status and name for the off-sale check). */
export async function variantsForPricing(db: Db, variantIds: readonly number[]) {
  return (await pricingStatement(db, variantIds, {})).rows
}

// Checkout with a code prices its lines with this statement: compiled once per number of lines, up to a cart of 20
// (a larger one is built each time).
const pricingStatement = preparedList(
  (db, variantIds: readonly number[], _: object) =>
    db
      .selectFrom('product_variants as v')
      .innerJoin('products as p', 'p.id', 'v.product_id')
      .select(['v.id', 'v.product_id', 'v.price_cents', 'p.name', 'p.status', 'p.category_id', sql<string>`coalesce(v.tax_class, p.tax_class)`.as('tax_class')])
      .where('v.id', 'in', variantIds),
  20,
)

/** Narrows a statement on `cart_items` to one cart's lines (a user's by the lines' `user_id`). */
function ofCart<Q extends { where: (column: 'cart_id' | 'user_id', op: '=', value: number) => Q }>(query: Q, ref: CartRef): Q {
  return ref.cartId !== undefined ? query.where('cart_id', '=', ref.cartId) : query.where('user_id', '=', ref.userId)
}

export interface LineVariant {
  sku: string | null
  title: string | null
  options: Array<{ name: string; value: string }>
}

/** A variant's SKU, title and option values (in option order), for a line's answer. */
export async function findLineVariant(db: Db, variantId: number): Promise<LineVariant | undefined> {
  const [variant] = (await lineVariantStatement(db, { variantId })).rows
  return variant && withOptions(db, variantId, variant)
}

/** A variant's SKU and title with its option values (read only when it has any: `values_key` not empty). */
export async function withOptions(db: Db, variantId: number, variant: { sku: string | null; title: string | null; values_key: string }): Promise<LineVariant> {
  const options = variant.values_key === '' ? [] : ((await optionsOfVariants(db, [variantId])).get(variantId) ?? [])
  return { sku: variant.sku, title: variant.title, options }
}

// Compiled once: every add to a cart answers its line with these.
const lineVariantStatement = prepared((db, v: { variantId: number }) =>
  db.selectFrom('product_variants').select(['sku', 'title', 'values_key']).where('id', '=', v.variantId),
)

/** The option values of these variants, each variant's in option order: `[{name: 'Talla', value: 'M'}]`. */
export async function optionsOfVariants(db: Db, variantIds: readonly number[]): Promise<Map<number, Array<{ name: string; value: string }>>> {
  const rows = await db
    .selectFrom('variant_option_values as l')
    .innerJoin('product_option_values as v', 'v.id', 'l.option_value_id')
    .innerJoin('product_options as o', 'o.id', 'v.option_id')
    .select(['l.variant_id', 'o.name', 'v.value'])
    .where('l.variant_id', 'in', variantIds)
    .orderBy('l.variant_id')
    .orderBy('o.position')
    .orderBy('o.id')
    .execute()
  const byVariant = new Map<number, Array<{ name: string; value: string }>>()
  for (const row of rows) {
    let list = byVariant.get(row.variant_id)
    if (!list) byVariant.set(row.variant_id, (list = []))
    list.push({ name: row.name, value: row.value })
  }
  return byVariant
}
