import { unwrap } from './answers'
import type { Api } from './resource'
import type { components } from './schema'

/** One of a product's images: `position` 0 is its main image (the product's `imageUrl`). */
export type ProductImage = components['schemas']['ProductImage']

/** The fields of the images' forms: a problem naming one of them is shown beside it. */
const IMAGE_FIELDS = ['images', 'alt', 'position', 'imageIds'] as const
/** How many files one POST /products/:id/images takes (the API's limit). */
export const UPLOAD_MAX = 10

/** The multipart body of an upload: every file in the field `images`, in the order picked. */
function filesForm(body: { images?: Blob[] }): FormData {
  const form = new FormData()
  for (const file of body.images ?? []) form.append('images', file, file instanceof File ? file.name : 'image')
  return form
}

/** POST /products/:id/images: 1 to 10 files in one request, all or none. Answers every image of the product, in order. */
export async function addImages(api: Api, productId: number, files: readonly File[]): Promise<ProductImage[]> {
  const result = await api.POST('/products/{id}/images', { params: { path: { id: productId } }, body: { images: [...files] }, bodySerializer: filesForm })
  return unwrap(result, IMAGE_FIELDS)
}

/** PATCH /products/:id/images/:imageId with the alt text. Answers the image. */
export async function updateImageAlt(api: Api, productId: number, imageId: number, alt: string): Promise<ProductImage> {
  return unwrap(await api.PATCH('/products/{id}/images/{imageId}', { params: { path: { id: productId, imageId } }, body: { alt } }), IMAGE_FIELDS)
}

/** DELETE /products/:id/images/:imageId (never the last image of a product that is not a draft). */
export async function deleteImage(api: Api, productId: number, imageId: number): Promise<void> {
  unwrap(await api.DELETE('/products/{id}/images/{imageId}', { params: { path: { id: productId, imageId } } }))
}

/** PUT /products/:id/images/order: every image once, in the new order. Answers the images in that order. */
export async function reorderImages(api: Api, productId: number, imageIds: readonly number[]): Promise<ProductImage[]> {
  return unwrap(await api.PUT('/products/{id}/images/order', { params: { path: { id: productId } }, body: { imageIds: [...imageIds] } }), IMAGE_FIELDS)
}

/** The ids in a new order: `id` moved to `index` (the others keep their order). */
export function moved(ids: readonly number[], id: number, index: number): number[] {
  const rest = ids.filter((other) => other !== id)
  const at = Math.max(0, Math.min(index, rest.length))
  return [...rest.slice(0, at), id, ...rest.slice(at)]
}
