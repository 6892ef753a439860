/**
 * Thrown by an image host when a key is already taken: a stored image is never overwritten. The
 * product service then stores the upload under a fresh key.
 */
export class ImageKeyTakenError extends Error {
  constructor(key: string) {
    super(`Image key already exists: ${key}`)
    this.name = 'ImageKeyTakenError'
  }
}
