import { extname } from 'node:path'

const CONTENT_TYPES: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
}

/** Every media type a stored image is served with. */
export const IMAGE_CONTENT_TYPES: readonly string[] = [...new Set(Object.values(CONTENT_TYPES))]

/** The media type of a stored image, from its name's extension; undefined for any other extension. */
export function imageContentType(name: string): string | undefined {
  return CONTENT_TYPES[extname(name).toLowerCase()]
}
