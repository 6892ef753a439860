/**
 * The settings of the image host on s3rver (the S3 stand-in the *.s3.test.ts files start on 127.0.0.1): the bucket
 * at `endpoint`, path-style, s3rver's fixed credentials. `publicUrl` is where images are read from (the bucket's
 * own address unless a test points it elsewhere).
 */
export function s3Env(endpoint: string, options: { bucket?: string; publicUrl?: string } = {}): Record<string, string> {
  const bucket = options.bucket ?? 'shop-images'
  return {
    STORAGE_DRIVER: 's3',
    S3_BUCKET: bucket,
    S3_ENDPOINT: endpoint,
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    S3_FORCE_PATH_STYLE: 'true',
    S3_PUBLIC_URL: options.publicUrl ?? `${endpoint}/${bucket}`,
  }
}
