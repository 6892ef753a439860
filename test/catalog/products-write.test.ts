import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createLocalImageHost } from '../../src/modules/images/local-image-host.js'
import { nowIso } from '../../src/shared/time.js'
import { useTestApp } from '../helpers/app.js'
import { failingHost, makeCategory, makeProduct, PNG, pngPart, sendProductForm, storedImages } from '../helpers/catalog.js'
import { bearer, type TestUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'

const MiB = 1024 * 1024
const uploadDir = mkdtempSync(join(tmpdir(), 'shop-uploads-'))
// The local host, wrapped so tests can make it fail on purpose.
const host = failingHost(createLocalImageHost(uploadDir, 'http://shop.test'))

const t = useTestApp({ UPLOAD_DIR: uploadDir }, { imageHost: host })
let category: number

beforeAll(async () => {
  category = (await makeCategory(t.app, 'Cámaras')).id
})
afterAll(() => {
  rmSync(uploadDir, { recursive: true, force: true })
})
beforeEach(() => {
  host.failStore = false
  host.failDelete = false
  host.afterStore = null
})

const KEY = /^products\/\d{13,}-/

async function productCount(): Promise<number> {
  const row = await t.app.db
    .selectFrom('products')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

async function post(fields: Record<string, string | string[]>, files = [pngPart()], user: TestUser | null = t.admin) {
  return sendProductForm(t.app, { user, fields, files })
}

async function put(id: number, fields: Record<string, string | string[]>, files = [pngPart()], user: TestUser | null = t.admin) {
  return sendProductForm(t.app, { method: 'PUT', url: `/products/${id}`, user, fields, files })
}

/** Runs `act` and asserts it left no product row and no stored file behind. */
async function leavesNothing(act: () => Promise<void>): Promise<void> {
  const rows = await productCount()
  const files = storedImages(t.config)
  await act()
  expect(await productCount()).toBe(rows)
  expect(storedImages(t.config)).toEqual(files)
}

const valid = { name: 'Cámara', description: 'Réflex', price: '19.99', stock: '5', categoryId: '' }

describe('POST /products (multipart)', () => {
  it('creates the product and stores its image under products/<timestamp>-<name>', async () => {
    const before = storedImages(t.config)
    const res = await post({ ...valid, categoryId: String(category) })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toMatchObject({ name: 'Cámara', description: 'Réflex', price: 19.99, stock: 5, categoryId: category })
    expect(Object.keys(body).sort()).toEqual([
      'categoryId',
      'createdAt',
      'description',
      'id',
      'imageUrl',
      'images',
      'inStock',
      'name',
      'options',
      'price',
      'priceRange',
      'slug',
      'status',
      'stock',
      'tags',
      'taxClass',
      'updatedAt',
      'variants',
    ])
    expect(body.imageUrl).toMatch(/^http:\/\/shop\.test\/uploads\/products\/\d{13,}-photo\.png$/)
    const row = await t.app.db.selectFrom('products').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow()
    expect(row.image_key).toMatch(KEY)
    expect(Number(row.price_cents)).toBe(1999)
    expect(storedImages(t.config)).toEqual([...before, row.image_key].sort())
    expect(readFileSync(join(uploadDir, row.image_key))).toEqual(PNG)
  })

  it('serves the stored image with its type, nosniff and immutable caching', async () => {
    const res = await post(valid)
    const path = new URL(res.json().imageUrl).pathname
    const image = await t.app.inject({ method: 'GET', url: path })
    expect(image.statusCode).toBe(200)
    expect(image.headers['content-type']).toBe('image/png')
    expect(image.headers['x-content-type-options']).toBe('nosniff')
    expect(image.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(image.rawPayload).toEqual(PNG)
    const missing = await t.app.inject({ method: 'GET', url: '/uploads/products/1-nothing.png' })
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toEqual({ error: 'Imagen no encontrada' })
    const traversal = await t.app.inject({ method: 'GET', url: '/uploads/products/..%2F..%2Fetc%2Fpasswd' })
    expect(traversal.statusCode).toBe(404)
  })

  it('serves an image whose name is as long as a stored name gets (100 characters kept)', async () => {
    const res = await post(valid, [pngPart(`${'a'.repeat(150)}.png`)])
    expect(res.statusCode).toBe(201)
    const path = new URL(res.json().imageUrl).pathname
    expect(path).toMatch(new RegExp(`^/uploads/products/\\d{13,}-a{96}\\.png$`))
    const image = await t.app.inject({ method: 'GET', url: path })
    expect(image.statusCode).toBe(200)
    expect(image.rawPayload).toEqual(PNG)
  })

  it('defaults: description "", stock 0, no category; price as a whole number', async () => {
    const res = await post({ name: 'Solo', price: '7' })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ name: 'Solo', description: '', price: 7, stock: 0, categoryId: null })
  })

  it('401 without a token and 403 for a customer, storing nothing', async () => {
    await leavesNothing(async () => {
      const anon = await post(valid, [pngPart()], null)
      expect(anon.statusCode).toBe(401)
      expect(anon.json()).toEqual({ error: 'Unauthorized - No user found' })
      const cust = await post(valid, [pngPart()], t.customer)
      expect(cust.statusCode).toBe(403)
      expect(cust.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    })
  })

  it.each([
    ['text/plain', 'notes.png', 'Invalid file type: text/plain. Allowed types: image/jpeg, image/jpg, image/png, image/webp, image/gif'],
    ['application/pdf', 'doc.pdf', 'Invalid file type: application/pdf. Allowed types: image/jpeg, image/jpg, image/png, image/webp, image/gif'],
    ['image/png', 'photo.txt', 'Invalid file extension: .txt. Allowed extensions: .jpg, .jpeg, .png, .webp, .gif'],
    ['image/png', 'photo.TXT', 'Invalid file extension: .TXT. Allowed extensions: .jpg, .jpeg, .png, .webp, .gif'],
    ['image/jpeg', 'photo', 'Invalid file extension: . Allowed extensions: .jpg, .jpeg, .png, .webp, .gif'],
  ])('500 for a %s file named %s', async (type, filename, message) => {
    await leavesNothing(async () => {
      const res = await post(valid, [{ filename, type, data: PNG }])
      expect(res.statusCode).toBe(500)
      expect(res.json()).toEqual({ error: message })
    })
  })

  it('the image rules come before the missing fields', async () => {
    const res = await post({ name: '' }, [{ filename: 'a.exe', type: 'application/octet-stream', data: PNG }])
    expect(res.statusCode).toBe(500)
    expect(res.json().error).toMatch(/^Invalid file type: application\/octet-stream\./)
  })

  it.each([
    ['image/jpeg', 'a.JPG'],
    ['image/jpg', 'b.jpeg'],
    ['image/webp', 'c.WebP'],
    ['image/gif', 'd.gif'],
  ])('accepts %s %s', async (type, filename) => {
    const res = await post(valid, [{ filename, type, data: PNG }])
    expect(res.statusCode).toBe(201)
    expect(res.json().imageUrl.endsWith(`-${filename}`)).toBe(true)
  })

  it('accepts exactly 5 MiB; one byte more is 500 and nothing is stored', async () => {
    const exact = await post(valid, [{ filename: 'big.png', type: 'image/png', data: Buffer.alloc(5 * MiB, 1) }])
    expect(exact.statusCode).toBe(201)
    const key = (await t.app.db.selectFrom('products').select('image_key').where('id', '=', exact.json().id).executeTakeFirstOrThrow()).image_key
    expect(readFileSync(join(uploadDir, key)).length).toBe(5 * MiB)
    await leavesNothing(async () => {
      const res = await post(valid, [{ filename: 'big.png', type: 'image/png', data: Buffer.alloc(5 * MiB + 1, 1) }])
      expect(res.statusCode).toBe(500)
      expect(res.json()).toEqual({ error: 'El archivo es demasiado grande. Tamaño máximo: 5MB' })
    })
  })

  it('400 without an image: no file part, a file under another name, an empty file part, or no body at all', async () => {
    const message = { error: "La imagen del producto es obligatoria (campo 'image')" }
    await leavesNothing(async () => {
      const none = await post(valid, [])
      expect(none.statusCode).toBe(400)
      expect(none.json()).toEqual(message)
      const other = await post(valid, [pngPart('photo.png', 'picture')])
      expect(other.statusCode).toBe(400)
      expect(other.json()).toEqual(message)
      // What a browser sends when no file was chosen.
      const empty = await t.app.inject({
        method: 'POST',
        url: '/products',
        headers: { ...bearer(t.admin), 'content-type': 'multipart/form-data; boundary=xyz' },
        payload:
          '--xyz\r\nContent-Disposition: form-data; name="name"\r\n\r\nA\r\n' +
          '--xyz\r\nContent-Disposition: form-data; name="image"; filename=""\r\nContent-Type: application/octet-stream\r\n\r\n\r\n--xyz--\r\n',
      })
      expect(empty.statusCode).toBe(400)
      expect(empty.json()).toEqual(message)
      // No body at all (JSON makes a draft without images: products-catalog.test.ts).
      const nothing = await t.app.inject({ method: 'POST', url: '/products', headers: bearer(t.admin) })
      expect(nothing.statusCode).toBe(400)
      expect(nothing.json()).toEqual(message)
    })
  })

  it('the missing image comes before the fields', async () => {
    const res = await post({ name: '' }, [])
    expect(res.statusCode).toBe(400)
  })

  it.each([
    [{ price: '1' }, 'name should not be empty'],
    [{ name: '', price: '1' }, 'name should not be empty'],
    [{ name: '   ', price: '1' }, 'name should not be empty'],
    [{ name: 'x'.repeat(201), price: '1' }, 'name must be shorter than or equal to 200 characters'],
    [{ name: 'A' }, 'price should not be empty'],
    [{ name: 'A', price: '' }, 'price should not be empty'],
    [{ name: 'A', price: '-1' }, 'price must not be less than 0'],
    [{ name: 'A', price: '-0.5' }, 'price must not be less than 0'],
    [{ name: 'A', price: '1.999' }, 'price must be a number conforming to the specified constraints'],
    [{ name: 'A', price: 'abc' }, 'price must be a number conforming to the specified constraints'],
    [{ name: 'A', price: '1e3' }, 'price must be a number conforming to the specified constraints'],
    [{ name: 'A', price: '100000000' }, 'price must not be greater than 99999999.99'],
    [{ name: 'A', price: '1', stock: '1.5' }, 'stock must be an integer number'],
    [{ name: 'A', price: '1', stock: 'many' }, 'stock must be an integer number'],
    [{ name: 'A', price: '1', stock: '-1' }, 'stock must not be less than 0'],
    [{ name: 'A', price: '1', stock: '2147483648' }, 'stock must not be greater than 2147483647'],
    [{ name: 'A', price: '1', categoryId: 'x' }, 'categoryId must be an integer number'],
    [{ name: 'A', price: '1', categoryId: '0' }, 'categoryId must not be less than 1'],
    [{ name: 'A', price: '1', description: 'd'.repeat(5001) }, 'description must be shorter than or equal to 5000 characters'],
    [{ name: ['A', 'B'], price: '1' }, 'name must be sent only once'],
    [{ name: 'A', price: ['1', '2'] }, 'price must be sent only once'],
    [{ name: '', price: '-1' }, 'name should not be empty'],
  ])('422 for %j, leaving nothing behind', async (fields, message) => {
    await leavesNothing(async () => {
      const res = await post(fields as Record<string, string | string[]>)
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error: message })
    })
  })

  it('422 for an unknown category, leaving nothing behind', async () => {
    await leavesNothing(async () => {
      const res = await post({ ...valid, categoryId: '999999' })
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error: 'La categoría no existe' })
    })
  })

  it('422 for two files', async () => {
    await leavesNothing(async () => {
      const res = await post(valid, [pngPart('a.png'), pngPart('b.png')])
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error: "Only one file may be sent, in the field 'image'" })
    })
  })

  it('413 for more text fields than a product form has room for', async () => {
    await leavesNothing(async () => {
      const extra = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`f${i}`, 'x']))
      const res = await post({ ...valid, ...extra })
      expect(res.statusCode).toBe(413)
      expect(res.json()).toEqual({ error: 'El cuerpo de la petición es demasiado grande' })
    })
  })

  it('400 for a malformed multipart body', async () => {
    await leavesNothing(async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/products',
        headers: { ...bearer(t.admin), 'content-type': 'multipart/form-data; boundary=xyz' },
        payload: '--xyz\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\nabc',
      })
      expect(res.statusCode).toBe(400)
      expect(res.json()).toEqual({ error: 'El cuerpo multipart no es válido' })
    })
  })

  it('sanitizes the file name: directories dropped, other characters become _', async () => {
    const a = await post(valid, [{ filename: '../../etc/mi foto (1)ñ.png', type: 'image/png', data: PNG }])
    expect(a.statusCode).toBe(201)
    expect(a.json().imageUrl).toMatch(/\/uploads\/products\/\d{13,}-mi_foto__1__\.png$/)
    const b = await post(valid, [{ filename: 'C:\\Users\\ana\\pic.PNG', type: 'image/png', data: PNG }])
    expect(b.json().imageUrl).toMatch(/\/uploads\/products\/\d{13,}-pic\.PNG$/)
  })

  it('two uploads of one name at the same moment never overwrite each other', async () => {
    const before = storedImages(t.config).length
    const results = await Promise.all(Array.from({ length: 5 }, () => post(valid, [pngPart('same.png')])))
    expect(results.map((r) => r.statusCode)).toEqual([201, 201, 201, 201, 201])
    const urls = new Set(results.map((r) => r.json().imageUrl))
    expect(urls.size).toBe(5)
    expect(storedImages(t.config).length).toBe(before + 5)
  })
})

describe('PUT /products/:id', () => {
  async function created(fields: Record<string, string> = valid) {
    const res = await post(fields)
    expect(res.statusCode).toBe(201)
    const row = await t.app.db.selectFrom('products').selectAll().where('id', '=', res.json().id).executeTakeFirstOrThrow()
    return { product: res.json(), key: row.image_key }
  }

  it('multipart with a new image: stores it, replaces imageUrl, deletes the old one; other fields unchanged', async () => {
    const { product, key } = await created({ ...valid, categoryId: String(category) })
    const res = await put(product.id, { stock: '9' }, [pngPart('new.png')])
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body).toMatchObject({ id: product.id, name: 'Cámara', price: 19.99, stock: 9, categoryId: category, createdAt: product.createdAt })
    expect(body.imageUrl).toMatch(/-new\.png$/)
    expect(existsSync(join(uploadDir, key))).toBe(false)
    const newKey = new URL(body.imageUrl).pathname.replace('/uploads/', '')
    expect(existsSync(join(uploadDir, newKey))).toBe(true)
  })

  it('multipart without an image converts the text fields and keeps the image', async () => {
    const { product, key } = await created()
    const res = await put(product.id, { price: '5.5', stock: '3', categoryId: String(category), name: ' Nueva ' }, [])
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ name: 'Nueva', price: 5.5, stock: 3, categoryId: category, imageUrl: product.imageUrl, description: 'Réflex' })
    expect(existsSync(join(uploadDir, key))).toBe(true)
  })

  it('JSON without an image: price as number or decimal string; categoryId null clears it', async () => {
    const { product } = await created({ ...valid, categoryId: String(category) })
    const a = await t.app.inject({ method: 'PUT', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { price: 12.5, description: 'Otra' } })
    expect(a.statusCode).toBe(200)
    expect(a.json()).toMatchObject({ price: 12.5, description: 'Otra', stock: 5, categoryId: category })
    const b = await t.app.inject({ method: 'PUT', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { price: '0.10', categoryId: null } })
    expect(b.json()).toMatchObject({ price: 0.1, categoryId: null })
    expect(b.json().updatedAt >= a.json().updatedAt).toBe(true)
  })

  it.each([
    [{ stock: '3' }, 'stock must be an integer number'],
    [{ stock: 1.5 }, 'stock must be an integer number'],
    [{ categoryId: '2' }, 'categoryId must be an integer number'],
    [{ price: -1 }, 'price must not be less than 0'],
    [{ price: 1.001 }, 'price must be a number conforming to the specified constraints'],
    [{ price: true }, 'price must be a number conforming to the specified constraints'],
    [{ name: '' }, 'name should not be empty'],
    [{ name: 3 }, 'name must be a string'],
    [{}, 'body must contain at least one field'],
  ])('JSON %j → 422 and the row is unchanged', async (payload, message) => {
    const p = await makeProduct(t.app, { name: 'Intacto' })
    const res = await t.app.inject({ method: 'PUT', url: `/products/${p.id}`, headers: bearer(t.admin), payload })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    const row = await t.app.db.selectFrom('products').selectAll().where('id', '=', p.id).executeTakeFirstOrThrow()
    expect(row.updated_at).toBe(p.updatedAt)
  })

  it('validation comes before existence; 404 for an unknown id (no file left behind)', async () => {
    const bad = await t.app.inject({ method: 'PUT', url: '/products/999999', headers: bearer(t.admin), payload: { stock: -1 } })
    expect(bad.statusCode).toBe(422)
    await leavesNothing(async () => {
      const res = await put(999999, { name: 'X' }, [pngPart()])
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({ error: 'Producto no encontrado' })
      const json = await t.app.inject({ method: 'PUT', url: '/products/999999', headers: bearer(t.admin), payload: { name: 'X' } })
      expect(json.statusCode).toBe(404)
    })
    const id = await t.app.inject({ method: 'PUT', url: '/products/abc', headers: bearer(t.admin), payload: { name: 'X' } })
    expect(id.statusCode).toBe(422)
    expect(id.json()).toEqual({ error: 'id must be an integer number' })
  })

  it('image rules (500) come before existence and fields', async () => {
    const res = await put(999999, { stock: 'x' }, [{ filename: 'a.gif', type: 'text/html', data: PNG }])
    expect(res.statusCode).toBe(500)
    expect(res.json().error).toMatch(/^Invalid file type: text\/html\./)
  })

  it('422 for an unknown category: nothing changes and the new image is not kept', async () => {
    const { product, key } = await created()
    await leavesNothing(async () => {
      const res = await put(product.id, { categoryId: '999999' }, [pngPart('other.png')])
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error: 'La categoría no existe' })
    })
    expect(existsSync(join(uploadDir, key))).toBe(true)
  })

  it('422 for a file under another field name, or a repeated field', async () => {
    const { product } = await created()
    await leavesNothing(async () => {
      const stray = await put(product.id, { name: 'X' }, [pngPart('a.png', 'photo')])
      expect(stray.statusCode).toBe(422)
      expect(stray.json()).toEqual({ error: "Unexpected file field 'photo'; the image goes in the field 'image'" })
      const twice = await put(product.id, { stock: ['1', '2'] }, [pngPart()])
      expect(twice.statusCode).toBe(422)
      expect(twice.json()).toEqual({ error: 'stock must be sent only once' })
    })
  })

  it('401/403 first', async () => {
    const { product } = await created()
    expect((await t.app.inject({ method: 'PUT', url: `/products/${product.id}`, payload: { name: 'X' } })).statusCode).toBe(401)
    expect((await put(product.id, { name: 'X' }, [], t.customer)).statusCode).toBe(403)
  })

  it('401 without a token and 403 for a customer, JSON or multipart with an image: the row and its image stay as they were', async () => {
    const { product, key } = await created({ ...valid, categoryId: String(category) })
    const before = await t.app.db.selectFrom('products').selectAll().where('id', '=', product.id).executeTakeFirstOrThrow()
    const fields = { name: 'Cambiado', price: '1.50', stock: '99', categoryId: '' }
    await leavesNothing(async () => {
      const anonJson = await t.app.inject({ method: 'PUT', url: `/products/${product.id}`, payload: { name: 'Cambiado', price: 1.5 } })
      expect(anonJson.statusCode).toBe(401)
      expect(anonJson.json()).toEqual({ error: 'Unauthorized - No user found' })
      const anonForm = await put(product.id, fields, [pngPart('anon.png')], null)
      expect(anonForm.statusCode).toBe(401)
      expect(anonForm.json()).toEqual({ error: 'Unauthorized - No user found' })
      const custJson = await t.app.inject({
        method: 'PUT',
        url: `/products/${product.id}`,
        headers: bearer(t.customer),
        payload: { name: 'Cambiado', price: 1.5 },
      })
      expect(custJson.statusCode).toBe(403)
      expect(custJson.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
      const custForm = await put(product.id, fields, [pngPart('cust.png')], t.customer)
      expect(custForm.statusCode).toBe(403)
      expect(custForm.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    })
    expect(await t.app.db.selectFrom('products').selectAll().where('id', '=', product.id).executeTakeFirstOrThrow()).toEqual(before)
    expect(existsSync(join(uploadDir, key))).toBe(true)
    expect(readFileSync(join(uploadDir, key))).toEqual(PNG)
    const res = await t.app.inject({ method: 'GET', url: `/products/${product.id}` })
    expect(res.json()).toEqual(product)
  })
})

describe('DELETE /products/:id', () => {
  it('removes the product, its image and its cart lines; order lines keep productId and price', async () => {
    const res = await post(valid)
    const id = res.json().id as number
    const key = (await t.app.db.selectFrom('products').select('image_key').where('id', '=', id).executeTakeFirstOrThrow()).image_key
    const now = nowIso()
    await fillCart(t.app, t.customer.id, [{ productId: id, quantity: 2 }])
    const order = await t.app.db
      .insertInto('orders')
      .values({ user_id: t.customer.id, total_cents: 3998, status: 'pending', created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    await t.app.db.insertInto('order_items').values({ order_id: order.id, product_id: id, quantity: 2, price_cents: 1999 }).execute()

    const del = await t.app.inject({ method: 'DELETE', url: `/products/${id}`, headers: bearer(t.admin) })
    expect(del.statusCode).toBe(200)
    expect(del.json()).toEqual({ message: 'Producto eliminado correctamente' })
    expect(await t.app.db.selectFrom('products').select('id').where('id', '=', id).executeTakeFirst()).toBeUndefined()
    expect(await t.app.db.selectFrom('cart_items').select('id').where('product_id', '=', id).execute()).toEqual([])
    const lines = await t.app.db.selectFrom('order_items').selectAll().where('order_id', '=', order.id).execute()
    expect(lines.map((l) => ({ productId: l.product_id, price: Number(l.price_cents) }))).toEqual([{ productId: id, price: 1999 }])
    expect(existsSync(join(uploadDir, key))).toBe(false)
    expect((await t.app.inject({ method: 'GET', url: `/products/${id}` })).statusCode).toBe(404)
  })

  it('404 for an unknown id, 422 for a bad id, 401/403 first', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/products/999999', headers: bearer(t.admin) })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Producto no encontrado' })
    expect((await t.app.inject({ method: 'DELETE', url: '/products/x', headers: bearer(t.admin) })).json()).toEqual({ error: 'id must be an integer number' })
    expect((await t.app.inject({ method: 'DELETE', url: '/products/1' })).statusCode).toBe(401)
    expect((await t.app.inject({ method: 'DELETE', url: '/products/1', headers: bearer(t.customer) })).statusCode).toBe(403)
  })

  it('401 without a token and 403 for a customer: the product, its image file and its cart lines stay', async () => {
    const res = await post(valid)
    expect(res.statusCode).toBe(201)
    const product = res.json()
    const before = await t.app.db.selectFrom('products').selectAll().where('id', '=', product.id).executeTakeFirstOrThrow()
    await fillCart(t.app, t.customer.id, [{ productId: product.id, quantity: 1 }])
    await leavesNothing(async () => {
      const anon = await t.app.inject({ method: 'DELETE', url: `/products/${product.id}` })
      expect(anon.statusCode).toBe(401)
      expect(anon.json()).toEqual({ error: 'Unauthorized - No user found' })
      const cust = await t.app.inject({ method: 'DELETE', url: `/products/${product.id}`, headers: bearer(t.customer) })
      expect(cust.statusCode).toBe(403)
      expect(cust.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    })
    expect(await t.app.db.selectFrom('products').selectAll().where('id', '=', product.id).executeTakeFirstOrThrow()).toEqual(before)
    expect(existsSync(join(uploadDir, before.image_key))).toBe(true)
    const lines = await t.app.db.selectFrom('cart_items').select(['user_id', 'quantity']).where('product_id', '=', product.id).execute()
    expect(lines).toEqual([{ user_id: t.customer.id, quantity: 1 }])
    expect((await t.app.inject({ method: 'GET', url: `/products/${product.id}` })).json()).toEqual(product)
    // Leave no cart line behind for the other tests of this file.
    await t.app.db.deleteFrom('cart_items').where('product_id', '=', product.id).execute()
  })
})

describe('the database and the image host stay consistent when the host fails', () => {
  it('a failed upload writes no product row (500 upload failure)', async () => {
    host.failStore = true
    await leavesNothing(async () => {
      const res = await post(valid)
      expect(res.statusCode).toBe(500)
      expect(res.json()).toEqual({ error: 'Error al subir la imagen al servicio de alojamiento' })
    })
  })

  it('a failed upload on update changes nothing', async () => {
    const { json } = await post(valid).then((r) => ({ json: r.json() }))
    host.failStore = true
    const res = await put(json.id, { name: 'Otro' }, [pngPart('n.png')])
    expect(res.statusCode).toBe(500)
    expect(res.json()).toEqual({ error: 'Error al subir la imagen al servicio de alojamiento' })
    const row = await t.app.db.selectFrom('products').selectAll().where('id', '=', json.id).executeTakeFirstOrThrow()
    expect(row.name).toBe('Cámara')
    expect(row.image_url).toBe(json.imageUrl)
  })

  it('a failed database write after the upload removes the new image (create)', async () => {
    const doomed = await makeCategory(t.app)
    // The category disappears between the check and the insert: the foreign key refuses the row.
    host.afterStore = async () => {
      await t.app.db.deleteFrom('categories').where('id', '=', doomed.id).execute()
    }
    await leavesNothing(async () => {
      const res = await post({ ...valid, categoryId: String(doomed.id) })
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error: 'La categoría no existe' })
    })
    expect(host.deleted.at(-1)).toBe(host.stored.at(-1))
  })

  it('a failed database write after the upload removes the new image (update of a product deleted meanwhile)', async () => {
    const p = await makeProduct(t.app)
    host.afterStore = async () => {
      await t.app.db.deleteFrom('products').where('id', '=', p.id).execute()
    }
    const files = storedImages(t.config)
    const res = await put(p.id, { name: 'Y' }, [pngPart('gone.png')])
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Producto no encontrado' })
    expect(storedImages(t.config)).toEqual(files)
  })

  it('replacing an image whose removal fails still succeeds (the old file stays, logged)', async () => {
    const res = await post(valid)
    const oldKey = new URL(res.json().imageUrl).pathname.replace('/uploads/', '')
    host.failDelete = true
    const upd = await put(res.json().id, {}, [pngPart('fresh.png')])
    expect(upd.statusCode).toBe(200)
    expect(upd.json().imageUrl).toMatch(/-fresh\.png$/)
    expect(host.deleted.at(-1)).toBe(oldKey)
    expect(existsSync(join(uploadDir, oldKey))).toBe(true)
  })

  it('deleting a product whose image removal fails still succeeds', async () => {
    const res = await post(valid)
    host.failDelete = true
    const del = await t.app.inject({ method: 'DELETE', url: `/products/${res.json().id}`, headers: bearer(t.admin) })
    expect(del.statusCode).toBe(200)
    expect(await t.app.db.selectFrom('products').select('id').where('id', '=', res.json().id).executeTakeFirst()).toBeUndefined()
  })
})
