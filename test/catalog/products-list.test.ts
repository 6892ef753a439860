import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { makeCategory, makeProduct, type TestProduct } from '../helpers/catalog.js'
import type { ProductSummary as Product } from '../../src/modules/catalog/products.service.js'

const t = useTestApp()
let toys: number
let books: number
const made: TestProduct[] = []

beforeAll(async () => {
  toys = (await makeCategory(t.app, 'Toys')).id
  books = (await makeCategory(t.app, 'Books')).id
  const base = Date.parse('2026-01-01T00:00:00.000Z')
  const specs = [
    { name: 'Robot', description: 'A walking ROBOT toy', priceCents: 4999, categoryId: toys },
    { name: 'Ball', description: 'Red rubber ball', priceCents: 299, categoryId: toys },
    { name: 'Kite', description: '100% nylon', priceCents: 1500, categoryId: toys },
    { name: 'Atlas', description: 'Maps of the world', priceCents: 3000, categoryId: books },
    { name: 'Novel', description: 'A long story', priceCents: 1500, categoryId: books },
    { name: 'Gift card', description: 'Any amount', priceCents: 2000, categoryId: null },
  ]
  for (const [i, spec] of specs.entries()) {
    made.push(await makeProduct(t.app, { ...spec, createdAt: new Date(base + i * 1000).toISOString() }))
  }
})

async function list(query = '') {
  const res = await t.app.inject({ method: 'GET', url: `/products${query}` })
  return { res, names: res.statusCode === 200 ? (res.json() as Product[]).map((p) => p.name) : [] }
}

describe('GET /products', () => {
  it('is public: newest first by default, with X-Total-Count and no Link when everything fits', async () => {
    const { res, names } = await list()
    expect(res.statusCode).toBe(200)
    expect(names).toEqual(['Gift card', 'Novel', 'Atlas', 'Kite', 'Ball', 'Robot'])
    expect(res.headers['x-total-count']).toBe('6')
    expect(res.headers.link).toBeUndefined()
  })

  it('shows each product in the documented shape', async () => {
    const { res } = await list('?sort=name&limit=1')
    expect(res.json()).toEqual([
      {
        id: made[3]!.id,
        name: 'Atlas',
        slug: made[3]!.slug,
        description: 'Maps of the world',
        status: 'active',
        price: 30,
        stock: 10,
        imageUrl: made[3]!.imageUrl,
        categoryId: books,
        taxClass: 'standard',
        tags: [],
        priceRange: { min: 30, max: 30 },
        inStock: true,
        createdAt: '2026-01-01T00:00:03.000Z',
        updatedAt: '2026-01-01T00:00:03.000Z',
      },
    ])
    const gift = (await list('?q=gift')).res.json()[0]
    expect(gift.categoryId).toBeNull()
    expect(gift.price).toBe(20)
  })

  it('pages with limit and offset and links next/prev (RFC 8288), keeping the other parameters', async () => {
    const first = await list('?limit=2&sort=price_asc')
    expect(first.names).toEqual(['Ball', 'Kite'])
    expect(first.res.headers['x-total-count']).toBe('6')
    expect(first.res.headers.link).toBe('<http://shop.test/products?limit=2&offset=2&sort=price_asc>; rel="next"')
    const middle = await list('?limit=2&offset=2&sort=price_asc')
    expect(middle.names).toEqual(['Novel', 'Gift card'])
    expect(middle.res.headers.link).toBe(
      '<http://shop.test/products?limit=2&offset=4&sort=price_asc>; rel="next", <http://shop.test/products?limit=2&offset=0&sort=price_asc>; rel="prev"',
    )
    const last = await list('?limit=2&offset=4&sort=price_asc')
    expect(last.names).toEqual(['Atlas', 'Robot'])
    expect(last.res.headers.link).toBe('<http://shop.test/products?limit=2&offset=2&sort=price_asc>; rel="prev"')
    const beyond = await list('?offset=50')
    expect(beyond.names).toEqual([])
    expect(beyond.res.headers['x-total-count']).toBe('6')
    expect(beyond.res.headers.link).toBe('<http://shop.test/products?limit=100&offset=0>; rel="prev"')
  })

  it('links with the parameters as the service read them: one order, defaults left out', async () => {
    // Parameters the list does not define are refused (test/list-queries.test.ts).
    expect((await list('?junk=x&sort=price_asc')).res.statusCode).toBe(422)
    const messy = await list('?sort=price_asc&offset=02&limit=2.0&q=%20a%20')
    const tidy = await list('?limit=2&offset=2&q=a&sort=price_asc')
    expect(messy.res.statusCode).toBe(200)
    expect(messy.names).toEqual(tidy.names)
    expect(messy.res.headers.link).toBe(tidy.res.headers.link)
    expect(tidy.res.headers.link).toBe(
      '<http://shop.test/products?limit=2&offset=4&q=a&sort=price_asc>; rel="next", <http://shop.test/products?limit=2&offset=0&q=a&sort=price_asc>; rel="prev"',
    )
    expect((await list('?sort=newest&limit=1')).res.headers.link).toBe('<http://shop.test/products?limit=1&offset=1>; rel="next"')
    // A link followed gives the page it names: a term with spaces, quotes and % round-trips.
    const p = await makeProduct(t.app, { name: 'Taza "50% off" a', description: 'x' })
    const other = await makeProduct(t.app, { name: 'Taza "50% off" b', description: 'x' })
    const page = await list(`?q=${encodeURIComponent('"50% off"')}&limit=1`)
    expect(page.names).toEqual(['Taza "50% off" b'])
    const next = /<http:\/\/shop\.test([^>]+)>; rel="next"/.exec(page.res.headers.link as string)?.[1]
    expect(next).toBe('/products?limit=1&offset=1&q=%2250%25+off%22')
    const followed = await t.app.inject({ method: 'GET', url: next! })
    expect((followed.json() as Product[]).map((x) => x.name)).toEqual(['Taza "50% off" a'])
    await t.app.db.deleteFrom('products').where('id', 'in', [p.id, other.id]).execute()
    t.app.catalogCache.invalidate()
  })

  it.each([
    ['newest', ['Gift card', 'Novel', 'Atlas', 'Kite', 'Ball', 'Robot']],
    ['price_asc', ['Ball', 'Kite', 'Novel', 'Gift card', 'Atlas', 'Robot']],
    ['price_desc', ['Robot', 'Atlas', 'Gift card', 'Novel', 'Kite', 'Ball']],
    ['name', ['Atlas', 'Ball', 'Gift card', 'Kite', 'Novel', 'Robot']],
  ])('sort=%s', async (sort, expected) => {
    expect((await list(`?sort=${sort}`)).names).toEqual(expected)
  })

  it('filters by category, with the count of matches', async () => {
    const { res, names } = await list(`?categoryId=${toys}&sort=price_asc`)
    expect(names).toEqual(['Ball', 'Kite', 'Robot'])
    expect(res.headers['x-total-count']).toBe('3')
    expect((await list('?categoryId=999999')).names).toEqual([])
  })

  it('q matches name or description, ignoring case; % and _ are literal', async () => {
    expect((await list('?q=robot')).names).toEqual(['Robot'])
    expect((await list('?q=RUBBER')).names).toEqual(['Ball'])
    expect((await list('?q=%25')).names).toEqual(['Kite'])
    expect((await list('?q=_')).names).toEqual([])
    expect((await list('?q=o&categoryId=' + books + '&sort=name')).names).toEqual(['Atlas', 'Novel'])
    const { res } = await list('?q=a&limit=1&sort=name')
    expect(res.headers['x-total-count']).toBe(String(made.filter((p) => /a/i.test(p.name + ' ' + p.description)).length))
  })

  it('q follows renames and deletions, and takes quotes and % literally', async () => {
    const p = await makeProduct(t.app, { name: 'Zapato "clásico"', description: 'Cuero 100% natural' })
    expect((await list('?q="clásico"')).names).toEqual(['Zapato "clásico"'])
    expect((await list('?q=100%25 nat')).names).toEqual(['Zapato "clásico"'])
    expect((await list('?q=ZAPATO')).names).toEqual(['Zapato "clásico"'])
    await t.app.db.updateTable('products').set({ name: 'Bota' }).where('id', '=', p.id).execute()
    t.app.catalogCache.invalidate()
    expect((await list('?q=zapato')).names).toEqual([])
    expect((await list('?q=bota')).names).toEqual(['Bota'])
    await t.app.db.deleteFrom('products').where('id', '=', p.id).execute()
    t.app.catalogCache.invalidate()
    expect((await list('?q=bota')).names).toEqual([])
    expect((await list('?q=cuero')).res.headers['x-total-count']).toBe('0')
  })

  it('filters by price range, bounds included', async () => {
    expect((await list('?minPrice=15&maxPrice=30&sort=price_asc')).names).toEqual(['Kite', 'Novel', 'Gift card', 'Atlas'])
    expect((await list('?minPrice=15.01&sort=price_asc')).names).toEqual(['Gift card', 'Atlas', 'Robot'])
    expect((await list('?maxPrice=2.99')).names).toEqual(['Ball'])
    expect((await list('?minPrice=50&maxPrice=10')).names).toEqual([])
  })

  it.each([
    ['limit=0', 'limit must not be less than 1'],
    ['limit=1001', 'limit must not be greater than 1000'],
    ['limit=abc', 'limit must be an integer number'],
    ['offset=-1', 'offset must not be less than 0'],
    ['sort=cheap', 'sort must be one of the following values: newest, price_asc, price_desc, name'],
    ['categoryId=abc', 'categoryId must be an integer number'],
    ['categoryId=0', 'categoryId must not be less than 1'],
    ['minPrice=-1', 'minPrice must not be less than 0'],
    ['minPrice=abc', 'minPrice must be a number'],
    ['maxPrice=1.234', 'maxPrice must be a number conforming to the specified constraints'],
    ['q=' + 'x'.repeat(101), 'q must be shorter than or equal to 100 characters'],
  ])('422 for %s', async (query, message) => {
    const res = await t.app.inject({ method: 'GET', url: `/products?${query}` })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
  })

  it('limit 1000 is allowed', async () => {
    expect((await list('?limit=1000')).res.statusCode).toBe(200)
  })
})

describe('GET /products/:id', () => {
  it('returns the product, with its images, options and variants (one default variant)', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/products/${made[0]!.id}` })
    expect(res.statusCode).toBe(200)
    const { priceCents: _cents, ...summary } = made[0]!
    const body = res.json()
    expect(body).toEqual({
      ...summary,
      images: [{ id: expect.any(Number), url: made[0]!.imageUrl, alt: '', position: 0 }],
      options: [],
      variants: [
        {
          id: expect.any(Number),
          productId: made[0]!.id,
          sku: null,
          title: null,
          price: 49.99,
          compareAtPrice: null,
          stock: made[0]!.stock,
          optionValues: [],
          imageId: body.images[0].id,
          taxClass: null,
          position: 0,
          createdAt: made[0]!.createdAt,
          updatedAt: made[0]!.createdAt,
        },
      ],
    })
    expect(body.price).toBe(49.99)
  })

  it('404 for an unknown id', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/products/999999' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Producto no encontrado' })
  })

  // Text that is not an id is a slug (GET /products/:idOrSlug): one that names no product is not found.
  it.each(['abc', '1.5', '0', 'Mixed-Case'])('404 for %s, a slug or id of no product', async (id) => {
    const res = await t.app.inject({ method: 'GET', url: `/products/${id}` })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Producto no encontrado' })
  })
})

describe('q on text that is not ASCII', () => {
  const other = useTestApp()
  beforeAll(async () => {
    await makeProduct(other.app, { name: 'Él café', description: 'tostado', priceCents: 100, categoryId: null })
    await makeProduct(other.app, { name: 'ÑANDÚ grande', description: 'peluche', priceCents: 200, categoryId: null })
    await makeProduct(other.app, { name: 'Mate', description: 'CALABAZA ÚNICA', priceCents: 300, categoryId: null })
  })

  // One and two letters are below the trigram index's reach (SQLite), three and more use it.
  it.each([
    ['él', ['Él café']],
    ['ÉL', ['Él café']],
    ['ñ', ['ÑANDÚ grande']],
    ['ú', ['Mate', 'ÑANDÚ grande']],
    ['Ú', ['Mate', 'ÑANDÚ grande']],
    ['ñan', ['ÑANDÚ grande']],
    ['única', ['Mate']],
    ['CAFÉ', ['Él café']],
  ])('q=%s matches ignoring case', async (q, expected) => {
    const res = await other.app.inject({ method: 'GET', url: `/products?sort=name&q=${encodeURIComponent(q)}` })
    expect(res.statusCode).toBe(200)
    expect((res.json() as Product[]).map((p) => p.name)).toEqual(expected)
    expect(res.headers['x-total-count']).toBe(String(expected.length))
  })
})

describe('sort=name', () => {
  const other = useTestApp()
  beforeAll(async () => {
    for (const name of ['Zebra', 'apple', 'Banana', 'banana', 'cherry']) await makeProduct(other.app, { name, priceCents: 100, categoryId: null })
  })

  it('orders by name ignoring case, ties by id, on every page', async () => {
    const names = async (query: string) => ((await other.app.inject({ url: `/products?sort=name${query}` })).json() as Product[]).map((p) => p.name)
    expect(await names('')).toEqual(['apple', 'Banana', 'banana', 'cherry', 'Zebra'])
    expect(await names('&limit=2&offset=2')).toEqual(['banana', 'cherry'])
  })
})
