import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import type { FastifyInstance } from 'fastify'
import { AppError } from '../../shared/errors.js'
import { ErrorResponse } from '../../shared/validation.js'
import { IMAGE_CONTENT_TYPES, imageContentType } from './content-type.js'
import { localImagePath } from './local-image-host.js'

/** Stored names are `<timestamp>-<sanitized name>`: nothing else is ever served. */
const STORED_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,200}$/

/**
 * Serves the local image host's files at `/uploads/products/<name>`; keys are never reused, so they cache forever.
 * With `movedTo` (the service runs on S3), a file still in the folder was moved by `copy-images --to s3`: the old
 * URL answers 301 to the same key in the bucket, until the folder is deleted.
 */
export async function uploadsRoutes(app: FastifyInstance, options: { uploadDir: string; movedTo?: (key: string) => string }): Promise<void> {
  app.get<{ Params: { name: string } }>('/uploads/products/:name', {
    schema: {
      tags: ['products'],
      summary: 'A product image (local image host)',
      params: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
      response: {
        // The file's bytes, with its media type: documented only (a file is sent as it is, never serialized).
        200: {
          description: 'The image',
          content: Object.fromEntries(IMAGE_CONTENT_TYPES.map((type) => [type, { schema: { type: 'string', format: 'binary' } }])),
        },
        301: { description: 'Moved to the S3 bucket (after `copy-images --to s3`); `Location` has its URL', type: 'null' },
        404: ErrorResponse,
      },
    },
    handler: async (request, reply) => {
      const { name } = request.params
      const type = imageContentType(name)
      if (!STORED_NAME.test(name) || !type) throw new AppError(404, 'imageNotFound')
      const path = localImagePath(options.uploadDir, `products/${name}`)
      const info = await stat(path).catch(() => null)
      if (!info?.isFile()) throw new AppError(404, 'imageNotFound')
      if (options.movedTo)
        return reply
          .code(301)
          .header('Location', options.movedTo(`products/${name}`))
          .send()
      return reply
        .header('Content-Type', type)
        .header('Content-Length', info.size)
        .header('X-Content-Type-Options', 'nosniff')
        .header('Cache-Control', 'public, max-age=31536000, immutable')
        .header('Last-Modified', info.mtime.toUTCString())
        .send(createReadStream(path))
    },
  })
}
