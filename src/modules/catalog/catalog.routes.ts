import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.js'
import { createImageHost, type ImageHost } from '../images/image-host.js'
import { uploadsRoutes } from '../images/images.routes.js'
import { categoriesRoutes } from './categories.routes.js'
import { productImagesRoutes } from './product-images.routes.js'
import { productsRoutes } from './products.routes.js'
import { variantsRoutes } from './variants.routes.js'

/** The catalog: categories, products and, with the local image host, the image files themselves. */
export async function catalogRoutes(app: FastifyInstance, options: { config: Config; imageHost?: ImageHost }): Promise<void> {
  const images = options.imageHost ?? createImageHost(options.config)
  await app.register(categoriesRoutes, { config: options.config })
  await app.register(productsRoutes, { config: options.config, images })
  await app.register(variantsRoutes, { config: options.config })
  await app.register(productImagesRoutes, { config: options.config, images })
  const storage = options.config.storage
  // On S3, the old local URLs of moved images redirect to the bucket (copy-images, docs/growing.md).
  await app.register(uploadsRoutes, { uploadDir: storage.uploadDir, ...(storage.driver === 's3' ? { movedTo: (key: string) => images.publicUrl(key) } : {}) })
}
