import { type Kysely, sql } from 'kysely'
import type { Database, ProductRow } from '../../db/database.js'
import { PRODUCT_COLUMNS } from './product-view.js'

type Db = Kysely<Database>

/**
 * A product's first image and its default variant (no options, values_key ''), as every product without options
 * has: written with the product, in its transaction.
 */
export async function insertDefaultVariant(
  db: Db,
  product: Pick<ProductRow, 'id' | 'price_cents' | 'stock' | 'image_key' | 'image_url' | 'created_at'>,
): Promise<void> {
  const image =
    product.image_key === ''
      ? undefined
      : await db
          .insertInto('product_images')
          .values({ product_id: product.id, image_key: product.image_key, url: product.image_url, position: 0, created_at: product.created_at })
          .returning('id')
          .executeTakeFirstOrThrow()
  await db
    .insertInto('product_variants')
    .values({
      product_id: product.id,
      sku: null,
      sku_key: null,
      title: null,
      price_cents: product.price_cents,
      compare_at_cents: null,
      stock: product.stock,
      image_id: image?.id ?? null,
      tax_class: null,
      position: 0,
      values_key: '',
      created_at: product.created_at,
      updated_at: product.created_at,
    })
    .execute()
}

/**
 * The first image and the default variant of every product that has no variant yet, in two statements: for rows
 * written in bulk (the seed of a benchmark, the tests' factory, a copy between databases).
 */
export async function addMissingDefaultVariants(db: Db): Promise<void> {
  await sql`insert into product_images (product_id, image_key, url, alt, position, created_at)
    select p.id, p.image_key, p.image_url, '', 0, p.created_at from products p
    where p.image_key <> '' and not exists (select 1 from product_images i where i.product_id = p.id)`.execute(db)
  await sql`insert into product_variants (product_id, sku, sku_key, title, price_cents, compare_at_cents, stock, image_id, tax_class,
      position, values_key, created_at, updated_at)
    select p.id, null, null, null, p.price_cents, null, p.stock,
      (select min(i.id) from product_images i where i.product_id = p.id and i.position = 0), null, 0, '', p.created_at, p.updated_at
    from products p where not exists (select 1 from product_variants v where v.product_id = p.id)`.execute(db)
}

/** The product's variants, by position. */
export async function countVariants(db: Db, productId: number): Promise<number> {
  const row = await db
    .selectFrom('product_variants')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('product_id', '=', productId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** Sets the one variant of a one-variant product (price, stock), the product's own copies with it. */
export async function updateOnlyVariant(db: Db, productId: number, changes: { price_cents?: number; stock?: number; updated_at: string }): Promise<void> {
  await db.updateTable('product_variants').set(changes).where('product_id', '=', productId).execute()
}

/**
 * The product's copies of its variants (lowest and highest price, total stock) made true again, after a write to
 * its variants; the product as it is afterwards.
 */
export async function refreshProductAggregates(db: Db, productId: number, updatedAt?: string): Promise<ProductRow | undefined> {
  return db
    .updateTable('products')
    .set({
      price_cents: sql<number>`(select min(price_cents) from product_variants where product_id = ${productId})`,
      price_max_cents: sql<number>`(select max(price_cents) from product_variants where product_id = ${productId})`,
      stock: sql<number>`(select sum(stock) from product_variants where product_id = ${productId})`,
      ...(updatedAt ? { updated_at: updatedAt } : {}),
    })
    .where('id', '=', productId)
    .returning(PRODUCT_COLUMNS)
    .executeTakeFirst()
}
