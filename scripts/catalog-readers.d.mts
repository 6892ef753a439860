/** The test files that read the catalog over HTTP (scripts/catalog-readers.mjs). */
export function catalogReaders(dir?: string): string[]
