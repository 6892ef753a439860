import type { StorageConfig } from '../../config.js'

export type S3Config = Extract<StorageConfig, { driver: 's3' }>

/** The URL of an image on S3: `S3_PUBLIC_URL` + its key, each segment encoded. */
export function s3PublicUrl(config: Pick<S3Config, 'publicUrl'>, key: string): string {
  return `${config.publicUrl}/${key.split('/').map(encodeURIComponent).join('/')}`
}
