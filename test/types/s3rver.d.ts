// s3rver ships no types; just what the s3 image-host test uses.
declare module 's3rver' {
  interface S3rverOptions {
    address?: string
    port?: number
    directory: string
    silent?: boolean
    configureBuckets?: Array<{ name: string; configs: unknown[] }>
  }
  export default class S3rver {
    constructor(options: S3rverOptions)
    run(): Promise<{ address: string; port: number }>
    close(): Promise<void>
  }
}
