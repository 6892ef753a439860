import type { Config } from './index.js'
import type { Reader } from './read.js'

/** The catalog: the product read cache's memory, and the stock below which a product is "low on stock". */
export function readCatalog(read: Reader): Pick<Config, 'catalogCacheMaxBytes' | 'lowStockThreshold'> {
  return {
    catalogCacheMaxBytes: read.integer('CATALOG_CACHE_MAX_BYTES', 64 * 1024 * 1024, 0, 16 * 1024 * 1024 * 1024),
    lowStockThreshold: read.integer('LOW_STOCK_THRESHOLD', 5, 0, 2_147_483_647),
  }
}
