import { DeleteObjectCommand, ListObjectsCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import type { Readable } from 'node:stream'
import type { ImageHost } from './image-host.js'
import { ImageKeyTakenError } from './image-key-taken.js'
import { s3PublicUrl, type S3Config } from './s3-public-url.js'

/**
 * Any S3-compatible store (AWS S3, MinIO, R2, ...); `imageUrl` is `S3_PUBLIC_URL` + key.
 * `listPageSize` is how many keys one listing request asks for (S3 gives at most 1,000).
 */
export function createS3ImageHost(config: S3Config, client = createS3Client(config), listPageSize = 1000): ImageHost {
  // The whole call, every attempt and the answer's body included: a store that trickles is cut off too.
  const bounded = () => ({ abortSignal: AbortSignal.timeout(config.requestTimeoutMs) })
  return {
    async store(key: string, body: Readable, contentType: string, size?: number) {
      try {
        await client.send(
          new PutObjectCommand({
            Bucket: config.bucket,
            Key: key,
            Body: body,
            ContentType: contentType,
            CacheControl: 'public, max-age=31536000, immutable',
            // A conditional write: the store refuses a key that exists (412), or that another writer is
            // writing right now (409), so two instances never overwrite each other's image.
            IfNoneMatch: '*',
            ...(size !== undefined ? { ContentLength: size } : {}),
          }),
          bounded(),
        )
      } catch (error) {
        // A request cut short (a timeout) leaves the body half read: close the file behind it now.
        body.destroy()
        const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
        if (status === 412 || status === 409) throw new ImageKeyTakenError(key)
        throw error
      }
    },
    async delete(key: string) {
      await client.send(new DeleteObjectCommand({ Bucket: config.bucket, Key: key }), bounded())
    },
    publicUrl(key: string) {
      return s3PublicUrl(config, key)
    },
    async *list(prefix: string) {
      // ListObjects (v1), paged by the last key seen: every S3-compatible store has it. (s3rver's v2
      // continuation tokens need DES, which the OpenSSL of Node 17 and later no longer offers.)
      let marker: string | undefined
      for (;;) {
        const page = await client.send(
          new ListObjectsCommand({ Bucket: config.bucket, Prefix: prefix, MaxKeys: listPageSize, ...(marker ? { Marker: marker } : {}) }),
          bounded(),
        )
        const contents = page.Contents ?? []
        for (const object of contents) {
          if (object.Key && object.LastModified) yield { key: object.Key, size: object.Size ?? 0, lastModified: object.LastModified }
        }
        marker = page.NextMarker ?? contents.at(-1)?.Key
        if (!page.IsTruncated || !marker) return
      }
    },
  }
}

/** The service logs each failed call itself, with its key; the SDK's own console warnings would only repeat it. */
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {} }

/**
 * An S3 client whose attempts are bounded: the connection (S3_CONNECT_TIMEOUT_MS) and silence on the
 * socket (S3_SOCKET_TIMEOUT_MS), S3_MAX_ATTEMPTS of them; each call also gets S3_REQUEST_TIMEOUT_MS
 * in all (`bounded()` above). The SDK never retries an upload: its body is a stream, read once.
 */
export function createS3Client(config: S3Config): S3Client {
  return new S3Client({
    region: config.region,
    maxAttempts: config.maxAttempts,
    requestHandler: {
      connectionTimeout: config.connectTimeoutMs,
      socketTimeout: config.socketTimeoutMs,
    },
    logger: quietLogger,
    forcePathStyle: config.forcePathStyle,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    ...(config.accessKeyId && config.secretAccessKey ? { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } } : {}),
    // Checksums only when an operation needs them: many S3-compatible stores reject the
    // aws-chunked bodies the SDK sends by default.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
}
