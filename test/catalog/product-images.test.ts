import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import type { Product } from '../../src/modules/catalog/products.service.js'
import { createLocalImageHost } from '../../src/modules/images/local-image-host.js'
import { testConfig, useTestApp } from '../helpers/app.js'
import { createProductViaApi, failingHost, type FilePart, makeProduct, multipart, PNG, pngPart, storedImages } from '../helpers/catalog.js'
import { bearer, type TestUser } from '../helpers/factories.js'
import { recordEvents } from '../helpers/outbox.js'

// A product's images: POST /products/:id/images (several at once, all or none), PATCH and DELETE
// /products/:id/images/:imageId, PUT /products/:id/images/order.

const uploadDir = mkdtempSync(join(tmpdir(), 'shop-uploads-'))
// The local host, wrapped so tests can make it fail on purpose.
const host = failingHost(createLocalImageHost(uploadDir, 'http://shop.test'))
const t = useTestApp({ UPLOAD_DIR: uploadDir }, { imageHost: host, outbox: { enabled: false } })
const events = recordEvents(t)

afterAll(() => {
  rmSync(uploadDir, { recursive: true, force: true })
})
beforeEach(() => {
  host.failStore = false
  host.failDelete = false
  host.afterStore = null
  host.stored.length = 0
  host.deleted.length = 0
})

interface Image {
  id: number
  url: string
  alt: string
  position: number
}

const png = (name: string, field = 'images'): FilePart => pngPart(name, field)

async function upload(productId: number, files: FilePart[], options: { user?: TestUser | null; fields?: Record<string, string> } = {}) {
  const form = await multipart(options.fields ?? {}, files)
  const user = options.user === undefined ? t.admin : options.user
  return t.app.inject({
    method: 'POST',
    url: `/products/${productId}/images`,
    headers: { ...form.headers, ...(user ? bearer(user) : {}) },
    payload: form.payload,
  })
}

const send = (method: 'PATCH' | 'PUT' | 'DELETE' | 'GET', url: string, payload?: unknown, user: TestUser | null = t.admin) =>
  t.app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }), headers: user ? bearer(user) : {} })

const getProduct = async (id: number) => (await send('GET', `/products/${id}`)).json() as Product

/** A product made through the API, with its one image stored, and `more` images added to it. */
async function productWithImages(more = 0, status = 'active'): Promise<Product> {
  const product = await createProductViaApi(t.app, t.admin, { name: 'Taza', price: '12.50', status })
  if (more > 0) {
    const res = await upload(
      product.id,
      Array.from({ length: more }, (_, i) => png(`extra-${i}.png`)),
    )
    expect(res.statusCode).toBe(201)
  }
  events.length = 0
  host.stored.length = 0
  return getProduct(product.id)
}

const imageRows = (productId: number) =>
  t.app.db.selectFrom('product_images').select(['id', 'image_key', 'url', 'alt', 'position']).where('product_id', '=', productId).orderBy('position').execute()

const productRow = (productId: number) =>
  t.app.db.selectFrom('products').select(['image_key', 'image_url', 'updated_at']).where('id', '=', productId).executeTakeFirstOrThrow()

const spoolFiles = () => readdirSync(t.config.uploadTmpDir)

/** Runs `act` and asserts it changed no image row, no stored file, no product and emitted nothing. */
async function changesNothing(productId: number, act: () => Promise<void>): Promise<void> {
  const rows = await imageRows(productId)
  const product = await productRow(productId)
  const files = storedImages(t.config)
  await act()
  expect(await imageRows(productId)).toEqual(rows)
  expect(await productRow(productId)).toEqual(product)
  expect(storedImages(t.config)).toEqual(files)
  expect(spoolFiles()).toEqual([])
  expect(events).toEqual([])
}

describe('POST /products/:id/images', () => {
  it('201 with every image of the product in order; files in `images` and `image`; the main image stays; product.updated', async () => {
    const product = await productWithImages()
    const before = await productRow(product.id)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const res = await upload(product.id, [png('b.png'), png('c.png', 'image'), png('d.png')])
    expect(res.statusCode).toBe(201)
    const images = res.json() as Image[]
    expect(images.map((i) => i.position)).toEqual([0, 1, 2, 3])
    expect(images[0]).toEqual(product.images[0])
    expect(images.slice(1).map((i) => i.url)).toEqual([
      expect.stringMatching(/^http:\/\/shop\.test\/uploads\/products\/\d{13,}-b\.png$/),
      expect.stringMatching(/-c\.png$/),
      expect.stringMatching(/-d\.png$/),
    ])
    for (const image of images) expect(Object.keys(image).sort()).toEqual(['alt', 'id', 'position', 'url'])
    expect(images.every((i) => i.alt === '')).toBe(true)
    // The rows and their files.
    const rows = await imageRows(product.id)
    expect(rows.map((r) => r.id)).toEqual(images.map((i) => i.id))
    for (const row of rows) expect(existsSync(join(uploadDir, row.image_key))).toBe(true)
    expect(spoolFiles()).toEqual([])
    // The product: same main image, a newer updated_at, and the event with the product whole.
    const after = await getProduct(product.id)
    expect(after.imageUrl).toBe(product.imageUrl)
    expect(after.images).toEqual(images)
    expect((await productRow(product.id)).image_key).toBe(before.image_key)
    expect(after.updatedAt > product.updatedAt).toBe(true)
    expect(events).toEqual([{ type: 'product.updated', data: after }])
  })

  it('a draft without images: the first file becomes its main image (imageUrl), and it may then be activated', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/products', headers: bearer(t.admin), payload: { name: 'Borrador', price: 5 } })
    expect(res.statusCode).toBe(201)
    const draft = res.json() as Product
    expect(draft.imageUrl).toBeNull()
    const added = await upload(draft.id, [png('first.png'), png('second.png')])
    expect(added.statusCode).toBe(201)
    const images = added.json() as Image[]
    const after = await getProduct(draft.id)
    expect(after.imageUrl).toBe(images[0]!.url)
    expect((await productRow(draft.id)).image_key).toBe((await imageRows(draft.id))[0]!.image_key)
    const activated = await send('PATCH', `/products/${draft.id}`, { status: 'active' })
    expect([activated.statusCode, activated.json().status]).toEqual([200, 'active'])
  })

  it('the image rules of the product form, each file alike: one refused file stores none (no row, no file, no spool)', async () => {
    const product = await productWithImages()
    const cases: Array<[FilePart[], string]> = [
      [
        [png('ok.png'), { field: 'images', filename: 'doc.pdf', type: 'application/pdf', data: PNG }],
        'Invalid file type: application/pdf. Allowed types: image/jpeg, image/jpg, image/png, image/webp, image/gif',
      ],
      [[png('ok.png'), png('ok2.png'), png('photo.bmp')], 'Invalid file extension: .bmp. Allowed extensions: .jpg, .jpeg, .png, .webp, .gif'],
      [
        [png('ok.png'), { field: 'images', filename: 'big.png', type: 'image/png', data: Buffer.alloc(5 * 1024 * 1024 + 1) }],
        'El archivo es demasiado grande. Tamaño máximo: 5MB',
      ],
    ]
    for (const [files, message] of cases) {
      await changesNothing(product.id, async () => {
        const res = await upload(product.id, files)
        expect([res.statusCode, res.json()]).toEqual([500, { error: message }])
      })
    }
    expect(host.stored).toEqual([])
  })

  it('the host failing on the second file: 500, the first file removed, no row', async () => {
    const product = await productWithImages()
    host.afterStore = async () => {
      host.failStore = true
    }
    await changesNothing(product.id, async () => {
      const res = await upload(product.id, [png('a.png'), png('b.png'), png('c.png')])
      expect([res.statusCode, res.json()]).toEqual([500, { error: 'Error al subir la imagen al servicio de alojamiento' }])
    })
    expect(host.stored).toHaveLength(1)
    expect(host.deleted).toEqual(host.stored)
  })

  it('the product deleted while its files were stored: 404, the stored files removed', async () => {
    const product = await productWithImages()
    host.afterStore = async (key) => {
      if (key.endsWith('-b.png')) await t.app.db.deleteFrom('products').where('id', '=', product.id).execute()
    }
    const res = await upload(product.id, [png('a.png'), png('b.png')])
    expect([res.statusCode, res.json()]).toEqual([404, { error: 'Producto no encontrado' }])
    expect(host.stored).toHaveLength(2)
    expect(host.deleted).toEqual(host.stored)
    for (const key of host.stored) expect(existsSync(join(uploadDir, key))).toBe(false)
    expect(await imageRows(product.id)).toEqual([])
  })

  it('400 without a file (none, an empty file part, a JSON body), before any other check', async () => {
    const product = await productWithImages()
    await changesNothing(product.id, async () => {
      const required = { error: "La imagen del producto es obligatoria (campo 'image')" }
      const none = await upload(product.id, [])
      expect([none.statusCode, none.json()]).toEqual([400, required])
      const empty = await upload(product.id, [{ field: 'images', filename: '', type: 'application/octet-stream', data: Buffer.alloc(0) }])
      expect([empty.statusCode, empty.json()]).toEqual([400, required])
      const json = await t.app.inject({ method: 'POST', url: `/products/${product.id}/images`, headers: bearer(t.admin), payload: { images: [] } })
      expect([json.statusCode, json.json()]).toEqual([400, required])
      const unknown = await upload(999999, [])
      expect([unknown.statusCode, unknown.json()]).toEqual([400, required])
    })
  })

  it('422: more than 10 files, a file under another name, a text field', async () => {
    const product = await productWithImages()
    await changesNothing(product.id, async () => {
      const eleven = await upload(
        product.id,
        Array.from({ length: 11 }, (_, i) => png(`f${i}.png`)),
      )
      expect([eleven.statusCode, eleven.json()]).toEqual([422, { error: 'images must contain no more than 10 elements' }])
      const stray = await upload(product.id, [png('a.png'), png('b.png', 'photo')])
      expect([stray.statusCode, stray.json()]).toEqual([422, { error: "Unexpected file field 'photo'; the images go in the field 'images'" }])
      const field = await upload(product.id, [png('a.png')], { fields: { alt: 'Una taza' } })
      expect([field.statusCode, field.json()]).toEqual([422, { error: 'property alt should not exist' }])
      const badId = await t.app.inject({ method: 'POST', url: '/products/abc/images', headers: bearer(t.admin) })
      expect([badId.statusCode, badId.json()]).toEqual([422, { error: 'id must be an integer number' }])
    })
    expect(host.stored).toEqual([])
  })

  it('10 files at once are fine', async () => {
    const product = await productWithImages()
    const res = await upload(
      product.id,
      Array.from({ length: 10 }, (_, i) => png(`f${i}.png`)),
    )
    expect(res.statusCode).toBe(201)
    expect(res.json()).toHaveLength(11)
  })

  it('404 for an unknown product; nothing is stored', async () => {
    const res = await upload(999999, [png('a.png')])
    expect([res.statusCode, res.json()]).toEqual([404, { error: 'Producto no encontrado' }])
    expect(host.stored).toEqual([])
    expect(spoolFiles()).toEqual([])
  })
})

describe('401 and 403 on every image write', () => {
  it('anonymous: 401; a customer: 403; nothing changes', async () => {
    const product = await productWithImages(1)
    const [first, second] = product.images
    const writes: Array<[string, (user: TestUser | null) => ReturnType<typeof send>]> = [
      ['POST', (user) => upload(product.id, [png('a.png')], { user })],
      ['PATCH', (user) => send('PATCH', `/products/${product.id}/images/${first!.id}`, { alt: 'x' }, user)],
      ['PUT', (user) => send('PUT', `/products/${product.id}/images/order`, { imageIds: [second!.id, first!.id] }, user)],
      ['DELETE', (user) => send('DELETE', `/products/${product.id}/images/${second!.id}`, undefined, user)],
    ]
    await changesNothing(product.id, async () => {
      for (const [method, write] of writes) {
        const anonymous = await write(null)
        expect([method, anonymous.statusCode, anonymous.json()]).toEqual([method, 401, { error: 'Unauthorized - No user found' }])
        const customer = await write(t.customer)
        expect([method, customer.statusCode, customer.json()]).toEqual([method, 403, { error: 'Forbidden - Requires one of the following roles: admin' }])
      }
    })
  })
})

describe('PATCH /products/:id/images/:imageId', () => {
  it('alt: 200 with the image alone; the product shows it; product.updated', async () => {
    const product = await productWithImages(1)
    const target = product.images[1]!
    const res = await send('PATCH', `/products/${product.id}/images/${target.id}`, { alt: 'Taza azul, de frente' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ...target, alt: 'Taza azul, de frente' })
    const after = await getProduct(product.id)
    expect(after.images[1]).toEqual(res.json())
    expect(after.updatedAt > product.updatedAt).toBe(true)
    expect(events).toEqual([{ type: 'product.updated', data: after }])
    // 500 characters are fine, and "" clears it.
    expect((await send('PATCH', `/products/${product.id}/images/${target.id}`, { alt: 'a'.repeat(500) })).statusCode).toBe(200)
    expect((await send('PATCH', `/products/${product.id}/images/${target.id}`, { alt: '' })).json().alt).toBe('')
  })

  it('position: the others close up (0..n-1); to 0 it becomes the main image and imageUrl follows; past the end: last', async () => {
    const product = await productWithImages(3)
    const [a, b, c, d] = product.images.map((i) => i.id)
    const moved = await send('PATCH', `/products/${product.id}/images/${c}`, { position: 0 })
    expect(moved.statusCode).toBe(200)
    expect(moved.json()).toMatchObject({ id: c, position: 0 })
    let after = await getProduct(product.id)
    expect(after.images.map((i) => [i.id, i.position])).toEqual([
      [c, 0],
      [a, 1],
      [b, 2],
      [d, 3],
    ])
    expect(after.imageUrl).toBe(after.images[0]!.url)
    expect((await productRow(product.id)).image_url).toBe(after.images[0]!.url)
    const last = await send('PATCH', `/products/${product.id}/images/${c}`, { position: 99 })
    expect(last.json()).toMatchObject({ id: c, position: 3 })
    after = await getProduct(product.id)
    expect(after.images.map((i) => i.id)).toEqual([a, b, d, c])
    expect(after.imageUrl).toBe(product.imageUrl)
    const both = await send('PATCH', `/products/${product.id}/images/${a}`, { alt: 'Principal', position: 1 })
    expect(both.json()).toMatchObject({ id: a, alt: 'Principal', position: 1 })
    expect((await getProduct(product.id)).images.map((i) => i.id)).toEqual([b, a, d, c])
  })

  it('422 for the body, then 404 for the product and the image (another product’s too)', async () => {
    const product = await productWithImages(1)
    const other = await productWithImages()
    const image = product.images[1]!.id
    await changesNothing(product.id, async () => {
      const cases: Array<[unknown, string]> = [
        [{ alt: 'a'.repeat(501) }, 'alt must be shorter than or equal to 500 characters'],
        [{ alt: 5 }, 'alt must be a string'],
        [{ alt: 'a\u0007b' }, 'alt must not contain control characters'],
        [{ position: -1 }, 'position must not be less than 0'],
        [{ position: 1.5 }, 'position must be an integer number'],
        [{}, 'body must contain at least one field'],
        [{ url: 'http://elsewhere.test/x.png' }, 'body must contain at least one field'],
      ]
      for (const [body, message] of cases) {
        const res = await send('PATCH', `/products/${product.id}/images/${image}`, body)
        expect([res.statusCode, res.json()]).toEqual([422, { error: message }])
      }
      const unknownProduct = await send('PATCH', `/products/999999/images/${image}`, { alt: 'x' })
      expect([unknownProduct.statusCode, unknownProduct.json()]).toEqual([404, { error: 'Producto no encontrado' }])
      const unknownImage = await send('PATCH', `/products/${product.id}/images/999999`, { alt: 'x' })
      expect([unknownImage.statusCode, unknownImage.json()]).toEqual([404, { error: 'Imagen no encontrada' }])
      const otherImage = await send('PATCH', `/products/${product.id}/images/${other.images[0]!.id}`, { alt: 'x' })
      expect([otherImage.statusCode, otherImage.json()]).toEqual([404, { error: 'Imagen no encontrada' }])
      const badId = await send('PATCH', `/products/${product.id}/images/abc`, { alt: 'x' })
      expect([badId.statusCode, badId.json()]).toEqual([422, { error: 'imageId must be an integer number' }])
    })
  })
})

describe('DELETE /products/:id/images/:imageId', () => {
  it('200 with the message; the file goes after the commit, the others close up, its variants show none', async () => {
    const product = await productWithImages(2)
    const [a, b, c] = product.images.map((i) => i.id)
    const variant = product.variants[0]!
    // The default variant shows the main image; point it at the second.
    await t.app.db.updateTable('product_variants').set({ image_id: b! }).where('id', '=', variant.id).execute()
    t.app.catalogCache.invalidate()
    const key = (await imageRows(product.id)).find((r) => r.id === b)!.image_key
    expect(existsSync(join(uploadDir, key))).toBe(true)

    const res = await send('DELETE', `/products/${product.id}/images/${b}`)
    expect([res.statusCode, res.json()]).toEqual([200, { message: 'Imagen eliminada' }])
    expect(existsSync(join(uploadDir, key))).toBe(false)
    expect(host.deleted).toEqual([key])
    const after = await getProduct(product.id)
    expect(after.images.map((i) => [i.id, i.position])).toEqual([
      [a, 0],
      [c, 1],
    ])
    expect(after.imageUrl).toBe(product.imageUrl)
    expect(after.variants[0]).toMatchObject({ id: variant.id, imageId: null })
    expect(after.variants[0]!.updatedAt > variant.updatedAt).toBe(true)
    expect(events).toEqual([{ type: 'product.updated', data: after }])
  })

  it('the main image: the next one becomes main (imageUrl follows)', async () => {
    const product = await productWithImages(1)
    const [a, b] = product.images
    expect((await send('DELETE', `/products/${product.id}/images/${a!.id}`)).statusCode).toBe(200)
    const after = await getProduct(product.id)
    expect(after.images).toEqual([{ ...b, position: 0 }])
    expect(after.imageUrl).toBe(b!.url)
    expect((await productRow(product.id)).image_url).toBe(b!.url)
  })

  it('409 for the last image of an active or archived product; a draft may lose it (imageUrl null)', async () => {
    for (const status of ['active', 'archived']) {
      const product = await productWithImages(0, status)
      await changesNothing(product.id, async () => {
        const res = await send('DELETE', `/products/${product.id}/images/${product.images[0]!.id}`)
        expect([res.statusCode, res.json()]).toEqual([409, { error: 'Un producto sin imágenes solo puede estar en borrador' }])
      })
    }
    const draft = await productWithImages(0, 'draft')
    const key = (await imageRows(draft.id))[0]!.image_key
    expect((await send('DELETE', `/products/${draft.id}/images/${draft.images[0]!.id}`)).statusCode).toBe(200)
    const after = await getProduct(draft.id)
    expect([after.imageUrl, after.images]).toEqual([null, []])
    expect(await productRow(draft.id)).toMatchObject({ image_key: '', image_url: '' })
    expect(existsSync(join(uploadDir, key))).toBe(false)
    // Imageless, it cannot be activated.
    const activate = await send('PATCH', `/products/${draft.id}`, { status: 'active' })
    expect([activate.statusCode, activate.json()]).toEqual([409, { error: 'Un producto sin imágenes solo puede estar en borrador' }])
  })

  it('a file that cannot be removed is logged; the image is deleted all the same', async () => {
    const product = await productWithImages(1)
    host.failDelete = true
    const res = await send('DELETE', `/products/${product.id}/images/${product.images[1]!.id}`)
    expect([res.statusCode, res.json()]).toEqual([200, { message: 'Imagen eliminada' }])
    expect((await imageRows(product.id)).map((r) => r.id)).toEqual([product.images[0]!.id])
    expect(host.deleted).toHaveLength(1)
  })

  it('404 for an unknown product, an unknown image and another product’s image', async () => {
    const product = await productWithImages(1)
    const other = await productWithImages()
    await changesNothing(product.id, async () => {
      const unknownProduct = await send('DELETE', `/products/999999/images/${product.images[1]!.id}`)
      expect([unknownProduct.statusCode, unknownProduct.json()]).toEqual([404, { error: 'Producto no encontrado' }])
      const unknownImage = await send('DELETE', `/products/${product.id}/images/999999`)
      expect([unknownImage.statusCode, unknownImage.json()]).toEqual([404, { error: 'Imagen no encontrada' }])
      const otherImage = await send('DELETE', `/products/${product.id}/images/${other.images[0]!.id}`)
      expect([otherImage.statusCode, otherImage.json()]).toEqual([404, { error: 'Imagen no encontrada' }])
    })
    expect(host.deleted).toEqual([])
  })
})

describe('PUT /products/:id/images/order', () => {
  it('200 with the images in the new order; the first is the main image; product.updated', async () => {
    const product = await productWithImages(2)
    const [a, b, c] = product.images.map((i) => i.id)
    const res = await send('PUT', `/products/${product.id}/images/order`, { imageIds: [c, a, b] })
    expect(res.statusCode).toBe(200)
    const images = res.json() as Image[]
    expect(images.map((i) => [i.id, i.position])).toEqual([
      [c, 0],
      [a, 1],
      [b, 2],
    ])
    const after = await getProduct(product.id)
    expect(after.images).toEqual(images)
    expect(after.imageUrl).toBe(images[0]!.url)
    expect((await productRow(product.id)).image_url).toBe(images[0]!.url)
    expect(events).toEqual([{ type: 'product.updated', data: after }])
  })

  it('422 when the list is not every image exactly once (after 404 for the product); the schema’s own 422s first', async () => {
    const product = await productWithImages(2)
    const other = await productWithImages()
    const [a, b, c] = product.images.map((i) => i.id)
    await changesNothing(product.id, async () => {
      const exactlyOnce = 'imageIds must list every image of the product exactly once'
      const cases: Array<[unknown, string]> = [
        [{}, 'imageIds should not be empty'],
        [{ imageIds: 'a,b' }, 'imageIds must be an array'],
        [{ imageIds: ['x'] }, 'imageIds must be an integer number'],
        [{ imageIds: [0] }, 'imageIds must not be less than 1'],
        [{ imageIds: Array.from({ length: 101 }, (_, i) => i + 1) }, 'imageIds must contain no more than 100 elements'],
        [{ imageIds: [a, b] }, exactlyOnce],
        [{ imageIds: [a, b, c, c] }, exactlyOnce],
        [{ imageIds: [a, b, b] }, exactlyOnce],
        [{ imageIds: [a, b, other.images[0]!.id] }, exactlyOnce],
        [{ imageIds: [a, b, c, other.images[0]!.id] }, exactlyOnce],
        [{ imageIds: [] }, exactlyOnce],
      ]
      for (const [body, message] of cases) {
        const res = await send('PUT', `/products/${product.id}/images/order`, body)
        expect([res.statusCode, res.json()]).toEqual([422, { error: message }])
      }
      const unknown = await send('PUT', '/products/999999/images/order', { imageIds: [a, b, c] })
      expect([unknown.statusCode, unknown.json()]).toEqual([404, { error: 'Producto no encontrado' }])
    })
  })

  it('an empty list for a product without images: 200 []', async () => {
    const draft = await makeProduct(t.app)
    await t.app.db.deleteFrom('product_images').where('product_id', '=', draft.id).execute()
    const res = await send('PUT', `/products/${draft.id}/images/order`, { imageIds: [] })
    expect([res.statusCode, res.json()]).toEqual([200, []])
  })
})

describe('the catalog cache', () => {
  it('each image write is seen by the next read of the product', async () => {
    const product = await productWithImages(1)
    const [a, b] = product.images.map((i) => i.id)
    await getProduct(product.id)
    await send('PUT', `/products/${product.id}/images/order`, { imageIds: [b, a] })
    expect((await getProduct(product.id)).images.map((i) => i.id)).toEqual([b, a])
    await send('PATCH', `/products/${product.id}/images/${a}`, { alt: 'Nueva' })
    expect((await getProduct(product.id)).images[1]!.alt).toBe('Nueva')
    await upload(product.id, [png('c.png')])
    expect((await getProduct(product.id)).images).toHaveLength(3)
    await send('DELETE', `/products/${product.id}/images/${a}`)
    expect((await getProduct(product.id)).images.map((i) => i.id)).not.toContain(a)
  })
})

describe('MAX_IMAGES_PER_PRODUCT', () => {
  it('is 20 unless set, from 1 to 100', () => {
    expect(testConfig().maxImagesPerProduct).toBe(20)
    expect(testConfig({ MAX_IMAGES_PER_PRODUCT: '100' }).maxImagesPerProduct).toBe(100)
    expect(() => testConfig({ MAX_IMAGES_PER_PRODUCT: '0' })).toThrow(/MAX_IMAGES_PER_PRODUCT must be an integer between 1 and 100 \(got "0"\)/)
    expect(() => testConfig({ MAX_IMAGES_PER_PRODUCT: '101' })).toThrow(/MAX_IMAGES_PER_PRODUCT must be an integer between 1 and 100 \(got "101"\)/)
  })

  describe('at 3', () => {
    const capped = useTestApp({ MAX_IMAGES_PER_PRODUCT: '3' })

    it('existing + new over the cap: 409, nothing stored; up to the cap: 201', async () => {
      const product = await createProductViaApi(capped.app, capped.admin, { name: 'Taza', price: '1' })
      const files = () => storedImages(capped.config)
      const before = files()
      const send = async (count: number) => {
        const form = await multipart(
          {},
          Array.from({ length: count }, (_, i) => png(`f${i}.png`)),
        )
        return capped.app.inject({
          method: 'POST',
          url: `/products/${product.id}/images`,
          headers: { ...form.headers, ...bearer(capped.admin) },
          payload: form.payload,
        })
      }
      const over = await send(3)
      expect([over.statusCode, over.json()]).toEqual([409, { error: 'Un producto admite como máximo 3 imágenes' }])
      expect(files()).toEqual(before)
      expect(await capped.app.db.selectFrom('product_images').select('id').where('product_id', '=', product.id).execute()).toHaveLength(1)
      const fits = await send(2)
      expect(fits.statusCode).toBe(201)
      expect(fits.json()).toHaveLength(3)
      const full = await send(1)
      expect([full.statusCode, full.json()]).toEqual([409, { error: 'Un producto admite como máximo 3 imágenes' }])
      expect(files()).toHaveLength(before.length + 2)
    })

    it('two uploads at once that each fit but not together: one 201, one 409 whose files are removed', async () => {
      const product = await createProductViaApi(capped.app, capped.admin, { name: 'Plato', price: '1' })
      const before = storedImages(capped.config)
      const upload = async (name: string) => {
        const form = await multipart({}, [png(`${name}-1.png`), png(`${name}-2.png`)])
        return capped.app.inject({
          method: 'POST',
          url: `/products/${product.id}/images`,
          headers: { ...form.headers, ...bearer(capped.admin) },
          payload: form.payload,
        })
      }
      const answers = await Promise.all([upload('x'), upload('y')])
      expect(answers.map((res) => res.statusCode).sort()).toEqual([201, 409])
      expect(answers.find((res) => res.statusCode === 409)!.json()).toEqual({ error: 'Un producto admite como máximo 3 imágenes' })
      const rows = await capped.app.db
        .selectFrom('product_images')
        .select(['image_key', 'position'])
        .where('product_id', '=', product.id)
        .orderBy('position')
        .execute()
      expect(rows.map((row) => row.position)).toEqual([0, 1, 2])
      expect(storedImages(capped.config)).toEqual([...before, ...rows.slice(1).map((row) => row.image_key)].sort())
    })
  })
})
