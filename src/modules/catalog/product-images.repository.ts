import type { Kysely } from 'kysely'
import type { Database, ProductImageRow } from '../../db/database.js'

type Db = Kysely<Database>

/**
 * A new main image (position 0) in place of the old one: the image row keeps its id (variants pointing at it keep
 * it), and the product's copy of its main image follows.
 */
export async function replaceMainImage(db: Db, productId: number, stored: { key: string; url: string }, at: string): Promise<void> {
  const main = await db
    .updateTable('product_images')
    .set({ image_key: stored.key, url: stored.url })
    .where('product_id', '=', productId)
    .where('position', '=', 0)
    .returning('id')
    .executeTakeFirst()
  if (!main) {
    await db.insertInto('product_images').values({ product_id: productId, image_key: stored.key, url: stored.url, position: 0, created_at: at }).execute()
  }
}

/** The keys of every image of the product (their files go when the product goes). */
export async function imageKeysOf(db: Db, productId: number): Promise<string[]> {
  const rows = await db.selectFrom('product_images').select('image_key').where('product_id', '=', productId).execute()
  return rows.map((r) => r.image_key)
}

/** An image row as the image writes read it. */
export type ImageRow = Pick<ProductImageRow, 'id' | 'image_key' | 'url' | 'alt' | 'position'>

/** The product's images, in their order (position, then id). */
export async function findImages(db: Db, productId: number): Promise<ImageRow[]> {
  return db
    .selectFrom('product_images')
    .select(['id', 'image_key', 'url', 'alt', 'position'])
    .where('product_id', '=', productId)
    .orderBy('position')
    .orderBy('id')
    .execute()
}

export async function countImages(db: Db, productId: number): Promise<number> {
  const row = await db
    .selectFrom('product_images')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('product_id', '=', productId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** Adds stored images to the product from `position` on, in the order given; their rows, in that order. */
export async function insertImages(
  db: Db,
  productId: number,
  stored: ReadonlyArray<{ key: string; url: string }>,
  position: number,
  at: string,
): Promise<ImageRow[]> {
  const rows: ImageRow[] = []
  // One by one: each answers its own id, on both databases.
  for (const [index, image] of stored.entries()) {
    rows.push(
      await db
        .insertInto('product_images')
        .values({ product_id: productId, image_key: image.key, url: image.url, alt: '', position: position + index, created_at: at })
        .returning(['id', 'image_key', 'url', 'alt', 'position'])
        .executeTakeFirstOrThrow(),
    )
  }
  return rows
}

/** Gives each image its place in `ids` (0, 1, …), writing only the rows whose position changes. */
export async function renumberImages(db: Db, images: readonly ImageRow[], ids: readonly number[]): Promise<void> {
  for (const [position, id] of ids.entries()) {
    if (images.find((image) => image.id === id)?.position !== position) {
      await db.updateTable('product_images').set({ position }).where('id', '=', id).execute()
    }
  }
}

export async function updateImageAlt(db: Db, imageId: number, alt: string): Promise<void> {
  await db.updateTable('product_images').set({ alt }).where('id', '=', imageId).execute()
}

/** Removes an image; the variants showing it show none (their imageId null, their updated_at `at`). */
export async function deleteImage(db: Db, imageId: number, at: string): Promise<void> {
  await db.updateTable('product_variants').set({ image_id: null, updated_at: at }).where('image_id', '=', imageId).execute()
  await db.deleteFrom('product_images').where('id', '=', imageId).execute()
}
