import type { Transaction } from 'kysely'
import { prepared } from '../../db/prepared.js'
import type { Database, ProductRow } from '../../db/database.js'
import { PRODUCT_COLUMNS } from '../catalog/product-view.js'

type Trx = Transaction<Database>

/** What an order line keeps of the variant it took units of. */
export interface TakenVariant {
  id: number
  product_id: number
  price_cents: number
  sku: string | null
  title: string | null
  stock: number
  /** The variant's own tax class (null: its product's). */
  tax_class: string | null
  /** Its option value ids, sorted ('' for a variant without options). */
  values_key: string
}

/** What an order line takes of the variant (TakenVariant's columns). */
const TAKEN_VARIANT_COLUMNS = ['id', 'product_id', 'price_cents', 'sku', 'title', 'stock', 'tax_class', 'values_key'] as const

/**
 * Takes `quantity` units of a variant when that many are in stock, in one conditional statement: racing buyers
 * cannot both pass the check. Returns the variant as it is afterwards, or undefined (and changes nothing) when the
 * stock is short or the variant is gone.
 */
export async function takeVariantStock(trx: Trx, variantId: number, quantity: number): Promise<TakenVariant | undefined> {
  return (await takeVariantStockStatement(trx, { variantId, quantity })).rows[0]
}

const takeVariantStockStatement = prepared((db, v: { variantId: number; quantity: number }) =>
  db
    .updateTable('product_variants')
    .set((eb) => ({ stock: eb('stock', '-', v.quantity) }))
    .where('id', '=', v.variantId)
    .where('stock', '>=', v.quantity)
    .returning(TAKEN_VARIANT_COLUMNS),
)

/**
 * PostgreSQL: takeVariantStock then takeProductStock for a product's one line, in one statement (a round trip less
 * in every order). The variant is updated (locked) first, as in two statements; its product only when the variant
 * was taken. `variant` undefined: nothing changed (short stock, or gone); `product` undefined: the variant was
 * taken but its product was not on sale **in the statement's snapshot**, taken before it waited for the variant's
 * lock: a product put on sale by the write it waited for is not seen (takeProductStock, a statement of its own, sees
 * it). The caller asks again or rolls the transaction back.
 */
export async function takeLineStock(
  trx: Trx,
  variantId: number,
  quantity: number,
): Promise<{ variant: TakenVariant | undefined; product: ProductRow | undefined }> {
  const row = (await takeLineStockStatement(trx, { variantId, quantity })).rows[0]
  if (!row) return { variant: undefined, product: undefined }
  const { v_id, v_product_id, v_price_cents, v_sku, v_title, v_stock, v_tax_class, v_values_key, ...product } = row
  const variant = {
    id: v_id,
    product_id: v_product_id,
    price_cents: v_price_cents,
    sku: v_sku,
    title: v_title,
    stock: v_stock,
    tax_class: v_tax_class,
    values_key: v_values_key,
  }
  return { variant, product: product.id === null ? undefined : (product as ProductRow) }
}

const takeLineStockStatement = prepared((db, v: { variantId: number; quantity: number }) =>
  db
    .with('v', (qb) =>
      qb
        .updateTable('product_variants')
        .set((eb) => ({ stock: eb('stock', '-', v.quantity) }))
        .where('id', '=', v.variantId)
        .where('stock', '>=', v.quantity)
        .returning(TAKEN_VARIANT_COLUMNS),
    )
    .with('p', (qb) =>
      qb
        .updateTable('products')
        .set((eb) => ({ stock: eb('stock', '-', v.quantity) }))
        .where('id', '=', (eb) => eb.selectFrom('v').select('v.product_id'))
        .where('status', '=', 'active')
        .returning(PRODUCT_COLUMNS),
    )
    .selectFrom('v')
    .leftJoin('p', (join) => join.onTrue())
    .select([
      'v.id as v_id',
      'v.product_id as v_product_id',
      'v.price_cents as v_price_cents',
      'v.sku as v_sku',
      'v.title as v_title',
      'v.stock as v_stock',
      'v.tax_class as v_tax_class',
      'v.values_key as v_values_key',
    ])
    .select(PRODUCT_COLUMNS.map((column) => `p.${column}` as const)),
)

/** Moves the product's copy of its total stock by `delta`; the product as it is afterwards. */
export async function moveProductStock(trx: Trx, productId: number, delta: number): Promise<ProductRow | undefined> {
  return trx
    .updateTable('products')
    .set((eb) => ({ stock: eb('stock', '+', delta) }))
    .where('id', '=', productId)
    .returning(PRODUCT_COLUMNS)
    .executeTakeFirst()
}

/**
 * Takes `quantity` off the product's copy of its total stock while the product is on sale (`active`): the sale's
 * check and its move in one statement. Undefined (nothing changed) when the product is not on sale or gone.
 */
export async function takeProductStock(trx: Trx, productId: number, quantity: number): Promise<ProductRow | undefined> {
  return (await takeProductStockStatement(trx, { productId, quantity })).rows[0]
}

const takeProductStockStatement = prepared((db, v: { productId: number; quantity: number }) =>
  db
    .updateTable('products')
    .set((eb) => ({ stock: eb('stock', '-', v.quantity) }))
    .where('id', '=', v.productId)
    .where('status', '=', 'active')
    .returning(PRODUCT_COLUMNS),
)

/** Puts units back into a variant; a variant deleted since is skipped (undefined). */
export async function putBackVariantStock(trx: Trx, variantId: number, quantity: number): Promise<{ product_id: number } | undefined> {
  return trx
    .updateTable('product_variants')
    .set((eb) => ({ stock: eb('stock', '+', quantity) }))
    .where('id', '=', variantId)
    .returning('product_id')
    .executeTakeFirst()
}

/** The product of a variant: its name and whether it is on sale (why a line could not be taken). */
export async function findVariantProduct(trx: Trx, variantId: number) {
  return trx
    .selectFrom('product_variants as v')
    .innerJoin('products as p', 'p.id', 'v.product_id')
    .select(['p.name', 'p.status'])
    .where('v.id', '=', variantId)
    .executeTakeFirst()
}
