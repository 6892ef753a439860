import { documentOnly } from '../../shared/validation.js'
import { MAX_IMAGE_BATCH } from '../images/image-upload.js'

/** An image's alternative text: at most this many characters (`""` by default). */
export const ALT_MAX = 500
/** The most images a product may ever have (MAX_IMAGES_PER_PRODUCT's range): an order lists no more. */
const IMAGES_MAX = 100
const INT_MAX = 2_147_483_647
const id = { type: 'integer', minimum: 1, maximum: INT_MAX } as const

export const ImageParams = { type: 'object', required: ['id', 'imageId'], properties: { id, imageId: id } } as const

const file = { type: 'string', format: 'binary' } as const

/** POST /products/:id/images, for /openapi.json: the route streams the form itself (readImageBatch). */
export const AddImagesForm = documentOnly({
  type: 'object',
  description: `1 to ${MAX_IMAGE_BATCH} files, each JPEG, PNG, WebP or GIF (.jpg, .jpeg, .png, .webp, .gif) of at most 5 MiB; no other field.`,
  properties: {
    images: { type: 'array', minItems: 1, maxItems: MAX_IMAGE_BATCH, items: file, description: 'The files, in the order they are to follow.' },
    image: { ...file, description: 'A file may also go in `image`, as in the product form.' },
  },
} as const)

export const AddImagesBody = { content: { 'multipart/form-data': { schema: AddImagesForm } } } as const

export const UpdateImageBody = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    alt: { type: 'string', maxLength: ALT_MAX, description: 'The alternative text, as sent; `""` for none.' },
    position: { type: 'integer', minimum: 0, maximum: INT_MAX, description: 'The new place among the images, from 0 (the main image; past the end: last).' },
  },
} as const

export const ReorderImagesBody = {
  type: 'object',
  required: ['imageIds'],
  additionalProperties: false,
  properties: {
    imageIds: {
      type: 'array',
      maxItems: IMAGES_MAX,
      items: id,
      errorMessages: { maxItems: `imageIds must contain no more than ${IMAGES_MAX} elements` },
      description: 'Every image of the product, once each, in the new order (the first is the main image).',
    },
  },
} as const
