import { DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import type { Readable } from 'node:stream'
import type { StorageConfig } from '../../config.js'
import type { ImageHost } from './image-host.js'
import { ImageKeyTakenError } from './image-key-taken.js'

type S3Config = Extract<StorageConfig, { driver: 's3' }>

/** Any S3-compatible store (AWS S3, MinIO, R2, ...); `imageUrl` is `S3_PUBLIC_URL` + key. */
export function createS3ImageHost(config: S3Config, client = createS3Client(config)): ImageHost {
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
        )
      } catch (error) {
        const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
        if (status === 412 || status === 409) throw new ImageKeyTakenError(key)
        throw error
      }
    },
    async delete(key: string) {
      await client.send(new DeleteObjectCommand({ Bucket: config.bucket, Key: key }))
    },
    publicUrl(key: string) {
      return `${config.publicUrl}/${key.split('/').map(encodeURIComponent).join('/')}`
    },
  }
}

export function createS3Client(config: S3Config): S3Client {
  return new S3Client({
    region: config.region,
    forcePathStyle: config.forcePathStyle,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    ...(config.accessKeyId && config.secretAccessKey
      ? { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } }
      : {}),
    // Checksums only when an operation needs them: many S3-compatible stores reject the
    // aws-chunked bodies the SDK sends by default.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
}
