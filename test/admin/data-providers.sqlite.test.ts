import { HttpError } from 'react-admin'
import { describe, expect, it } from 'vitest'
import { createShopClient } from '../../clients/typescript/index.js'
import { errorCode, type ErrorCode } from '../../admin/src/api/answers'
import { createDataProvider } from '../../admin/src/api/dataProvider'
import { listRedemptions } from '../../admin/src/api/discountCodes'
import { createVariants, missingCombinations, updateVariant, type Variant } from '../../admin/src/api/variants'
import { addImages, moved, reorderImages, updateImageAlt } from '../../admin/src/api/images'
import { rotateApiKey } from '../../admin/src/api/apiKeys'

// The dashboard's data providers (admin/src/api/<resource>.ts, combined in dataProvider.ts), over the API's typed
// client (clients/typescript, as admin/src/api/client.ts makes it) with a fetch of the test's own: which calls they make of the API for react-admin's, and what they make of
// the answers. No service and no database: the browser tests drive the same providers against the real routes.
// Type-checked with the dashboard (admin/tsconfig.json); `.sqlite` keeps it to one run of the suite.

interface Sent {
  method: string
  /** Path and query, as sent. */
  url: string
  json?: unknown
  form?: Record<string, string | { name: string; type: string; size: number }>
  /** A multipart body's parts, in order: the field's name, and the file's name for a file. */
  parts?: string[]
}

type Answer = { status?: number; body: unknown; headers?: Record<string, string> }

/** A fake of the API: answers by "METHOD /path" (query left out), and keeps every request it was sent. */
function fakeShop(answers: Record<string, Answer | ((sent: Sent) => Answer)>) {
  const sent: Sent[] = []
  /** The Accept headers the requests were sent with. */
  const accepts = new Set<string | null>()
  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    const entry: Sent = { method: request.method, url: url.pathname + url.search }
    accepts.add(request.headers.get('accept'))
    const type = request.headers.get('content-type') ?? ''
    if (type.startsWith('application/json')) entry.json = await request.json()
    if (type.startsWith('multipart/form-data')) {
      entry.form = {}
      entry.parts = []
      for (const [field, value] of (await request.formData()).entries()) {
        entry.form[field] = typeof value === 'string' ? value : { name: value.name, type: value.type, size: value.size }
        entry.parts.push(typeof value === 'string' ? field : `${field}=${value.name}`)
      }
    }
    sent.push(entry)
    const found = answers[`${request.method} ${url.pathname}`]
    if (!found) return Response.json({ error: 'Ruta no encontrada' }, { status: 404 })
    const answer = typeof found === 'function' ? found(entry) : found
    return Response.json(answer.body, { status: answer.status ?? 200, headers: answer.headers })
  }
  const api = createShopClient({ baseUrl: 'http://shop.test', fetch })
  const dataProvider = createDataProvider(api)
  return { dataProvider, sent, accepts, api }
}

/** An error as the API answers a client that asks for problem details (src/plugins/errors.ts). */
const problem = (status: number, code: ErrorCode, detail: string, field?: string): Answer => ({
  status,
  body: { type: `/problems/${code}`, title: code, status, detail, code, ...(field === undefined ? {} : { field }) },
  headers: { 'Content-Type': 'application/problem+json' },
})

/** What a call failed with (or what it answered, for the test to fail on). */
const failed = (call: Promise<unknown>): Promise<unknown> => call.catch((error: unknown) => error)

const page = (page: number, perPage = 25) => ({ pagination: { page, perPage }, sort: { field: 'id', order: 'ASC' as const }, filter: {} })
const at = '2026-11-22T10:00:00.000Z'
const product = {
  id: 7,
  name: 'Lamp',
  description: '',
  price: 19.99,
  stock: 3,
  imageUrl: 'http://shop.test/uploads/products/1-lamp.png',
  categoryId: 2,
  createdAt: at,
  updatedAt: at,
}
const user = (id: number) => ({ id, name: `User ${id}`, email: `u${id}@shop.test`, role: 'customer', createdAt: at })
const method = (id: number, fields: object = {}) => ({
  id,
  name: `Method ${id}`,
  price: 4.9,
  countries: [],
  freeOver: null,
  active: true,
  createdAt: at,
  updatedAt: at,
  ...fields,
})

describe('the dashboard’s data providers', () => {
  it('send each resource’s calls to its own routes, with react-admin’s page as limit and offset', async () => {
    const list = { body: [], headers: { 'X-Total-Count': '0' } }
    const { dataProvider, sent, accepts } = fakeShop({
      'GET /products': list,
      'GET /categories': { body: [] },
      'GET /orders': list,
      'GET /auth/users': list,
      'GET /webhooks': { body: [] },
      'GET /shipping-methods': { body: [] },
    })
    await dataProvider.getList('products', { ...page(2, 10), sort: { field: 'price', order: 'ASC' }, filter: { q: 'lamp', categoryId: '3' } })
    await dataProvider.getList('products', { ...page(1, 10), filter: { status: 'draft' } })
    await dataProvider.getList('categories', page(1))
    await dataProvider.getList('orders', { ...page(1), filter: { status: 'paid', userId: '12' } })
    await dataProvider.getList('orders', { ...page(1), filter: { status: 'lost' } })
    await dataProvider.getList('orders', { ...page(1), filter: { guest: 'true', email: ' Guest@Shop.test ' } })
    await dataProvider.getList('orders', { ...page(1), filter: { guest: false, email: '   ' } })
    await dataProvider.getList('orders', { ...page(1), filter: { guest: 'maybe' } })
    await dataProvider.getList('users', page(3))
    await dataProvider.getList('webhooks', page(1))
    await dataProvider.getList('shipping-methods', page(1))
    // Every call asks for errors as problem details, which carry the `code` and `field` the dashboard reads.
    expect(accepts).toEqual(new Set(['application/json, application/problem+json']))
    expect(sent.map((request) => `${request.method} ${request.url}`)).toEqual([
      // Staff see every status unless they pick one.
      'GET /products?limit=10&offset=10&sort=price_asc&status=any&q=lamp&categoryId=3',
      'GET /products?limit=10&offset=0&sort=newest&status=draft',
      'GET /categories',
      'GET /orders?limit=25&offset=0&status=paid&userId=12',
      'GET /orders?limit=25&offset=0',
      // Guest orders or account orders, and an e-mail (trimmed; a blank one is no filter).
      'GET /orders?limit=25&offset=0&guest=true&email=Guest%40Shop.test',
      'GET /orders?limit=25&offset=0&guest=false',
      'GET /orders?limit=25&offset=0',
      'GET /auth/users?limit=25&offset=50',
      'GET /webhooks',
      'GET /shipping-methods?all=true',
    ])
    expect(() => dataProvider.getList('coupons', page(1))).toThrow('The dashboard has no resource coupons')
  })

  it('take the total from X-Total-Count (users too: 28 users are "26-28 of 28"), and refuse a paged list without it', async () => {
    const { dataProvider } = fakeShop({
      'GET /auth/users': { body: [user(26), user(27), user(28)], headers: { 'X-Total-Count': '28' } },
      'GET /orders': { body: [] },
    })
    const users = await dataProvider.getList('users', page(2))
    expect(users).toEqual({ data: [user(26), user(27), user(28)], total: 28 })
    await expect(dataProvider.getList('orders', page(1))).rejects.toThrow('sent no X-Total-Count')
  })

  it('page, search and sort the lists the API answers whole (categories, webhooks, shipping methods)', async () => {
    const category = (id: number, name: string) => ({ id, name, description: '', createdAt: at, updatedAt: at })
    const { dataProvider, sent } = fakeShop({
      'GET /categories': { body: [category(1, 'garden'), category(2, 'Kitchen'), category(3, 'Lighting'), category(4, 'Gifts')] },
      'GET /shipping-methods': { body: [method(1), method(2), method(3)] },
    })
    const found = await dataProvider.getList('categories', { ...page(1, 2), sort: { field: 'name', order: 'DESC' }, filter: { q: 'G' } })
    expect([found.data.map((c: { name: string }) => c.name), found.total]).toEqual([['Lighting', 'Gifts'], 3])
    const many = await dataProvider.getMany('categories', { ids: [4, '2'] })
    expect(many.data.map((c: { id: number }) => c.id)).toEqual([2, 4])
    const methods = await dataProvider.getList('shipping-methods', page(2, 2))
    expect([methods.data, methods.total]).toEqual([[method(3)], 3])
    expect((await dataProvider.getOne('shipping-methods', { id: '2' })).data).toEqual(method(2))
    await expect(dataProvider.getOne('shipping-methods', { id: 9 })).rejects.toMatchObject({
      status: 404,
      message: 'Método de envío no encontrado',
      body: { code: 'shipping_method_not_found' },
    })
    // One call each: there is no GET of a single category list entry or shipping method.
    expect(sent.map((request) => request.url)).toEqual([
      '/categories',
      '/categories',
      '/shipping-methods?all=true',
      '/shipping-methods?all=true',
      '/shipping-methods?all=true',
    ])
  })

  it('create a product as a multipart form with its image, and change one as JSON, or multipart with a new image', async () => {
    const { dataProvider, sent } = fakeShop({ 'POST /products': { status: 201, body: product }, 'PUT /products/7': { body: product } })
    const rawFile = new File([new Uint8Array([137, 80, 78, 71])], 'lamp.png', { type: 'image/png' })
    const data = { name: 'Lamp', description: null, price: 19.99, stock: 3, categoryId: 2, image: { rawFile, src: 'blob:x', title: 'lamp.png' } }
    expect((await dataProvider.create('products', { data })).data).toEqual(product)
    expect(sent[0]!.form).toEqual({ name: 'Lamp', price: '19.99', stock: '3', categoryId: '2', image: { name: 'lamp.png', type: 'image/png', size: 4 } })

    // No new image: JSON, where a cleared category is null and a cleared description "".
    await dataProvider.update('products', { id: 7, data: { ...data, image: undefined, description: null, categoryId: null, price: 18 }, previousData: product })
    // Stock did not change: not sent (a product with several variants refuses price and stock).
    expect(sent[1]).toMatchObject({ method: 'PUT', url: '/products/7', json: { name: 'Lamp', description: '', price: 18, categoryId: null } })
    expect(sent[1]!.json).not.toHaveProperty('stock')
    await dataProvider.update('products', { id: 7, data: { ...data, name: 'Desk lamp' }, previousData: product })
    expect(sent[2]!.form).toMatchObject({ name: 'Desk lamp', image: { name: 'lamp.png' } })

    // The form requires an image; without one nothing is sent, and the form says so beside the field.
    const refused = await dataProvider.create('products', { data: { ...data, image: undefined } }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(HttpError)
    expect((refused as HttpError).body).toEqual({
      error: 'An image is required',
      code: 'validation_failed',
      errors: { image: 'An image is required', root: { serverError: 'An image is required' } },
    })
    expect(sent).toHaveLength(3)
  })

  it('change a product’s status, tags (comma-separated in the form) and slug, sending only what changed', async () => {
    const { dataProvider, sent } = fakeShop({ 'PUT /products/7': { body: product } })
    const previous = { ...product, slug: 'lamp', status: 'active', tags: ['old'] }
    await dataProvider.update('products', { id: 7, data: { ...previous, tags: 'summer, linen ,', status: 'draft', slug: 'desk-lamp' }, previousData: previous })
    expect(sent[0]!.json).toEqual({ name: 'Lamp', description: '', categoryId: 2, slug: 'desk-lamp', status: 'draft', tags: ['summer', 'linen'] })
    // Untouched, the tags stay the record's array: nothing of them is sent.
    await dataProvider.update('products', { id: 7, data: previous, previousData: previous })
    expect(sent[1]!.json).toEqual({ name: 'Lamp', description: '', categoryId: 2 })
  })

  it('change a product’s tax class and its default variant’s SKU and compare-at price, only when changed', async () => {
    const { dataProvider, sent } = fakeShop({ 'PUT /products/7': { body: { ...product, variants: [] } } })
    const previous = { ...product, taxClass: 'standard', sku: 'LAMP-1', compareAtPrice: 25 }
    await dataProvider.update('products', { id: 7, data: { ...previous, taxClass: ' reduced ', sku: '', compareAtPrice: null }, previousData: previous })
    expect(sent[0]!.json).toEqual({ name: 'Lamp', description: '', categoryId: 2, taxClass: 'reduced', sku: null, compareAtPrice: null })
    await dataProvider.update('products', { id: 7, data: { ...previous, sku: 'LAMP-2', compareAtPrice: '30' }, previousData: previous })
    expect(sent[1]!.json).toEqual({ name: 'Lamp', description: '', categoryId: 2, sku: 'LAMP-2', compareAtPrice: 30 })
    await dataProvider.update('products', { id: 7, data: previous, previousData: previous })
    expect(sent[2]!.json).toEqual({ name: 'Lamp', description: '', categoryId: 2 })
  })

  it('upload several images in one multipart request, change an alt text, and send a new order whole', async () => {
    const image = (id: number, position: number) => ({ id, url: `http://shop.test/uploads/products/${id}.png`, alt: '', position })
    const { api, sent } = fakeShop({
      'POST /products/7/images': { status: 201, body: [image(1, 0), image(2, 1), image(3, 2)] },
      'PATCH /products/7/images/2': { body: { ...image(2, 1), alt: 'A lamp' } },
      'PUT /products/7/images/order': (request) => ({ body: (request.json as { imageIds: number[] }).imageIds.map(image) }),
      'DELETE /products/7/images/1': problem(409, 'product_without_images', 'Un producto sin imágenes solo puede estar en borrador'),
    })
    const file = (name: string) => new File([new Uint8Array([137, 80, 78, 71])], name, { type: 'image/png' })
    expect(await addImages(api, 7, [file('a.png'), file('b.png')])).toHaveLength(3)
    expect(sent[0]).toMatchObject({ method: 'POST', url: '/products/7/images', parts: ['images=a.png', 'images=b.png'] })
    expect(await updateImageAlt(api, 7, 2, 'A lamp')).toMatchObject({ id: 2, alt: 'A lamp' })
    expect(sent[1]).toEqual({ method: 'PATCH', url: '/products/7/images/2', json: { alt: 'A lamp' } })
    expect(moved([1, 2, 3], 3, 1)).toEqual([1, 3, 2])
    expect(moved([1, 2, 3], 1, 9)).toEqual([2, 3, 1])
    expect((await reorderImages(api, 7, [3, 1, 2])).map((answered) => answered.id)).toEqual([3, 1, 2])
    expect(sent[2]).toEqual({ method: 'PUT', url: '/products/7/images/order', json: { imageIds: [3, 1, 2] } })
  })

  it('create the missing combinations of a product’s options in one batch, and give a row’s 409 to its field', async () => {
    const at = '2026-11-22T10:00:00.000Z'
    const variant = (id: number, values: Array<[string, string]>): Variant => ({
      id,
      productId: 7,
      sku: null,
      title: values.map(([, value]) => value).join(' / '),
      price: 10,
      compareAtPrice: null,
      stock: 0,
      optionValues: values.map(([name, value], index) => ({ optionId: index + 1, name, valueId: id * 10 + index, value })),
      imageId: null,
      taxClass: null,
      position: id,
      createdAt: at,
      updatedAt: at,
    })
    const options = [
      { id: 1, name: 'Size', position: 0, values: [{ id: 1, value: 'S', position: 0 }] },
      { id: 2, name: 'Colour', position: 1, values: [{ id: 2, value: 'Red', position: 0 }] },
    ]
    // Values compare ignoring case, as the API's; values added on the page count too.
    const missing = missingCombinations(options, { Size: ['S', 'M'], Colour: ['Red', 'Blue'] }, [
      variant(1, [
        ['Size', 's'],
        ['Colour', 'RED'],
      ]),
    ])
    expect(missing).toEqual([
      { Size: 'S', Colour: 'Blue' },
      { Size: 'M', Colour: 'Red' },
      { Size: 'M', Colour: 'Blue' },
    ])
    expect(missingCombinations([], {}, [])).toEqual([])

    const { api, sent } = fakeShop({
      'POST /products/7/variants': (request) => ({ status: 201, body: (request.json as object[]).map((_, index) => variant(index + 2, [])) }),
      'PATCH /variants/3': problem(409, 'sku_taken', 'El SKU ya existe: tee-1', 'sku'),
    })
    const batch = missing.map((combination) => ({ options: combination, price: '22.50', stock: 0 }))
    expect(await createVariants(api, 7, batch)).toHaveLength(3)
    expect(sent[0]).toEqual({ method: 'POST', url: '/products/7/variants', json: batch })
    const refused = await failed(updateVariant(api, 3, { sku: 'tee-1' }))
    expect(refused).toMatchObject({ status: 409, message: 'El SKU ya existe: tee-1', body: { code: 'sku_taken', errors: { sku: 'El SKU ya existe: tee-1' } } })
    expect(sent[1]).toEqual({ method: 'PATCH', url: '/variants/3', json: { sku: 'tee-1' } })
  })

  it('give a problem’s `detail` as the message, and to the form beside the `field` it names', async () => {
    const { dataProvider } = fakeShop({ 'PUT /products/7': problem(422, 'validation_failed', 'price must not be less than 0', 'price') })
    const error = await failed(dataProvider.update('products', { id: 7, data: { price: -1 }, previousData: product }))
    expect(error).toBeInstanceOf(HttpError)
    expect(error).toMatchObject({
      status: 422,
      message: 'price must not be less than 0',
      body: {
        error: 'price must not be less than 0',
        code: 'validation_failed',
        errors: { price: 'price must not be less than 0', root: { serverError: 'price must not be less than 0' } },
      },
    })
  })

  it('find the field of a conflict by the problem’s `field` or `code`, whatever the message’s wording', async () => {
    const { dataProvider } = fakeShop({
      // A duplicate e-mail (409): the API names the field; the message is the API's, in any language.
      'POST /auth/users': problem(409, 'email_taken', 'Ce message ne nomme aucun champ', 'email'),
      // Refused without a field: the code says it is about the role.
      'PATCH /auth/users/5': problem(403, 'cannot_change_own_role', 'Mensaje cualquiera'),
      // A status move the lifecycle refuses: no field, and the orders page reacts to its code.
      'PATCH /orders/9/status': problem(409, 'transition_not_allowed', 'Transición de estado no permitida: paid -> pending'),
      // A field that is not one of the form's: the message only, as a notice.
      'POST /categories': problem(422, 'validation_failed', 'idempotency-key is invalid', 'idempotency-key'),
    })
    const taken = await failed(dataProvider.create('users', { data: { name: 'Ana', email: 'ana@shop.test', password: 'secret123', role: 'admin' } }))
    expect(taken).toMatchObject({ status: 409, body: { code: 'email_taken', errors: { email: 'Ce message ne nomme aucun champ' } } })

    const ownRole = await failed(dataProvider.update('users', { id: 5, data: { ...user(5), role: 'admin' }, previousData: user(5) }))
    expect(ownRole).toMatchObject({ status: 403, message: 'Mensaje cualquiera', body: { errors: { role: 'Mensaje cualquiera' } } })

    const refused = await failed(dataProvider.update('orders', { id: 9, data: { status: 'pending' }, previousData: { id: 9, status: 'paid' } }))
    expect(refused).toMatchObject({ status: 409, message: 'Transición de estado no permitida: paid -> pending' })
    expect(errorCode(refused)).toBe('transition_not_allowed')
    expect((refused as HttpError).body).not.toHaveProperty('errors')

    const notAField = await failed(dataProvider.create('categories', { data: { name: 'Garden' } }))
    expect((notAField as HttpError).body).toEqual({ error: 'idempotency-key is invalid', code: 'validation_failed' })
    expect(errorCode(new Error('not an HttpError'))).toBeUndefined()
  })

  it('show the message of an `{error}` body (a proxy, an older service) or the status, with no code and no field', async () => {
    const { dataProvider } = fakeShop({
      'PUT /products/7': { status: 422, body: { error: 'price must not be less than 0' } },
      'POST /categories': { status: 409, body: { error: 'La categoría ya existe' } },
      'GET /products/8': { status: 502, body: '<html>Bad gateway</html>' },
    })
    const old = await failed(dataProvider.update('products', { id: 7, data: { price: -1 }, previousData: product }))
    expect(old).toBeInstanceOf(HttpError)
    expect(old).toMatchObject({ status: 422, message: 'price must not be less than 0', body: { error: 'price must not be less than 0' } })
    expect((old as HttpError).body).not.toHaveProperty('errors')
    expect(errorCode(old)).toBeUndefined()

    // Its wording is not read: a duplicate name without problem details is a notice, not the name field's error.
    const duplicate = await failed(dataProvider.create('categories', { data: { name: 'Garden' } }))
    expect((duplicate as HttpError).body).toEqual({ error: 'La categoría ya existe' })

    await expect(dataProvider.getOne('products', { id: 8 })).rejects.toMatchObject({
      status: 502,
      message: 'The shop API answered 502. Try again in a moment.',
    })
  })

  it('send only what changed of a user, and nothing at all when nothing did', async () => {
    const { dataProvider, sent } = fakeShop({ 'PATCH /auth/users/5': { body: { ...user(5), role: 'admin' } }, 'GET /auth/users/5': { body: user(5) } })
    await dataProvider.update('users', { id: 5, data: { ...user(5), role: 'admin' }, previousData: user(5) })
    await dataProvider.update('users', { id: '5', data: user(5), previousData: user(5) })
    expect(sent).toEqual([
      { method: 'PATCH', url: '/auth/users/5', json: { role: 'admin' } },
      { method: 'GET', url: '/auth/users/5' },
    ])
  })

  it('create and change shipping methods: countries, price, the free-shipping threshold, active', async () => {
    const { dataProvider, sent } = fakeShop({
      'POST /shipping-methods': (request) => ({ status: 201, body: method(4, request.json as object) }),
      'PATCH /shipping-methods/4': (request) => ({ body: method(4, request.json as object) }),
    })
    await dataProvider.create('shipping-methods', { data: { name: 'Courier', price: 6.5, countries: ['ES', 'PT'], freeOver: null } })
    const previous = method(4, { name: 'Courier', price: 6.5, countries: ['ES', 'PT'] })
    await dataProvider.update('shipping-methods', { id: 4, data: { ...previous, countries: ['ES', 'FR'], freeOver: 50 }, previousData: previous })
    await dataProvider.update('shipping-methods', { id: 4, data: { ...previous, freeOver: '' }, previousData: { ...previous, freeOver: 50 } })
    await dataProvider.update('shipping-methods', { id: 4, data: { active: false }, previousData: previous })
    expect(sent.map(({ method, url, json }) => ({ method, url, json }))).toEqual([
      { method: 'POST', url: '/shipping-methods', json: { name: 'Courier', price: 6.5, countries: ['ES', 'PT'], freeOver: null, active: true } },
      { method: 'PATCH', url: '/shipping-methods/4', json: { countries: ['ES', 'FR'], freeOver: 50 } },
      { method: 'PATCH', url: '/shipping-methods/4', json: { freeOver: null } },
      { method: 'PATCH', url: '/shipping-methods/4', json: { active: false } },
    ])
  })

  it('move an order’s status, change a webhook by its changed fields, and read the overview’s figures', async () => {
    const webhook = { id: 3, url: 'https://hooks.example.com/a', events: ['order.created'], description: '', active: true, createdAt: at, updatedAt: at }
    const { dataProvider, sent } = fakeShop({
      'PATCH /orders/9/status': { body: { id: 9, status: 'paid' } },
      'PATCH /webhooks/3': { body: { ...webhook, active: false } },
      'GET /admin/api/stats': { body: { days: 7 } },
    })
    await dataProvider.update('orders', { id: 9, data: { status: 'paid' }, previousData: { id: 9, status: 'pending' } })
    await expect(dataProvider.update('orders', { id: 9, data: { status: 'lost' }, previousData: { id: 9 } })).rejects.toThrow('Not an order status: lost')
    await dataProvider.update('webhooks', { id: 3, data: { ...webhook, active: false }, previousData: webhook })
    expect(await dataProvider.getStats('stats', { days: 7 })).toEqual({ days: 7 })
    expect(sent).toEqual([
      { method: 'PATCH', url: '/orders/9/status', json: { status: 'paid' } },
      { method: 'PATCH', url: '/webhooks/3', json: { active: false } },
      { method: 'GET', url: '/admin/api/stats?days=7' },
    ])
  })

  it('list discount codes by q and active, create one, and change only what changed, never its code', async () => {
    const code = {
      id: 6,
      code: 'SUMMER10',
      type: 'percent',
      value: 12.5,
      minSubtotal: null,
      startsAt: '2026-12-01T00:00:00.000Z',
      endsAt: null,
      usageLimit: 100,
      perCustomerLimit: null,
      usageCount: 2,
      productIds: [7],
      categoryIds: [],
      active: true,
      createdAt: at,
      updatedAt: at,
    }
    const { dataProvider, sent } = fakeShop({
      'GET /discount-codes': { body: [code], headers: { 'X-Total-Count': '26' } },
      'POST /discount-codes': (request) => ({ status: 201, body: { ...code, ...(request.json as object) } }),
      'PATCH /discount-codes/6': (request) => ({ body: { ...code, ...(request.json as object) } }),
      'GET /discount-codes/6': { body: code },
      'DELETE /discount-codes/6': problem(409, 'discount_code_in_use', 'El código tiene usos: desactívalo en su lugar'),
    })
    const list = await dataProvider.getList('discount-codes', { ...page(2), filter: { q: 'summ', active: 'false' } })
    expect(list.total).toBe(26)
    // A date-time input gives the browser's local time: sent as the UTC instant it is.
    const local = '2026-12-24T09:30'
    await dataProvider.create('discount-codes', {
      data: {
        code: ' WINTER ',
        type: 'free_shipping',
        value: 10,
        startsAt: local,
        endsAt: null,
        usageLimit: '',
        productIds: [],
        categoryIds: [3],
        active: true,
      },
    })
    // Unchanged: the instant as typed in the input or as the record had it, the ids, the empty limit.
    await dataProvider.update('discount-codes', {
      id: 6,
      data: { ...code, code: 'OTHER', startsAt: '2026-12-01T00:00:00.000Z', usageLimit: 100, perCustomerLimit: '' },
      previousData: code,
    })
    // A new type goes with its value; an emptied limit is none (null).
    await dataProvider.update('discount-codes', { id: 6, data: { ...code, type: 'fixed', usageLimit: '' }, previousData: code })
    await dataProvider.update('discount-codes', { id: 6, data: { ...code, type: 'free_shipping', endsAt: local }, previousData: code })
    const refused = await failed(dataProvider.delete('discount-codes', { id: 6, previousData: code }))
    expect(errorCode(refused)).toBe('discount_code_in_use')
    expect(sent.map(({ method, url, json }) => ({ method, url, json }))).toEqual([
      { method: 'GET', url: '/discount-codes?limit=25&offset=25&q=summ&active=false', json: undefined },
      {
        method: 'POST',
        url: '/discount-codes',
        json: {
          code: 'WINTER',
          type: 'free_shipping',
          value: null,
          minSubtotal: null,
          startsAt: new Date(local).toISOString(),
          endsAt: null,
          usageLimit: null,
          perCustomerLimit: null,
          productIds: [],
          categoryIds: [3],
          active: true,
        },
      },
      { method: 'GET', url: '/discount-codes/6', json: undefined },
      { method: 'PATCH', url: '/discount-codes/6', json: { type: 'fixed', value: 12.5, usageLimit: null } },
      { method: 'PATCH', url: '/discount-codes/6', json: { type: 'free_shipping', value: null, endsAt: new Date(local).toISOString() } },
      { method: 'DELETE', url: '/discount-codes/6', json: undefined },
    ])
    const redemption = { orderId: 40, userId: null, email: 'ana@example.com', amount: 5.01, createdAt: at }
    const shop = fakeShop({ 'GET /discount-codes/6/redemptions': { body: [redemption], headers: { 'X-Total-Count': '11' } } })
    expect(await listRedemptions(shop.api, 6, { limit: 10, offset: 10 })).toEqual({ data: [redemption], total: 11 })
    expect(shop.sent).toEqual([{ method: 'GET', url: '/discount-codes/6/redemptions?limit=10&offset=10' }])
  })

  it('list tax rates by country and class, send only a rate’s changes, and name a tax class by its code in the path', async () => {
    const rate = (id: number, fields: object = {}) => ({
      id,
      country: 'ES',
      region: null,
      taxClass: 'standard',
      rate: 21,
      name: 'IVA 21%',
      createdAt: at,
      updatedAt: at,
      ...fields,
    })
    const taxClass = { id: 5, code: 'luxury', name: 'Lujo', createdAt: at, updatedAt: at }
    const { dataProvider, sent } = fakeShop({
      'GET /tax-rates': { body: [rate(1), rate(2, { region: 'Canarias', rate: 7, name: 'IGIC 7%' })] },
      'POST /tax-rates': (request) => ({ status: 201, body: rate(3, request.json as object) }),
      'PATCH /tax-rates/2': (request) => ({ body: rate(2, request.json as object) }),
      'GET /tax-classes': { body: [taxClass] },
      'PATCH /tax-classes/luxury': { body: { ...taxClass, name: 'Lujo alto' } },
      'DELETE /tax-classes/luxury': problem(409, 'tax_class_in_use', 'La clase de impuesto está en uso'),
      'POST /tax-classes': problem(409, 'tax_class_exists', 'La clase de impuesto ya existe', 'code'),
    })
    const list = await dataProvider.getList('tax-rates', { ...page(1, 1), filter: { country: 'ES', taxClass: 'standard' } })
    expect(list).toMatchObject({ total: 2, data: [{ id: 1 }] })
    await dataProvider.create('tax-rates', { data: { country: 'FR', region: ' ', taxClass: 'reduced', rate: 5.5, name: '' } })
    const canarias = rate(2, { region: 'Canarias', rate: 7, name: 'IGIC 7%' })
    await dataProvider.update('tax-rates', { id: 2, data: { ...canarias, rate: 3, name: '' }, previousData: canarias })
    await dataProvider.update('tax-classes', { id: 5, data: { ...taxClass, name: 'Lujo alto' }, previousData: taxClass })
    expect(errorCode(await failed(dataProvider.delete('tax-classes', { id: 5, previousData: taxClass })))).toBe('tax_class_in_use')
    const duplicate = await failed(dataProvider.create('tax-classes', { data: { code: 'luxury', name: 'Otra' } }))
    expect(duplicate).toMatchObject({ status: 409, body: { errors: { code: 'La clase de impuesto ya existe' } } })
    await expect(failed(dataProvider.create('tax-rates', { data: { country: 'XX', taxClass: 'standard', rate: 1 } }))).resolves.toMatchObject({
      status: 422,
      body: { errors: { country: 'country must be a valid ISO 3166-1 alpha-2 code' } },
    })
    expect(sent.map(({ method, url, json }) => ({ method, url, json }))).toEqual([
      { method: 'GET', url: '/tax-rates?country=ES&taxClass=standard', json: undefined },
      { method: 'POST', url: '/tax-rates', json: { country: 'FR', taxClass: 'reduced', rate: 5.5, region: null, name: null } },
      { method: 'PATCH', url: '/tax-rates/2', json: { rate: 3, name: null } },
      { method: 'PATCH', url: '/tax-classes/luxury', json: { name: 'Lujo alto' } },
      { method: 'GET', url: '/tax-classes', json: undefined },
      { method: 'DELETE', url: '/tax-classes/luxury', json: undefined },
      { method: 'POST', url: '/tax-classes', json: { code: 'luxury', name: 'Otra' } },
    ])
  })
  it('list API keys by page, create one with its expiry as UTC, revoke one, and rotate one', async () => {
    const key = {
      id: 4,
      name: 'ERP',
      staffRole: 'catalog',
      prefix: 'sk_0123456789ab',
      createdBy: 1,
      createdAt: at,
      expiresAt: null,
      lastUsedAt: null,
      revokedAt: null,
    }
    const secret = `sk_0123456789ab_${'A'.repeat(43)}`
    const { dataProvider, sent, api } = fakeShop({
      'GET /api-keys': { body: [key], headers: { 'X-Total-Count': '26' } },
      'POST /api-keys': { status: 201, body: { ...key, secret } },
      'DELETE /api-keys/4': { body: { message: 'Clave de API revocada' } },
      'POST /api-keys/4/rotate': { body: { ...key, secret } },
    })
    expect(await dataProvider.getList('api-keys', page(2))).toEqual({ data: [key], total: 26 })
    expect((await dataProvider.getOne('api-keys', { id: '4' })).data).toEqual(key)
    const created = await dataProvider.create('api-keys', { data: { name: 'ERP', staffRole: 'catalog', expiresAt: '2030-01-02T10:30' } })
    expect(created.data).toMatchObject({ id: 4, secret })
    await dataProvider.create('api-keys', { data: { name: 'Ops', staffRole: 'manager', expiresAt: '' } })
    await dataProvider.delete('api-keys', { id: 4, previousData: key })
    expect(await rotateApiKey(api, 4)).toMatchObject({ id: 4, secret })
    expect(sent).toEqual([
      { method: 'GET', url: '/api-keys?limit=25&offset=25' },
      { method: 'GET', url: '/api-keys?limit=1000&offset=0' },
      { method: 'POST', url: '/api-keys', json: { name: 'ERP', staffRole: 'catalog', expiresAt: new Date('2030-01-02T10:30').toISOString() } },
      { method: 'POST', url: '/api-keys', json: { name: 'Ops', staffRole: 'manager' } },
      { method: 'DELETE', url: '/api-keys/4', json: undefined },
      { method: 'POST', url: '/api-keys/4/rotate' },
    ])
  })
})
