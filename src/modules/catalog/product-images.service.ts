import type { Transaction } from 'kysely'
import type { Database, ProductStatus } from '../../db/database.js'
import { AppError, messages } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { discardSpooledImages, type ImageBatch } from '../images/image-upload.js'
import * as repo from './product-images.repository.js'
import { imageRowToImage, toProduct } from './product-view.js'
import { recordAudit } from '../staff/audit-log.js'
import { findProductById, updateProductById } from './products.repository.js'
import type { ProductImageView } from './products.schemas.js'
import { type CatalogContext, removeImageQuietly, storeImage } from './products.service.js'
import { lockProduct } from './variants.repository.js'

type Trx = Transaction<Database>

/** What the image writes need: the product use cases' context and MAX_IMAGES_PER_PRODUCT. */
export interface ProductImagesContext extends Omit<CatalogContext, 'limits'> {
  maxImages: number
}

/** What a change to the images says: their ids in the new order, and what else the caller wants back. */
interface ImagesChange<T> {
  order: number[]
  result: T
}

/**
 * One write to a product's images, in one transaction: the product locked (its variants, then it, as every catalog
 * write locks them), 404 when it is gone; then `change`, which answers the images' new order; then positions 0..n-1
 * in that order, the product's copy of its main image (position 0, its `imageUrl`) and its `updated_at`, and
 * `product.updated` with the product whole. Answers the images afterwards, in order.
 */
async function writeImages<T>(
  ctx: ProductImagesContext,
  productId: number,
  change: (trx: Trx, images: repo.ImageRow[], status: ProductStatus, now: string) => Promise<ImagesChange<T>>,
  /** The audit log's verb: the change is recorded on the product, its images (as answered) before and after. */
  verb: 'add_images' | 'update_image' | 'delete_image' | 'reorder_images',
): Promise<{ images: ProductImageView[]; result: T }> {
  return ctx.db.transaction().execute(async (trx) => {
    const locked = await lockProduct(trx, ctx.dialect, productId)
    if (!locked) throw new AppError(404, 'productNotFound')
    const now = nowIso()
    const before = await repo.findImages(trx, productId)
    const { order, result } = await change(trx, before, locked.status, now)
    await repo.renumberImages(trx, await repo.findImages(trx, productId), order)
    const after = await repo.findImages(trx, productId)
    const main = after[0]
    const row = await updateProductById(trx, productId, { image_key: main?.image_key ?? '', image_url: main?.url ?? '', updated_at: now })
    if (!row) throw new AppError(404, 'productNotFound')
    const product = await toProduct(trx, row)
    await ctx.events.emit(trx, { type: 'product.updated', data: product })
    await recordAudit(trx, {
      by: ctx.audit,
      action: `product.${verb}`,
      entityType: 'product',
      entityId: productId,
      before: { images: before.map(imageRowToImage) },
      after: { images: product.images },
    })
    return { images: product.images, result }
  })
}

function findImage(images: readonly repo.ImageRow[], imageId: number): repo.ImageRow {
  const image = images.find((row) => row.id === imageId)
  if (!image) throw new AppError(404, 'imageNotFound')
  return image
}

const idsOf = (images: readonly { id: number }[]) => images.map((image) => image.id)

/**
 * POST /products/:id/images: the files of `batch` (each already checked by the image rules while it arrived) become
 * the product's last images. In order: no file (400), a part the form does not take (422), the product (404), the
 * cap (409); then every file is stored, outside any transaction (one failure removes those stored before it: 500),
 * then the rows are written in one transaction, which checks the cap again under the product's lock; when it fails
 * the stored files are removed. Answers every image of the product, in order.
 */
export async function addImages(ctx: ProductImagesContext, productId: number, batch: ImageBatch): Promise<ProductImageView[]> {
  try {
    if (batch.images.length === 0) throw new AppError(400, 'imageRequired')
    const stray = batch.stray
    if (stray?.kind === 'file') throw new ValidationError(messages.strayImagesField(stray.name), stray.name)
    if (stray?.kind === 'field') throw new ValidationError(`property ${stray.name} should not exist`, stray.name)
    if (!(await findProductById(ctx.db, productId))) throw new AppError(404, 'productNotFound')
    if ((await repo.countImages(ctx.db, productId)) + batch.images.length > ctx.maxImages) throw new AppError(409, 'tooManyImages', ctx.maxImages)
    const stored: { key: string; url: string }[] = []
    try {
      for (const image of batch.images) stored.push(await storeImage(ctx, image))
      const { images } = await writeImages(
        ctx,
        productId,
        async (trx, images, _status, now) => {
          // Another upload may have added images since the check above.
          if (images.length + stored.length > ctx.maxImages) throw new AppError(409, 'tooManyImages', ctx.maxImages)
          const added = await repo.insertImages(trx, productId, stored, images.length, now)
          return { order: idsOf([...images, ...added]), result: undefined }
        },
        'add_images',
      )
      return images
    } catch (error) {
      for (const image of stored) await removeImageQuietly(ctx, image.key, 'image batch not saved')
      throw error
    }
  } finally {
    await discardSpooledImages(batch.images)
  }
}

/** `PATCH /products/:id/images/:imageId` as validated by its schema. */
export interface ImageChange {
  alt?: string
  position?: number
}

/** PATCH /products/:id/images/:imageId: its `alt`, and its place (from 0, past the end: last; 0 is the main image). */
export async function updateImage(ctx: ProductImagesContext, productId: number, imageId: number, change: ImageChange): Promise<ProductImageView> {
  const { images } = await writeImages(
    ctx,
    productId,
    async (trx, images) => {
      findImage(images, imageId)
      if (change.alt !== undefined) await repo.updateImageAlt(trx, imageId, change.alt)
      const ids = idsOf(images).filter((id) => id !== imageId)
      ids.splice(Math.min(change.position ?? images.findIndex((image) => image.id === imageId), ids.length), 0, imageId)
      return { order: ids, result: undefined }
    },
    'update_image',
  )
  return images.find((image) => image.id === imageId)!
}

/**
 * DELETE /products/:id/images/:imageId: the row goes, the variants showing it show none, the others close up; a
 * product that is not a draft keeps at least one image (409). The file is removed after the commit (a failure is
 * logged, and `images:sweep` finds it).
 */
export async function deleteImage(ctx: ProductImagesContext, productId: number, imageId: number): Promise<void> {
  const { result: key } = await writeImages(
    ctx,
    productId,
    async (trx, images, status, now) => {
      const image = findImage(images, imageId)
      if (images.length === 1 && status !== 'draft') throw new AppError(409, 'imagelessProduct')
      await repo.deleteImage(trx, imageId, now)
      return { order: idsOf(images).filter((id) => id !== imageId), result: image.image_key }
    },
    'delete_image',
  )
  await removeImageQuietly(ctx, key, 'image deleted')
}

/** PUT /products/:id/images/order: `imageIds` names every image of the product once, in the new order. */
export async function reorderImages(ctx: ProductImagesContext, productId: number, imageIds: readonly number[]): Promise<ProductImageView[]> {
  const { images } = await writeImages(
    ctx,
    productId,
    async (_trx, images) => {
      const known = new Set(idsOf(images))
      if (imageIds.length !== known.size || new Set(imageIds).size !== imageIds.length || !imageIds.every((id) => known.has(id))) {
        throw new ValidationError(messages.imageOrderInvalid, 'imageIds')
      }
      return { order: [...imageIds], result: undefined }
    },
    'reorder_images',
  )
  return images
}
