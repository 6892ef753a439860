import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'

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
