import { type Kysely, sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { prepared } from '../../db/prepared.js'
import { MAX_AMOUNT_CENTS, maxUnitCentsFor } from '../../shared/money.js'

type Db = Kysely<Database>

const cartItemColumns = ['id', 'user_id', 'product_id', 'variant_id', 'quantity', 'created_at'] as const

export type CartItemRecord = { id: number; user_id: number; product_id: number; variant_id: number; quantity: number; created_at: string }

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

/** The caller's cart with each line's product and variant, in one query, oldest line first. */
export async function listCartLines(db: Db, userId: number) {
  return (await listCartLinesStatement(db, { userId })).rows
}

const listCartLinesStatement = prepared((db, v: { userId: number }) =>
  db
    .selectFrom('cart_items as c')
    .innerJoin('products as p', 'p.id', 'c.product_id')
    .innerJoin('product_variants as v', 'v.id', 'c.variant_id')
    .select(['c.id', 'c.product_id', 'c.variant_id', 'c.quantity', 'p.name', 'p.status', 'v.price_cents', 'p.image_url', 'v.title', 'v.sku'])
    .where('c.user_id', '=', v.userId)
    .orderBy('c.id'),
)

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
  line: { userId: number; productId: number; variantId?: number; quantity: number; now: string },
): Promise<CartItemRecord | undefined> {
  const values = { ...line, maxUnitCents: maxUnitCentsFor(line.quantity) }
  const { rows } =
    line.variantId !== undefined ? await upsertVariantLine(db, { ...values, variantId: line.variantId }) : await upsertOnlyVariantLine(db, values)
  return rows[0]
}

type LineValues = { userId: number; productId: number; quantity: number; now: string; maxUnitCents: number }

/** The statement of upsertCartLine, for the variant named (`variantId`) or the product's only one. */
function upsertLineStatement(db: Db, line: LineValues, variantId: number | undefined) {
  let variants = db
    .selectFrom('product_variants as v')
    .innerJoin('products as p', 'p.id', 'v.product_id')
    .select([
      sql<number>`cast(${line.userId} as integer)`.as('user_id'),
      'v.product_id',
      'v.id',
      sql<number>`cast(${line.quantity} as integer)`.as('quantity'),
      sql<string>`cast(${line.now} as text)`.as('created_at'),
      sql<string>`cast(${line.now} as text)`.as('updated_at'),
    ])
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
    .columns(['user_id', 'product_id', 'variant_id', 'quantity', 'created_at', 'updated_at'])
    .expression(variants)
    .onConflict((oc) =>
      oc
        .columns(['user_id', 'variant_id'])
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
    .returning(cartItemColumns)
}

const upsertVariantLine = prepared((db, line: LineValues & { variantId: number }) => upsertLineStatement(db, line, line.variantId))
const upsertOnlyVariantLine = prepared((db, line: LineValues) => upsertLineStatement(db, line, undefined))

/** Sets a line's quantity when the line is the user's, the product has that much stock and the subtotal stays within MAX_AMOUNT_CENTS. */
export async function updateCartLineQuantity(
  db: Db,
  change: { id: number; userId: number; quantity: number; now: string },
): Promise<CartItemRecord | undefined> {
  return db
    .updateTable('cart_items')
    .set({ quantity: change.quantity, updated_at: change.now })
    .where('id', '=', change.id)
    .where('user_id', '=', change.userId)
    .where((eb) => eb(eb.selectFrom('product_variants as v').select('v.stock').whereRef('v.id', '=', 'cart_items.variant_id'), '>=', change.quantity))
    .where((eb) =>
      eb(eb.selectFrom('product_variants as v').select('v.price_cents').whereRef('v.id', '=', 'cart_items.variant_id'), '<=', maxUnitCentsFor(change.quantity)),
    )
    .returning(cartItemColumns)
    .executeTakeFirst()
}

export async function findCartLineOfVariant(db: Db, userId: number, variantId: number) {
  return db.selectFrom('cart_items').select('quantity').where('user_id', '=', userId).where('variant_id', '=', variantId).executeTakeFirst()
}

/** The variant of a product that has only one. */
export async function findOnlyVariant(db: Db, productId: number) {
  return db.selectFrom('product_variants').select(['id', 'product_id', 'stock', 'price_cents']).where('product_id', '=', productId).executeTakeFirst()
}

export async function findCartLine(db: Db, id: number, userId: number) {
  return db.selectFrom('cart_items').select(cartItemColumns).where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
}

export async function deleteCartLine(db: Db, id: number, userId: number): Promise<boolean> {
  const result = await db.deleteFrom('cart_items').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function deleteCartLines(db: Db, userId: number): Promise<number> {
  const result = await db.deleteFrom('cart_items').where('user_id', '=', userId).executeTakeFirst()
  return Number(result.numDeletedRows)
}
