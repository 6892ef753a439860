import type { Readable } from 'node:stream'
import type { Config } from '../../config.js'
import { createLocalImageHost } from './local-image-host.js'
import { s3PublicUrl, type S3Config } from './s3-public-url.js'

/** An object an image host holds, as its listing describes it. */
export interface StoredObject {
  readonly key: string
  readonly size: number
  readonly lastModified: Date
}

/** Where product images live: the service only stores, deletes and links them by key (`products/<name>`). */
export interface ImageHost {
  /** Stores `body` under `key`; rejects when the host fails. `size` is the byte length when known. */
  store(key: string, body: Readable, contentType: string, size?: number): Promise<void>
  /** Removes the object under `key`; a missing object is not an error. */
  delete(key: string): Promise<void>
  /** The absolute URL clients use to fetch `key`. */
  publicUrl(key: string): string
  /** Every object whose key starts with `prefix` (a folder such as `products/`), in no particular order. */
  list(prefix: string): AsyncIterable<StoredObject>
}

/** The image host named by the configuration (`STORAGE_DRIVER`). */
export function createImageHost(config: Pick<Config, 'storage' | 'publicUrl'>): ImageHost {
  const storage = config.storage
  if (storage.driver === 's3') return lazyS3ImageHost(storage)
  return createLocalImageHost(storage.uploadDir, config.publicUrl)
}

/**
 * The S3 image host, with the AWS SDK loaded at its first call: a shop that keeps its images on disk never
 * loads it, and one on S3 does not wait for it at start-up.
 */
function lazyS3ImageHost(config: S3Config): ImageHost {
  let loading: Promise<ImageHost> | undefined
  const host = () => (loading ??= import('./s3-image-host.js').then((module) => module.createS3ImageHost(config)))
  return {
    store: async (key, body, contentType, size) => (await host()).store(key, body, contentType, size),
    delete: async (key) => (await host()).delete(key),
    publicUrl: (key) => s3PublicUrl(config, key),
    list: async function* (prefix) {
      yield* (await host()).list(prefix)
    },
  }
}
