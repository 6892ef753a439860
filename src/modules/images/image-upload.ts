import { randomUUID } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, readdir, rm, stat } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { MultipartFile } from '@fastify/multipart'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { AppError, messages } from '../../shared/errors.js'
import { ValidationError } from '../../shared/validation.js'

/** The image rules of the API (docs/api.md, Products). */
export const IMAGE_FIELD = 'image'
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024
export const ALLOWED_IMAGE_TYPES = ['image/jpeg', 'image/jpg', 'image/png', 'image/webp', 'image/gif'] as const
export const ALLOWED_IMAGE_EXTENSIONS = ['.jpg', '.jpeg', '.png', '.webp', '.gif'] as const

/** Limits for @fastify/multipart on product forms: one file of at most 5 MiB, a handful of small text fields. */
export const PRODUCT_FORM_LIMITS = {
  fileSize: MAX_IMAGE_BYTES,
  files: 1,
  fields: 20,
  parts: 21,
  fieldSize: 64 * 1024,
  fieldNameSize: 100,
  headerPairs: 100,
} as const

/** An uploaded image, spooled to a temporary file while it streamed in (never held whole in memory). */
export interface SpooledImage {
  readonly path: string
  readonly size: number
  readonly contentType: string
  /** The sanitized base name, as used in the stored key. */
  readonly fileName: string
}

/** A product form as read from multipart: text fields (every value sent, in order) and the image. */
export interface ProductForm {
  readonly fields: Record<string, string[]>
  readonly image: SpooledImage | null
  /** The name of a file field other than `image`, when one was sent. */
  readonly strayFileField: string | null
}

/** Drops any directory part, then turns every character outside `A-Za-z0-9._-` into `_`. */
export function sanitizeFileName(fileName: string): string {
  const base = fileName.split(/[/\\]/).pop() ?? ''
  const safe = base.replace(/[^A-Za-z0-9._-]/g, '_')
  // Keep keys short; the end of the name carries the extension.
  return safe.length > 100 ? safe.slice(-100) : safe
}

let lastTimestamp = 0

/** Strictly increasing milliseconds in this process, so two uploads of one name in one millisecond get two keys. */
function nextTimestamp(): number {
  lastTimestamp = Math.max(Date.now(), lastTimestamp + 1)
  return lastTimestamp
}

/** The stored name of an image: `products/<timestamp>-<sanitized base name>`. */
export function productImageKey(fileName: string): string {
  return `products/${nextTimestamp()}-${sanitizeFileName(fileName)}`
}

/** The content type to store for an accepted MIME type (`image/jpg` is not a registered type). */
function storedContentType(mime: string): string {
  return mime === 'image/jpg' ? 'image/jpeg' : mime
}

/** Applies the MIME and extension rules to a file part; both failures are the API's documented 500s. */
export function checkImageRules(mime: string, fileName: string): void {
  if (!(ALLOWED_IMAGE_TYPES as readonly string[]).includes(mime.toLowerCase())) {
    throw new AppError(500, 'invalidImageType', mime)
  }
  const ext = extname(fileName.split(/[/\\]/).pop() ?? '')
  if (!(ALLOWED_IMAGE_EXTENSIONS as readonly string[]).includes(ext.toLowerCase())) {
    throw new AppError(500, 'invalidImageExtension', ext)
  }
}

const SPOOL_PREFIX = 'shop-upload-'
/** A spooled file older than this was left by a process that died mid-upload: no upload takes an hour. */
const STALE_SPOOL_MS = 60 * 60 * 1000

/**
 * Creates the spool directory (`UPLOAD_TMP_DIR`) at start-up, so that a directory that cannot be
 * written fails the start and not the first upload, and removes what a crashed process left there.
 */
export async function prepareUploadSpool(dir: string, log: FastifyBaseLogger): Promise<void> {
  await mkdir(dir, { recursive: true })
  const now = Date.now()
  let removed = 0
  for (const name of await readdir(dir)) {
    if (!name.startsWith(SPOOL_PREFIX)) continue
    const path = join(dir, name)
    const info = await stat(path).catch(() => null)
    if (info && now - info.mtimeMs > STALE_SPOOL_MS) {
      await rm(path, { force: true })
      removed += 1
    }
  }
  if (removed > 0) log.info({ dir, removed }, 'removed upload spool files left by an earlier process')
}

/** Removes the temporary file of a spooled image; one that is not there (or whose directory is gone) is fine. */
export async function discardSpooledImage(image: SpooledImage | null): Promise<void> {
  if (!image) return
  await rm(image.path, { force: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOTDIR') throw error
  })
}

/** Multipart parser failures, as the client errors they are. */
function multipartError(error: unknown, tooManyFiles: () => ValidationError): unknown {
  if (error instanceof AppError || error instanceof ValidationError) return error
  const code = (error as { code?: string } | null)?.code
  switch (code) {
    case 'FST_FILES_LIMIT':
      return tooManyFiles()
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return new AppError(413, 'bodyTooLarge')
    case 'FST_PROTO_VIOLATION':
      // A field named after a property of every object (`__proto__`, `constructor`): a 422 about the form as a whole.
      return new ValidationError(messages.malformedMultipart, 'body')
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new AppError(415, 'unsupportedMediaType')
    default:
      // busboy's "Unexpected end of form", "Malformed part header", a missing boundary...
      if (error instanceof Error && !('statusCode' in error && (error as { statusCode?: number }).statusCode === 500)) {
        return new AppError(400, 'malformedMultipart')
      }
      return error
  }
}

/** A form's spooling under way: the file being written (removed if the form fails halfway), and a disk failure. */
interface Spooling {
  current: SpooledImage | null
  /** The file system's own failure (ENOSPC, EIO, EACCES...: a system error, with a syscall), told apart from the
   * client's malformed body, which the pipeline also hands to the write stream. */
  diskError: Error | null
}

/** Streams a file part into a new spool file, once the image's own rules passed on its headers. */
async function spoolPart(part: MultipartFile, spoolDir: string, spooling: Spooling): Promise<SpooledImage> {
  checkImageRules(part.mimetype, part.filename)
  const path = join(spoolDir, `${SPOOL_PREFIX}${randomUUID()}`)
  const out = createWriteStream(path, { flags: 'wx' })
  out.once('error', (error: NodeJS.ErrnoException) => {
    if (typeof error.syscall === 'string') spooling.diskError = error
  })
  const image = { path, size: 0, contentType: storedContentType(part.mimetype.toLowerCase()), fileName: sanitizeFileName(part.filename) }
  spooling.current = image
  await pipeline(part.file, out)
  // busboy stops passing bytes at the limit and marks the stream truncated.
  if (part.file.truncated) throw new AppError(500, 'imageTooLarge')
  spooling.current = null
  return { ...image, size: out.bytesWritten }
}

/** Reads and drops a file part nobody wants. */
async function skipPart(part: MultipartFile): Promise<void> {
  part.file.resume()
  await new Promise<void>((done) => part.file.once('end', done).once('error', () => done()))
}

/**
 * The failure of a form that was still arriving: its spooled files removed (the answer is about what went wrong
 * with the upload, not about the clean-up after it), a disk failure as the server's 500, the parser's as the
 * client's error.
 */
async function failedUpload(
  request: FastifyRequest,
  done: readonly SpooledImage[],
  spooling: Spooling,
  error: unknown,
  tooManyFiles: () => ValidationError,
): Promise<never> {
  for (const image of spooling.current ? [...done, spooling.current] : done) {
    await discardSpooledImage(image).catch((cleanup: unknown) => request.log.warn({ err: cleanup }, 'could not remove an upload spool file'))
  }
  if (spooling.diskError) {
    request.log.error({ err: spooling.diskError }, 'could not spool an uploaded image to UPLOAD_TMP_DIR')
    throw new AppError(500, 'internal')
  }
  throw multipartError(error, tooManyFiles)
}

/**
 * Reads a multipart product form as it streams in. The image's own rules are checked on its
 * headers; its bytes go to a temporary file in `spoolDir` and are cut off at 5 MiB (500 when the
 * limit is hit). Nothing reaches the image host here: the caller stores the image once every other
 * check passed. A spool file that cannot be written (a full disk) is the server's fault: a 500.
 */
export async function readProductForm(request: FastifyRequest, spoolDir: string): Promise<ProductForm> {
  const fields = Object.create(null) as Record<string, string[]>
  let image: SpooledImage | null = null
  let strayFileField: string | null = null
  const spooling: Spooling = { current: null, diskError: null }
  try {
    for await (const part of request.parts({ limits: PRODUCT_FORM_LIMITS })) {
      if (part.type === 'field') {
        const list = fields[part.fieldname] ?? (fields[part.fieldname] = [])
        list.push(typeof part.value === 'string' ? part.value : String(part.value))
        continue
      }
      // A browser sends an empty file part when no file was chosen: that is "no image".
      if (part.fieldname !== IMAGE_FIELD || !part.filename) {
        if (part.fieldname !== IMAGE_FIELD) strayFileField = part.fieldname
        await skipPart(part)
        continue
      }
      image = await spoolPart(part, spoolDir, spooling)
    }
  } catch (error) {
    return failedUpload(request, image ? [image] : [], spooling, error, () => new ValidationError(messages.singleImageFile, 'image'))
  }
  return { fields, image, strayFileField }
}

/** POST /products/:id/images: its files go in `images`, or in `image` as in the product form; 1 to 10 of them. */
export const IMAGE_BATCH_FIELDS: readonly string[] = ['images', IMAGE_FIELD]
export const MAX_IMAGE_BATCH = 10

/** Limits for the images form: ten files of at most 5 MiB, and no text field (a few are read, to be refused). */
export const IMAGE_BATCH_LIMITS = { ...PRODUCT_FORM_LIMITS, files: MAX_IMAGE_BATCH, parts: MAX_IMAGE_BATCH + PRODUCT_FORM_LIMITS.fields } as const

/** The images form as read: its files in the order sent, and the first part it does not take. */
export interface ImageBatch {
  readonly images: readonly SpooledImage[]
  /** A text field (`field`) or a file under another name (`file`): the form takes only the files. */
  readonly stray: { readonly kind: 'field' | 'file'; readonly name: string } | null
}

/**
 * Reads the images form as it streams in, each file as readProductForm reads the product's image (its rules, the
 * 5 MiB cut, spooled to `spoolDir`, never held in memory): one file refused removes every file spooled before it.
 * An eleventh file is `422 images must contain no more than 10 elements`.
 */
export async function readImageBatch(request: FastifyRequest, spoolDir: string): Promise<ImageBatch> {
  const images: SpooledImage[] = []
  let stray: ImageBatch['stray'] = null
  const spooling: Spooling = { current: null, diskError: null }
  try {
    for await (const part of request.parts({ limits: IMAGE_BATCH_LIMITS })) {
      if (part.type === 'field') {
        stray ??= { kind: 'field', name: part.fieldname }
        continue
      }
      // An empty file part (no file chosen in a browser's form) is no image.
      if (!IMAGE_BATCH_FIELDS.includes(part.fieldname) || !part.filename) {
        if (!IMAGE_BATCH_FIELDS.includes(part.fieldname)) stray ??= { kind: 'file', name: part.fieldname }
        await skipPart(part)
        continue
      }
      images.push(await spoolPart(part, spoolDir, spooling))
    }
  } catch (error) {
    return failedUpload(request, images, spooling, error, () => new ValidationError(messages.tooManyImageFiles(MAX_IMAGE_BATCH), 'images'))
  }
  return { images, stray }
}

/** Removes the temporary files of a batch (see discardSpooledImage). */
export async function discardSpooledImages(images: readonly SpooledImage[]): Promise<void> {
  for (const image of images) await discardSpooledImage(image)
}
