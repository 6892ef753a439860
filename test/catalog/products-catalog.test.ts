import { describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { countRows } from '../helpers/shop.js'
import { createProductViaApi, makeProduct, pngPart, sendProductForm } from '../helpers/catalog.js'
import { bearer } from '../helpers/factories.js'

// Slugs, status and tags of a product (docs/api.md, Products), and a JSON create, which makes a draft.

const t = useTestApp()

const get = (path: string, token?: { token: string }) => t.app.inject({ method: 'GET', url: path, ...(token ? { headers: bearer(token) } : {}) })
const patch = (id: number, payload: Record<string, unknown>) => t.app.inject({ method: 'PATCH', url: `/products/${id}`, headers: bearer(t.admin), payload })
const postJson = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/products', headers: bearer(t.admin), payload })
const rowCount = (table: 'products' | 'product_variants' | 'product_slugs' | 'product_tags') => countRows(t.app, table)

describe('slugs', () => {
  it('are made from the name: lower case, accents removed, other runs one hyphen; -2 when taken; kept on rename', async () => {
    const first = await createProductViaApi(t.app, t.admin, { name: '  Cámara Réflex — Ñandú 35mm! ', price: '10' })
    expect(first.slug).toBe('camara-reflex-nandu-35mm')
    const second = await createProductViaApi(t.app, t.admin, { name: 'CAMARA reflex ñandu 35MM', price: '10' })
    expect(second.slug).toBe('camara-reflex-nandu-35mm-2')
    const renamed = await patch(first.id, { name: 'Otra cosa' })
    expect(renamed.statusCode).toBe(200)
    expect(renamed.json().slug).toBe('camara-reflex-nandu-35mm')
  })

  it('a name without a letter gives product-<id>; `facets` is never made', async () => {
    const digits = await createProductViaApi(t.app, t.admin, { name: '1234 !!', price: '10' })
    expect(digits.slug).toBe(`product-${digits.id}`)
    const facets = await createProductViaApi(t.app, t.admin, { name: 'Facets', price: '10' })
    expect(facets.slug).toBe('facets-2')
  })

  it('GET /products/<slug> answers the product; an old slug answers 301 to the current one, the query kept, with no body', async () => {
    const product = await createProductViaApi(t.app, t.admin, { name: 'Tetera azul', price: '10' })
    expect((await get('/products/tetera-azul')).json()).toMatchObject({ id: product.id, slug: 'tetera-azul' })
    const changed = await patch(product.id, { slug: 'tetera-de-hierro' })
    expect(changed.statusCode).toBe(200)
    expect(changed.json().slug).toBe('tetera-de-hierro')
    const moved = await get('/products/tetera-azul?ref=mail')
    expect(moved.statusCode).toBe(301)
    expect(moved.headers.location).toBe('http://shop.test/products/tetera-de-hierro?ref=mail')
    expect(moved.body).toBe('')
    // Never chained: a second change points the first old slug at the newest one.
    await patch(product.id, { slug: 'tetera-negra' })
    expect((await get('/products/tetera-azul')).headers.location).toBe('http://shop.test/products/tetera-negra')
    expect((await get('/products/tetera-de-hierro')).headers.location).toBe('http://shop.test/products/tetera-negra')
    // Taking back an old slug makes it the product's own again.
    expect((await patch(product.id, { slug: 'tetera-azul' })).statusCode).toBe(200)
    expect((await get('/products/tetera-azul')).statusCode).toBe(200)
  })

  it('a product that takes another product’s old slug wins it', async () => {
    const a = await createProductViaApi(t.app, t.admin, { name: 'Lámpara vieja', price: '10' })
    await patch(a.id, { slug: 'lampara-nueva' })
    expect((await get('/products/lampara-vieja')).statusCode).toBe(301)
    const b = await createProductViaApi(t.app, t.admin, { name: 'Otra lámpara', price: '10', slug: 'lampara-vieja' })
    expect(b.slug).toBe('lampara-vieja')
    const read = await get('/products/lampara-vieja')
    expect([read.statusCode, read.json().id]).toEqual([200, b.id])
  })

  it.each([
    ['Mayúsculas', 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    ['con espacio', 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    ['123', 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    ['a'.repeat(101), 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    ['facets', 'slug is reserved'],
  ])('slug %s → 422 %s, and nothing changes', async (slug, message) => {
    const product = await makeProduct(t.app, { name: 'Intacto' })
    const res = await patch(product.id, { slug })
    expect([res.statusCode, res.json()]).toEqual([422, { error: message }])
    expect((await get(`/products/${product.id}`)).json().slug).toBe(product.slug)
    const created = await sendProductForm(t.app, { user: t.admin, fields: { name: 'Nuevo', price: '1', slug }, files: [pngPart()] })
    expect([created.statusCode, created.json()]).toEqual([422, { error: message }])
  })

  it('a slug another product has → 409 El slug ya está en uso, on create and on update, and nothing is written', async () => {
    const taken = await createProductViaApi(t.app, t.admin, { name: 'Ocupado', price: '10' })
    const other = await makeProduct(t.app, { name: 'Libre' })
    const before = await rowCount('products')
    const created = await sendProductForm(t.app, { user: t.admin, fields: { name: 'X', price: '1', slug: taken.slug }, files: [pngPart()] })
    expect([created.statusCode, created.json()]).toEqual([409, { error: 'El slug ya está en uso' }])
    expect(await rowCount('products')).toBe(before)
    const updated = await patch(other.id, { slug: taken.slug, name: 'Cambiado' })
    expect([updated.statusCode, updated.json()]).toEqual([409, { error: 'El slug ya está en uso' }])
    expect((await get(`/products/${other.id}`)).json()).toMatchObject({ name: 'Libre', slug: other.slug })
  })
})

describe('status', () => {
  it('drafts and archived products are absent from lists and counts, and 404 to anyone but an admin; the cart refuses them', async () => {
    const shown = await createProductViaApi(t.app, t.admin, { name: 'Visible único', price: '10' })
    const draft = await createProductViaApi(t.app, t.admin, { name: 'Borrador único', price: '10', status: 'draft' })
    const archived = await createProductViaApi(t.app, t.admin, { name: 'Archivado único', price: '10' })
    expect((await patch(archived.id, { status: 'archived' })).json().status).toBe('archived')
    const list = await get('/products?q=único&limit=100')
    expect(list.json().map((p: { id: number }) => p.id)).toEqual([shown.id])
    expect(list.headers['x-total-count']).toBe('1')
    for (const hidden of [draft, archived]) {
      for (const path of [`/products/${hidden.id}`, `/products/${hidden.slug}`]) {
        expect([(await get(path)).statusCode, (await get(path)).json()]).toEqual([404, { error: 'Producto no encontrado' }])
        const asCustomer = await get(path, t.customer)
        expect([asCustomer.statusCode, asCustomer.json()]).toEqual([404, { error: 'Producto no encontrado' }])
        const badToken = await get(path, { token: 'not-a-token' })
        expect([badToken.statusCode, badToken.json()]).toEqual([404, { error: 'Producto no encontrado' }])
        const seen = await get(path, t.admin)
        expect([seen.statusCode, seen.json().id]).toEqual([200, hidden.id])
      }
      const add = await t.app.inject({ method: 'POST', url: '/cart/add', headers: bearer(t.customer), payload: { productId: hidden.id, quantity: 1 } })
      expect([add.statusCode, add.json()]).toEqual([404, { error: 'Producto no encontrado' }])
    }
    // The count of all products (no filter) counts active ones only, through every status change.
    const total = Number((await get('/products?limit=1')).headers['x-total-count'])
    await patch(draft.id, { status: 'active' })
    expect(Number((await get('/products?limit=1')).headers['x-total-count'])).toBe(total + 1)
    await patch(draft.id, { status: 'archived' })
    expect(Number((await get('/products?limit=1')).headers['x-total-count'])).toBe(total)
  })

  it('an admin’s read of a draft is not served to anyone from the product read cache', async () => {
    const draft = await createProductViaApi(t.app, t.admin, { name: 'Borrador cacheado', price: '10', status: 'draft' })
    expect((await get(`/products/${draft.id}`, t.admin)).statusCode).toBe(200)
    const publicRead = await get(`/products/${draft.id}`)
    expect([publicRead.statusCode, publicRead.json()]).toEqual([404, { error: 'Producto no encontrado' }])
  })

  it('status must be one of draft, active, archived', async () => {
    const product = await makeProduct(t.app)
    const res = await patch(product.id, { status: 'hidden' })
    expect([res.statusCode, res.json()]).toEqual([422, { error: 'status must be one of the following values: draft, active, archived' }])
  })
})

describe('tags', () => {
  it('are trimmed, kept once ignoring case in the order given, shown in lists, and replaced by an update', async () => {
    const product = await createProductViaApi(t.app, t.admin, { name: 'Taza etiquetada', price: '10', tags: ' Verano, cerámica ,verano,Regalo' })
    expect(product.tags).toEqual(['Verano', 'cerámica', 'Regalo'])
    const listed = (await get('/products?q=Taza%20etiquetada')).json()
    expect(listed[0].tags).toEqual(['Verano', 'cerámica', 'Regalo'])
    const rows = await t.app.db.selectFrom('product_tags').select(['tag', 'tag_key']).where('product_id', '=', product.id).orderBy('position').execute()
    expect(rows).toEqual([
      { tag: 'Verano', tag_key: 'verano' },
      { tag: 'cerámica', tag_key: 'cerámica' },
      { tag: 'Regalo', tag_key: 'regalo' },
    ])
    const updated = await patch(product.id, { tags: ['Invierno'] })
    expect(updated.json().tags).toEqual(['Invierno'])
    expect(await t.app.db.selectFrom('product_tags').select('tag').where('product_id', '=', product.id).execute()).toEqual([{ tag: 'Invierno' }])
    expect((await patch(product.id, { tags: [] })).json().tags).toEqual([])
  })

  it.each([
    [['a,b'], 'each value in tags must not contain a comma'],
    [['  '], 'each value in tags should not be empty'],
    [['x'.repeat(51)], 'each value in tags must be shorter than or equal to 50 characters'],
    [[7], 'each value in tags must be a string'],
    ['verano', 'tags must be an array'],
    [Array.from({ length: 51 }, (_, i) => `t${i}`), 'tags must contain no more than 50 elements'],
  ])('tags %j → 422 %s, and nothing changes', async (tags, message) => {
    const product = await createProductViaApi(t.app, t.admin, { name: 'Con etiqueta', price: '10', tags: 'uno' })
    const res = await patch(product.id, { tags })
    expect([res.statusCode, res.json()]).toEqual([422, { error: message }])
    expect((await get(`/products/${product.id}`)).json().tags).toEqual(['uno'])
  })
})

describe('POST /products with JSON', () => {
  it('makes a draft without images, its default variant from price and stock; imageUrl is null', async () => {
    const before = await rowCount('product_variants')
    const res = await postJson({ name: 'Borrador JSON', price: '12.50', stock: 3, tags: ['nuevo'] })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toMatchObject({ name: 'Borrador JSON', status: 'draft', price: 12.5, stock: 3, imageUrl: null, images: [], tags: ['nuevo'] })
    expect(body.variants).toEqual([expect.objectContaining({ price: 12.5, stock: 3, imageId: null, title: null })])
    expect(await rowCount('product_variants')).toBe(before + 1)
    // Hidden from the public, as every draft.
    const publicRead = await get(`/products/${body.id}`)
    expect([publicRead.statusCode, publicRead.json()]).toEqual([404, { error: 'Producto no encontrado' }])
  })

  it('cannot make an active or archived product, nor activate it without an image: 409, nothing written', async () => {
    const before = await rowCount('products')
    for (const status of ['active', 'archived']) {
      const res = await postJson({ name: 'Sin imagen', price: 1, status })
      expect([res.statusCode, res.json()]).toEqual([409, { error: 'Un producto sin imágenes solo puede estar en borrador' }])
    }
    expect(await rowCount('products')).toBe(before)
    const draft = (await postJson({ name: 'Sin imagen aún', price: 1 })).json()
    const activate = await patch(draft.id, { status: 'active' })
    expect([activate.statusCode, activate.json()]).toEqual([409, { error: 'Un producto sin imágenes solo puede estar en borrador' }])
    // With an image (a multipart update), it can go live.
    const live = await sendProductForm(t.app, { user: t.admin, method: 'PUT', url: `/products/${draft.id}`, fields: { status: 'active' }, files: [pngPart()] })
    expect(live.statusCode).toBe(200)
    expect(live.json()).toMatchObject({ status: 'active', imageUrl: expect.stringMatching(/^http:\/\//) })
    expect(live.json().images).toHaveLength(1)
    expect((await get(`/products/${draft.id}`)).statusCode).toBe(200)
  })

  it('checks its fields as a form’s, and refuses properties it does not know', async () => {
    expect((await postJson({ price: 1 })).json()).toEqual({ error: 'name should not be empty' })
    expect((await postJson({ name: 'X' })).json()).toEqual({ error: 'price should not be empty' })
    const unknown = await postJson({ name: 'X', price: 1, colour: 'red' })
    expect([unknown.statusCode, unknown.json()]).toEqual([422, { error: 'property colour should not exist' }])
    const anonymous = await t.app.inject({ method: 'POST', url: '/products', payload: { name: 'X', price: 1 } })
    expect([anonymous.statusCode, anonymous.json()]).toEqual([401, { error: 'Unauthorized - No user found' }])
    const customer = await t.app.inject({ method: 'POST', url: '/products', headers: bearer(t.customer), payload: { name: 'X', price: 1 } })
    expect([customer.statusCode, customer.json()]).toEqual([403, { error: 'Forbidden - Requires one of the following roles: admin' }])
  })
})

describe('a product taken off sale while in a cart', () => {
  it('shows available: false in the cart, and checkout refuses it with 409, changing nothing', async () => {
    const product = await createProductViaApi(t.app, t.admin, { name: 'Se retira', price: '5', stock: '4' })
    const add = await t.app.inject({ method: 'POST', url: '/cart/add', headers: bearer(t.customer), payload: { productId: product.id, quantity: 2 } })
    expect(add.statusCode).toBe(201)
    expect((await patch(product.id, { status: 'archived' })).statusCode).toBe(200)
    const cart = await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(t.customer) })
    const line = cart.json().items.find((item: { productId: number }) => item.productId === product.id)
    expect(line).toMatchObject({ available: false, quantity: 2 })
    const ordersBefore = await t.app.db.selectFrom('orders').select('id').execute()
    const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(t.customer) })
    expect([res.statusCode, res.json()]).toEqual([409, { error: 'El producto Se retira no está disponible' }])
    expect(await t.app.db.selectFrom('orders').select('id').execute()).toEqual(ordersBefore)
    const stock = await t.app.db.selectFrom('product_variants').select('stock').where('product_id', '=', product.id).executeTakeFirstOrThrow()
    expect(stock.stock).toBe(4)
    const still = await t.app.inject({ method: 'GET', url: '/cart', headers: bearer(t.customer) })
    expect(still.json().items.some((item: { productId: number }) => item.productId === product.id)).toBe(true)
    // Back on sale, it can be bought.
    await patch(product.id, { status: 'active' })
    const placed = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(t.customer) })
    expect(placed.statusCode).toBe(201)
  })
})
