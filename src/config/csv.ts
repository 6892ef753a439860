import type { Config } from './index.js'
import type { Reader } from './read.js'

/** The product import's limits: how many records a file may have, and how many bytes (past those: 413). */
export function readCsv(read: Reader): Pick<Config, 'importMaxRows' | 'importMaxBytes'> {
  return {
    importMaxRows: read.integer('IMPORT_MAX_ROWS', 10_000, 1, 1_000_000),
    importMaxBytes: read.integer('IMPORT_MAX_BYTES', 20 * 1024 * 1024, 1, 1024 * 1024 * 1024),
  }
}
