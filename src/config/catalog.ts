import type { Config } from './index.js'
import type { Reader } from './read.js'

/**
 * The catalog: the product read cache's memory, the stock below which a product is "low on stock", and the caps of a
 * product's options, variants and images.
 */
export function readCatalog(
  read: Reader,
): Pick<Config, 'catalogCacheMaxBytes' | 'lowStockThreshold' | 'maxOptionsPerProduct' | 'maxVariantsPerProduct' | 'maxImagesPerProduct'> {
  return {
    catalogCacheMaxBytes: read.integer('CATALOG_CACHE_MAX_BYTES', 64 * 1024 * 1024, 0, 16 * 1024 * 1024 * 1024),
    lowStockThreshold: read.integer('LOW_STOCK_THRESHOLD', 5, 0, 2_147_483_647),
    maxOptionsPerProduct: read.integer('MAX_OPTIONS_PER_PRODUCT', 3, 1, 3),
    maxVariantsPerProduct: read.integer('MAX_VARIANTS_PER_PRODUCT', 100, 1, 2048),
    maxImagesPerProduct: read.integer('MAX_IMAGES_PER_PRODUCT', 20, 1, 100),
  }
}
