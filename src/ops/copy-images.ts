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
 * bucket, either way) and points each product's `image_url` at the new host. Keys stay the same, so a
 * second run finds every image already there and copies nothing.
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
  /** Products looked at. */
  readonly products: number
  /** Images copied by this run. */
  readonly copied: number
  /** Images the destination already had (an earlier run, or a product that shares its image). */
  readonly skipped: number
  /** Products whose `image_url` now names the destination. */
  readonly rewritten: number
  /** Keys the source does not have: their products keep their URL. */
  readonly missing: string[]
  /** Keys that could not be copied, with the reason: their products keep their URL; run again. */
  readonly failed: { key: string; error: string }[]
}

const PAGE = 500

/**
 * Copies the image of every product from `from` to `to` (skipping keys `to` already has) and rewrites
 * the product's `image_url` to `to`'s URL for that key. A product whose image could not be copied keeps
 * its URL, so it never points at nothing. `onProduct` sees progress.
 */
export async function copyImages(
  db: Kysely<Database>,
  from: ReadableImageHost,
  to: ReadableImageHost,
  onProduct?: (done: number) => void,
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
  let products = 0
  let copied = 0
  let skipped = 0
  let rewritten = 0
  const missing: string[] = []
  const failed: { key: string; error: string }[] = []
  let after = 0
  for (;;) {
    const page = await db.selectFrom('products').select(['id', 'image_key', 'image_url']).where('id', '>', after).orderBy('id').limit(PAGE).execute()
    if (page.length === 0) break
    for (const product of page) {
      products += 1
      const key = product.image_key
      if (present.has(key)) skipped += 1
      else {
        try {
          const object = await from.read(key)
          if (!object) {
            missing.push(key)
            continue
          }
          await to.host.store(key, object.body, object.contentType, object.size)
          copied += 1
        } catch (error) {
          // Stored meanwhile (another run, an upload with the same key): it is there.
          if (!(error instanceof ImageKeyTakenError)) {
            failed.push({ key, error: (error as Error).message })
            continue
          }
          skipped += 1
        }
        present.add(key)
      }
      const url = to.host.publicUrl(key)
      if (product.image_url !== url) {
        // Only the URL: the product itself has not changed (its updated_at stays).
        await db.updateTable('products').set({ image_url: url }).where('id', '=', product.id).where('image_key', '=', key).execute()
        rewritten += 1
      }
    }
    after = page[page.length - 1]!.id
    onProduct?.(products)
  }
  return { products, copied, skipped, rewritten, missing, failed }
}

export function copyImagesReportLines(report: CopyImagesReport, from: string, to: string): string[] {
  const lines = [
    `${report.products} products: ${report.copied} images copied from ${from} to ${to}, ${report.skipped} already there; ${report.rewritten} image URLs now point to ${to}`,
  ]
  for (const key of report.missing) lines.push(`missing in ${from}: ${key} (its product keeps its URL)`)
  for (const { key, error } of report.failed) lines.push(`could not copy ${key}: ${error} (its product keeps its URL; run again)`)
  return lines
}
