import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import type { Readable } from 'node:stream'
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import type { Kysely } from 'kysely'
import type { StorageConfig } from '../config.js'
import type { Database } from '../db/database.js'
import type { ImageHost } from '../modules/images/image-host.js'
import { imageContentType } from '../modules/images/content-type.js'
import { ImageKeyTakenError } from '../modules/images/image-key-taken.js'
import { createLocalImageHost, localImagePath } from '../modules/images/local-image-host.js'
import { createS3Client, createS3ImageHost } from '../modules/images/s3-image-host.js'

/**
 * `copy-images`: carries the product images from one image host to the other (the local folder and an S3
 * bucket, either way) and points every image's `url` (and each product's `image_url`, the copy of its main
 * image) at the new host. Keys stay the same, so a second run finds every image already there and copies nothing.
 */

/** An image host that can also be read (the service itself never reads its images back). */
export interface ReadableImageHost {
  readonly name: 'local' | 's3'
  readonly host: ImageHost
  /** The object's bytes, or null when there is no such object. */
  read(key: string): Promise<{ body: Readable; size: number; contentType: string } | null>
}

const contentTypeOf = (key: string) => imageContentType(key) ?? 'application/octet-stream'

export function localImages(uploadDir: string, publicUrl: string): ReadableImageHost {
  return {
    name: 'local',
    host: createLocalImageHost(uploadDir, publicUrl),
    async read(key) {
      const path = localImagePath(uploadDir, key)
      const info = await stat(path).catch(() => null)
      if (!info?.isFile()) return null
      return { body: createReadStream(path), size: info.size, contentType: contentTypeOf(key) }
    },
  }
}

export function s3Images(config: Extract<StorageConfig, { driver: 's3' }>, client: S3Client = createS3Client(config)): ReadableImageHost {
  return {
    name: 's3',
    host: createS3ImageHost(config, client),
    async read(key) {
      try {
        const object = await client.send(new GetObjectCommand({ Bucket: config.bucket, Key: key }), {
          abortSignal: AbortSignal.timeout(config.requestTimeoutMs),
        })
        return { body: object.Body as Readable, size: object.ContentLength ?? 0, contentType: object.ContentType ?? contentTypeOf(key) }
      } catch (error) {
        const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
        if (status === 404 || (error as Error).name === 'NoSuchKey') return null
        throw error
      }
    },
  }
}

export interface CopyImagesReport {
  /** Products in the database. */
  readonly products: number
  /** Images looked at: every image of every product (a product's main image is one of them). */
  readonly images: number
  /** Images copied by this run. */
  readonly copied: number
  /** Images the destination already had (an earlier run, or an image stored under the same key). */
  readonly skipped: number
  /** Images whose URL now names the destination (and their product's `image_url`, for a main image). */
  readonly rewritten: number
  /** Keys the source does not have: their images keep their URL. */
  readonly missing: string[]
  /** Keys that could not be copied, with the reason: their images keep their URL; run again. */
  readonly failed: { key: string; error: string }[]
}

const PAGE = 500

/** What became of a key in this run. */
type Carried = 'there' | 'missing' | 'failed'

/**
 * Copies every image of every product (each `product_images` row) from `from` to `to`, skipping keys `to` already
 * has, and rewrites each image's `url` to `to`'s URL for its key, and the product's `image_url` with it when the
 * image is its main one. An image that could not be copied keeps its URL, so none ever points at nothing. A product
 * whose `image_key` has no image row (written by hand, outside the service) is carried the same way. `onImage` sees
 * progress.
 */
export async function copyImages(
  db: Kysely<Database>,
  from: ReadableImageHost,
  to: ReadableImageHost,
  onImage?: (done: number) => void,
): Promise<CopyImagesReport> {
  const present = new Set<string>()
  try {
    for await (const object of to.host.list('products/')) present.add(object.key)
  } catch (error) {
    throw new Error(
      `cannot list the images already in ${to.name === 's3' ? 'the bucket' : 'the local folder'} (${(error as Error).message}); nothing was changed`,
      { cause: error },
    )
  }
  let images = 0
  let copied = 0
  let skipped = 0
  let rewritten = 0
  const missing: string[] = []
  const failed: { key: string; error: string }[] = []
  // Each key once, however many rows name it.
  const carried = new Map<string, Carried>()

  const carry = async (key: string): Promise<Carried> => {
    const known = carried.get(key)
    if (known) return known
    let outcome: Carried = 'there'
    if (present.has(key)) skipped += 1
    else {
      try {
        const object = await from.read(key)
        if (!object) {
          missing.push(key)
          outcome = 'missing'
        } else {
          await to.host.store(key, object.body, object.contentType, object.size)
          copied += 1
        }
      } catch (error) {
        // Stored meanwhile (another run, an upload with the same key): it is there.
        if (error instanceof ImageKeyTakenError) skipped += 1
        else {
          failed.push({ key, error: (error as Error).message })
          outcome = 'failed'
        }
      }
      if (outcome === 'there') present.add(key)
    }
    carried.set(key, outcome)
    return outcome
  }

  // Every image row. Only the URLs change: the products themselves have not (their updated_at stays).
  for (let after = 0; ;) {
    const page = await db
      .selectFrom('product_images')
      .select(['id', 'product_id', 'image_key', 'url'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)
      .execute()
    if (page.length === 0) break
    for (const image of page) {
      images += 1
      if ((await carry(image.image_key)) !== 'there') continue
      const url = to.host.publicUrl(image.image_key)
      if (image.url !== url) {
        await db.updateTable('product_images').set({ url }).where('id', '=', image.id).where('image_key', '=', image.image_key).execute()
        rewritten += 1
      }
      // The product's copy of its main image.
      await db
        .updateTable('products')
        .set({ image_url: url })
        .where('id', '=', image.product_id)
        .where('image_key', '=', image.image_key)
        .where('image_url', '<>', url)
        .execute()
    }
    after = page[page.length - 1]!.id
    onImage?.(images)
  }

  // Products whose image has no row of its own.
  for (let after = 0; ;) {
    const page = await db
      .selectFrom('products as p')
      .select(['p.id', 'p.image_key', 'p.image_url'])
      .where('p.id', '>', after)
      .where('p.image_key', '<>', '')
      .where((eb) =>
        eb.not(
          eb.exists(eb.selectFrom('product_images as i').select('i.id').whereRef('i.product_id', '=', 'p.id').whereRef('i.image_key', '=', 'p.image_key')),
        ),
      )
      .orderBy('p.id')
      .limit(PAGE)
      .execute()
    if (page.length === 0) break
    for (const product of page) {
      images += 1
      if ((await carry(product.image_key)) !== 'there') continue
      const url = to.host.publicUrl(product.image_key)
      if (product.image_url !== url) {
        await db.updateTable('products').set({ image_url: url }).where('id', '=', product.id).where('image_key', '=', product.image_key).execute()
        rewritten += 1
      }
    }
    after = page[page.length - 1]!.id
    onImage?.(images)
  }

  const products = Number(
    (
      await db
        .selectFrom('products')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )
  return { products, images, copied, skipped, rewritten, missing, failed }
}

export function copyImagesReportLines(report: CopyImagesReport, from: string, to: string): string[] {
  const lines = [
    `${report.products} products, ${report.images} images: ${report.copied} copied from ${from} to ${to}, ${report.skipped} already there; ${report.rewritten} image URLs now point to ${to}`,
  ]
  for (const key of report.missing) lines.push(`missing in ${from}: ${key} (its image keeps its URL)`)
  for (const { key, error } of report.failed) lines.push(`could not copy ${key}: ${error} (its image keeps its URL; run again)`)
  return lines
}
