import { isAbsolute, join, resolve } from 'node:path'
import type { Config } from './index.js'
import type { Reader } from './read.js'

export type StorageConfig =
  | { readonly driver: 'local'; readonly uploadDir: string }
  | {
      readonly driver: 's3'
      /** The local image host's folder: files left there since `copy-images --to s3` are redirected to the bucket. */
      readonly uploadDir: string
      readonly bucket: string
      readonly region: string
      readonly endpoint: string | null
      readonly accessKeyId: string | null
      readonly secretAccessKey: string | null
      readonly publicUrl: string
      readonly forcePathStyle: boolean
      /** Bounded waits toward the store: connect and silence on the socket per attempt, a whole call (all attempts). */
      readonly connectTimeoutMs: number
      readonly socketTimeoutMs: number
      readonly requestTimeoutMs: number
      /** Attempts per call; an upload (a streamed body) is never retried by the SDK. */
      readonly maxAttempts: number
    }

/** The image host (local folder or S3), and where an upload is spooled before it reaches it. */
export function readStorage(read: Reader, { dataDir }: Pick<Config, 'dataDir'>): Pick<Config, 'storage' | 'uploadTmpDir'> {
  return {
    storage: Object.freeze(readImageHost(read, dataDir)),
    // Under DATA_DIR rather than os.tmpdir(): /tmp is often a small RAM disk (containers, systemd's
    // PrivateTmp), and DATA_DIR is the volume the operator sized and watches (docs/catalog.md).
    uploadTmpDir: resolve(read.string('UPLOAD_TMP_DIR') ?? join(dataDir, 'tmp')),
  }
}

function readImageHost(read: Reader, dataDir: string): StorageConfig {
  const driver = read.string('STORAGE_DRIVER') ?? 'local'
  const dir = read.string('UPLOAD_DIR') ?? join(dataDir, 'uploads')
  const uploadDir = isAbsolute(dir) ? dir : resolve(dir)
  if (driver === 'local') return { driver: 'local', uploadDir }
  if (driver !== 's3') {
    read.problem(`STORAGE_DRIVER must be local or s3 (got "${driver}")`)
    return { driver: 'local', uploadDir: join(dataDir, 'uploads') }
  }
  const bucket = read.string('S3_BUCKET')
  const publicUrl = read.string('S3_PUBLIC_URL')
  if (bucket === undefined) read.problem('S3_BUCKET is required when STORAGE_DRIVER=s3')
  if (publicUrl === undefined || !/^https?:\/\//.test(publicUrl)) read.problem('S3_PUBLIC_URL must be an absolute http(s) URL when STORAGE_DRIVER=s3')
  const endpoint = read.string('S3_ENDPOINT') ?? null
  if (endpoint !== null && !/^https?:\/\//.test(endpoint)) read.problem('S3_ENDPOINT must be an http(s) URL')
  return {
    driver: 's3',
    uploadDir,
    bucket: bucket ?? '',
    region: read.string('S3_REGION') ?? 'us-east-1',
    endpoint,
    accessKeyId: read.string('S3_ACCESS_KEY_ID') ?? null,
    secretAccessKey: read.raw('S3_SECRET_ACCESS_KEY') ?? null,
    publicUrl: (publicUrl ?? '').replace(/\/+$/, ''),
    forcePathStyle: read.boolean('S3_FORCE_PATH_STYLE', false),
    // A store answers within a second; five silent seconds mean it hangs. A whole call may take longer
    // (5 MiB over a slow link), up to 30 s. Two attempts keep a delete on a hung store near 10 s.
    connectTimeoutMs: read.integer('S3_CONNECT_TIMEOUT_MS', 3000, 10, 120_000),
    socketTimeoutMs: read.integer('S3_SOCKET_TIMEOUT_MS', 5000, 10, 600_000),
    requestTimeoutMs: read.integer('S3_REQUEST_TIMEOUT_MS', 30_000, 10, 600_000),
    maxAttempts: read.integer('S3_MAX_ATTEMPTS', 2, 1, 10),
  }
}
