import multipart from '@fastify/multipart'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { messages } from '../../shared/errors.js'
import { ErrorResponse, IdParams, MessageResponse, type SchemaTypes } from '../../shared/validation.js'
import type { ImageHost } from '../images/image-host.js'
import { IMAGE_BATCH_LIMITS, type ImageBatch, prepareUploadSpool, readImageBatch } from '../images/image-upload.js'
import { AddImagesBody, ImageParams, ReorderImagesBody, UpdateImageBody } from './product-images.schemas.js'
import { auditSource } from '../staff/audit-log.js'
import * as service from './product-images.service.js'
import { ProductImage } from './products.schemas.js'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 422: ErrorResponse }
const ImageList = { type: 'array', items: ProductImage } as const
const NO_FILES: ImageBatch = { images: [], stray: null }

/** A product's images (admin): several uploaded at once, their alt text and order, one removed. */
export async function productImagesRoutes(fastify: FastifyInstance, options: { config: Config; images: ImageHost }): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>()
  // Files are read as streams and spooled to disk, never attached to the body (as on the product form).
  await app.register(multipart, { limits: IMAGE_BATCH_LIMITS, throwFileSizeLimit: false })
  const { uploadTmpDir } = options.config
  await prepareUploadSpool(uploadTmpDir, app.log)

  const tags = ['products']
  const security = [{ bearerAuth: [] }]
  const config = { permission: 'catalog:write' as const, invalidates: ['catalog' as const] }
  const context = (request: FastifyRequest): service.ProductImagesContext => ({
    db: app.db,
    dialect: app.dialect,
    images: options.images,
    events: app.outbox,
    log: request.log,
    maxImages: options.config.maxImagesPerProduct,
    audit: auditSource(request),
  })

  app.post('/products/:id/images', {
    config,
    schema: {
      tags,
      summary: 'Add 1 to 10 images to a product, all or none (admin, multipart/form-data); answers all its images',
      security,
      params: IdParams,
      body: AddImagesBody,
      response: { 201: ImageList, 400: ErrorResponse, 413: ErrorResponse, 500: ErrorResponse, ...errors },
    },
    handler: async (request, reply) => {
      // Anything but a form brings no file: the documented 400.
      const batch = request.isMultipart() ? await readImageBatch(request, uploadTmpDir) : NO_FILES
      return reply.code(201).send(await service.addImages(context(request), request.params.id, batch))
    },
  })

  app.put('/products/:id/images/order', {
    config,
    schema: {
      tags,
      summary: 'Put the images of a product in a new order; the first is the main image (admin)',
      security,
      params: IdParams,
      body: ReorderImagesBody,
      response: { 200: ImageList, ...errors },
    },
    handler: async (request) => service.reorderImages(context(request), request.params.id, request.body.imageIds),
  })

  app.patch('/products/:id/images/:imageId', {
    config,
    schema: {
      tags,
      summary: 'Change an image’s alt text or place (admin)',
      security,
      params: ImageParams,
      body: UpdateImageBody,
      response: { 200: ProductImage, ...errors },
    },
    handler: async (request) => service.updateImage(context(request), request.params.id, request.params.imageId, request.body),
  })

  app.delete('/products/:id/images/:imageId', {
    config,
    schema: {
      tags,
      summary: 'Remove an image and its file; never the last of a product that is not a draft (admin)',
      security,
      params: ImageParams,
      response: { 200: MessageResponse, ...errors },
    },
    handler: async (request) => {
      await service.deleteImage(context(request), request.params.id, request.params.imageId)
      return { message: messages.imageDeleted }
    },
  })
}
