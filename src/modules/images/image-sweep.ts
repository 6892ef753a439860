import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import type { ImageHost, StoredObject } from './image-host.js'

/** The folder the service stores product images in; nothing outside it is ever swept. */
export const PRODUCT_IMAGE_PREFIX = 'products/'

/**
 * An object younger than this may belong to an upload in flight (stored, its row not yet written),
 * or to a product written by an instance whose clock is a little behind; an upload takes seconds.
 */
export const DEFAULT_SWEEP_GRACE_MS = 60 * 60 * 1000

export interface SweepOptions {
  /** Remove the orphans found; without it they are only listed. */
  readonly delete: boolean
  /** Objects modified less than this long ago are left alone. */
  readonly graceMs: number
  /** The moment ages are measured from (tests move it). */
  readonly now?: Date
  /** How many deletes run at once. */
  readonly concurrency?: number
}

export interface SweepResult {
  /** Objects under `products/` that no product names, older than the grace period. */
  readonly orphans: StoredObject[]
  /** Orphans younger than the grace period, left alone. */
  readonly recent: number
  /** Objects a product names. */
  readonly referenced: number
  /** Orphans removed (with `delete`). */
  readonly deleted: string[]
  /** Orphans whose removal failed, with the reason. */
  readonly failed: { key: string; error: unknown }[]
}

/**
 * Finds the images no product names: left by an upload whose row was never written (a crash, a
 * timeout), or by a replace or delete whose removal failed while the host was down. Lists them, or
 * removes them with `delete`. The listing comes first and the products are read after it, so an
 * image whose product was committed before the listing is always seen as named; an upload still in
 * flight is younger than the grace period.
 */
export async function sweepOrphanImages(db: Kysely<Database>, images: ImageHost, options: SweepOptions): Promise<SweepResult> {
  const now = options.now ?? new Date()
  const listed: StoredObject[] = []
  for await (const object of images.list(PRODUCT_IMAGE_PREFIX)) listed.push(object)

  // Every image of every product (product_images), and the products' copies of their main image.
  const named = new Set(
    [...(await db.selectFrom('product_images').select('image_key').execute()), ...(await db.selectFrom('products').select('image_key').execute())].map(
      (row) => row.image_key,
    ),
  )
  const orphans: StoredObject[] = []
  let recent = 0
  let referenced = 0
  for (const object of listed) {
    if (named.has(object.key)) referenced += 1
    else if (now.getTime() - object.lastModified.getTime() < options.graceMs) recent += 1
    else orphans.push(object)
  }
  orphans.sort((a, b) => a.key.localeCompare(b.key))

  const deleted: string[] = []
  const failed: { key: string; error: unknown }[] = []
  if (options.delete) {
    const queue = orphans.map((object) => object.key)
    const worker = async () => {
      for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
        try {
          await images.delete(key)
          deleted.push(key)
        } catch (error) {
          failed.push({ key, error })
        }
      }
    }
    await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker))
    deleted.sort()
  }
  return { orphans, recent, referenced, deleted, failed }
}

/** What `images:sweep` prints: one line per orphan (key, last modified, size), then a summary. */
export function sweepReport(result: SweepResult, options: Pick<SweepOptions, 'delete' | 'graceMs'>): string[] {
  const lines = result.orphans.map((o) => `${o.key}\t${o.lastModified.toISOString()}\t${o.size} bytes`)
  const bytes = result.orphans.reduce((sum, o) => sum + o.size, 0)
  const minutes = Math.round(options.graceMs / 60_000)
  lines.push(
    `${result.orphans.length} orphan image(s), ${bytes} bytes, older than ${minutes} minute(s); ` +
      `${result.referenced} named by a product; ${result.recent} younger orphan(s) left alone`,
  )
  if (!options.delete) {
    if (result.orphans.length > 0) lines.push('Nothing removed: run again with --delete to remove them')
  } else {
    lines.push(`Removed ${result.deleted.length} of ${result.orphans.length}`)
  }
  return lines
}
