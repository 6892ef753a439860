import { beforeEach, describe, expect, it } from 'vitest'
import type { ProductSummary } from '../../src/modules/catalog/products.service.js'
import { catalogCacheOn, useTestApp } from '../helpers/app.js'
import { emptyCatalog, filterCategory, filterProduct, get } from '../helpers/catalog-filters.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'

// GET /products filters of part 3 (docs/api.md, "Filters"): category with its descendants, tag, inStock,
// option.<Name>, status, q on a SKU; the variant conditions held by one same variant.

const t = useTestApp()

beforeEach(async () => {
  await emptyCatalog(t)
})

/** The names GET /products?<query> lists (anonymous unless `user`), sorted, and its total. */
async function names(query: string, user: Parameters<typeof get>[2] = null): Promise<{ names: string[]; total: number }> {
  const res = await get(t, `/products?${query}`, user)
  expect(res.statusCode, res.body).toBe(200)
  return { names: (res.json() as ProductSummary[]).map((p) => p.name).sort(), total: Number(res.headers['x-total-count']) }
}

describe('category', () => {
  it('takes an id or a slug and lists the category and its descendants; categoryId stays that category only', async () => {
    const root = await filterCategory(t, 'Ropa')
    const child = await filterCategory(t, 'Camisetas', root.id)
    const grandchild = await filterCategory(t, 'Manga corta', child.id)
    const other = await filterCategory(t, 'Hogar')
    await filterProduct(t, { name: 'A root', categoryId: root.id })
    await filterProduct(t, { name: 'B child', categoryId: child.id })
    await filterProduct(t, { name: 'C grandchild', categoryId: grandchild.id })
    await filterProduct(t, { name: 'D other', categoryId: other.id })
    await filterProduct(t, { name: 'E none' })
    expect(await names(`category=${root.id}`)).toEqual({ names: ['A root', 'B child', 'C grandchild'], total: 3 })
    expect(await names(`category=${child.slug}`)).toEqual({ names: ['B child', 'C grandchild'], total: 2 })
    expect(await names(`category=0${grandchild.id}`)).toEqual({ names: ['C grandchild'], total: 1 })
    expect(await names(`categoryId=${root.id}`)).toEqual({ names: ['A root'], total: 1 })
    // Both: AND.
    expect(await names(`category=${root.id}&categoryId=${other.id}`)).toEqual({ names: [], total: 0 })
  })

  it('an unknown id or slug matches nothing: an empty list, total 0', async () => {
    await filterProduct(t, { name: 'Anything' })
    expect(await names('category=999999')).toEqual({ names: [], total: 0 })
    expect(await names('category=no-such-category')).toEqual({ names: [], total: 0 })
  })

  it('422 for an empty or too long category', async () => {
    expect((await get(t, '/products?category=')).json()).toEqual({ error: 'category should not be empty' })
    expect((await get(t, `/products?category=${'a'.repeat(101)}`)).json()).toEqual({ error: 'category must be shorter than or equal to 100 characters' })
  })
})

describe('tag', () => {
  it('ignores case and spaces around, and lists products with any of the repeated values', async () => {
    await filterProduct(t, { name: 'Verano', tags: ['Verano', 'Playa'] })
    await filterProduct(t, { name: 'Invierno', tags: ['invierno'] })
    await filterProduct(t, { name: 'Sin etiquetas' })
    expect(await names('tag=VERANO')).toEqual({ names: ['Verano'], total: 1 })
    expect(await names('tag=%20playa%20')).toEqual({ names: ['Verano'], total: 1 })
    expect(await names('tag=verano&tag=Invierno')).toEqual({ names: ['Invierno', 'Verano'], total: 2 })
    expect(await names('tag=otoño')).toEqual({ names: [], total: 0 })
  })

  it('422 for an empty tag, one over 50 characters, or more than 50 values', async () => {
    expect((await get(t, '/products?tag=')).json()).toEqual({ error: 'tag should not be empty' })
    expect((await get(t, `/products?tag=${'x'.repeat(51)}`)).json()).toEqual({ error: 'tag must be shorter than or equal to 50 characters' })
    const many = Array.from({ length: 51 }, (_, i) => `tag=t${i}`).join('&')
    const res = await get(t, `/products?${many}`)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'tag must contain no more than 50 elements' })
  })
})

describe('inStock, prices and options: one same variant', () => {
  /** Variant A red, cheap, no stock; variant B blue, expensive, in stock. */
  const split = () =>
    filterProduct(t, {
      name: 'Split',
      variants: [
        { options: { Color: 'Rojo' }, priceCents: 1000, stock: 0 },
        { options: { Color: 'Azul' }, priceCents: 5000, stock: 4 },
      ],
    })

  it('a product whose red variant has no stock does not match option.Color=red&inStock=true', async () => {
    await split()
    expect(await names('option.Color=rojo&inStock=true')).toEqual({ names: [], total: 0 })
    expect(await names('option.Color=azul&inStock=true')).toEqual({ names: ['Split'], total: 1 })
    expect(await names('option.color=ROJO')).toEqual({ names: ['Split'], total: 1 })
    // The price range too: red costs 10.00, blue 50.00.
    expect(await names('option.Color=Rojo&minPrice=20')).toEqual({ names: [], total: 0 })
    expect(await names('option.Color=Azul&minPrice=20&maxPrice=60')).toEqual({ names: ['Split'], total: 1 })
    expect(await names('inStock=true&maxPrice=20')).toEqual({ names: [], total: 0 })
    expect(await names('inStock=true&minPrice=20')).toEqual({ names: ['Split'], total: 1 })
    // Between the two prices: no one variant.
    expect(await names('minPrice=20&maxPrice=40')).toEqual({ names: [], total: 0 })
    expect(await names('minPrice=10&maxPrice=10')).toEqual({ names: ['Split'], total: 1 })
    // Repeated values OR.
    expect(await names('option.Color=verde&option.Color=azul&inStock=true')).toEqual({ names: ['Split'], total: 1 })
  })

  it('several options must hold for the same variant', async () => {
    await filterProduct(t, {
      name: 'Shirt',
      variants: [
        { options: { Talla: 'S', Color: 'Rojo' }, priceCents: 1000, stock: 1 },
        { options: { Talla: 'M', Color: 'Azul' }, priceCents: 1000, stock: 1 },
      ],
    })
    expect(await names('option.Talla=S&option.Color=Rojo')).toEqual({ names: ['Shirt'], total: 1 })
    expect(await names('option.Talla=S&option.Color=Azul')).toEqual({ names: [], total: 0 })
    expect(await names('option.Talla=S&option.Talla=M&option.Color=azul')).toEqual({ names: ['Shirt'], total: 1 })
    // An option the product does not have: no match.
    expect(await names('option.Material=algodon')).toEqual({ names: [], total: 0 })
  })

  it('the total of a page counts each matching product once, with the status, categories, tags and search', async () => {
    const ropa = await filterCategory(t, 'Ropa')
    const hogar = await filterCategory(t, 'Hogar')
    const red = (priceCents: number, stock = 2) => ({ options: { Color: 'Rojo' }, priceCents, stock })
    // Two, three and one matching red variants: each product once. Then one matching only in another category, one
    // a draft, one whose red is out of stock.
    await filterProduct(t, {
      name: 'Shirt A',
      categoryId: ropa.id,
      tags: ['Verano'],
      variants: [
        { ...red(2000), options: { Color: 'Rojo', Talla: 'S' } },
        { ...red(2500), options: { Color: 'Rojo', Talla: 'M' } },
      ],
    })
    await filterProduct(t, {
      name: 'Shirt B',
      categoryId: ropa.id,
      variants: ['S', 'M', 'L'].map((talla, i) => ({ ...red(2100 + 100 * i), options: { Color: 'Rojo', Talla: talla } })),
    })
    await filterProduct(t, { name: 'Dress C', categoryId: ropa.id, tags: ['verano'], variants: [red(3000)] })
    await filterProduct(t, { name: 'Lamp', categoryId: hogar.id, variants: [red(2000)] })
    await filterProduct(t, { name: 'Draft', categoryId: ropa.id, status: 'draft', variants: [red(2000)] })
    await filterProduct(t, { name: 'Sold out', categoryId: ropa.id, variants: [red(2000, 0)] })
    const totalOf = async (query: string) => {
      // limit=1: the page is full, so the total is counted, not the page's length.
      const page = await names(`${query}&limit=1`, t.admin)
      const all = await names(`${query}&limit=100`, t.admin)
      expect(page.total, query).toBe(all.names.length)
      return all
    }
    const base = 'option.color=rojo&inStock=true&minPrice=15&maxPrice=40'
    expect(await totalOf(base)).toEqual({ names: ['Dress C', 'Lamp', 'Shirt A', 'Shirt B'], total: 4 })
    expect(await totalOf(`${base}&category=${ropa.slug}`)).toEqual({ names: ['Dress C', 'Shirt A', 'Shirt B'], total: 3 })
    expect(await totalOf(`${base}&categoryId=${hogar.id}`)).toEqual({ names: ['Lamp'], total: 1 })
    expect(await totalOf(`${base}&tag=VERANO`)).toEqual({ names: ['Dress C', 'Shirt A'], total: 2 })
    expect(await totalOf(`${base}&q=shirt`)).toEqual({ names: ['Shirt A', 'Shirt B'], total: 2 })
    expect(await totalOf(`${base}&q=shirt&tag=verano&category=${ropa.slug}`)).toEqual({ names: ['Shirt A'], total: 1 })
    expect(await totalOf(`${base}&status=any`)).toEqual({ names: ['Draft', 'Dress C', 'Lamp', 'Shirt A', 'Shirt B'], total: 5 })
    expect(await totalOf(`${base}&status=draft`)).toEqual({ names: ['Draft'], total: 1 })
    expect(await totalOf('option.color=rojo&option.talla=m&inStock=true')).toEqual({ names: ['Shirt A', 'Shirt B'], total: 2 })
    // Shirt A's M costs 25.00: the size and the price on one same variant.
    expect(await totalOf('option.color=rojo&option.talla=m&inStock=true&maxPrice=22')).toEqual({ names: ['Shirt B'], total: 1 })
  })

  it('inStock=false: a variant meets the other conditions and none of those has stock; true/false split the matches', async () => {
    await split()
    await filterProduct(t, { name: 'Empty', stock: 0 })
    await filterProduct(t, { name: 'Full', stock: 3 })
    expect(await names('inStock=true')).toEqual({ names: ['Full', 'Split'], total: 2 })
    expect(await names('inStock=false')).toEqual({ names: ['Empty'], total: 1 })
    expect(await names('option.Color=rojo&inStock=false')).toEqual({ names: ['Split'], total: 1 })
    expect(await names('option.Color=azul&inStock=false')).toEqual({ names: [], total: 0 })
    expect(await names('maxPrice=20&inStock=false')).toEqual({ names: ['Empty', 'Split'], total: 2 })
  })

  it('an order taking the red variant’s last unit takes the product out of option.Color=rojo&inStock=true; its cancel puts it back', async () => {
    const product = await filterProduct(t, {
      name: 'Last',
      variants: [
        { options: { Color: 'Rojo' }, priceCents: 1000, stock: 1 },
        { options: { Color: 'Azul' }, priceCents: 1000, stock: 3 },
      ],
    })
    const facetCount = async (query: string) => {
      const res = await get(t, `/products/facets?${query}`)
      expect(res.statusCode, res.body).toBe(200)
      return (res.json() as { total: number }).total
    }
    expect(await names('option.Color=rojo&inStock=true&maxPrice=10')).toEqual({ names: ['Last'], total: 1 })
    await fillCart(t.app, t.customer.id, [{ productId: product.id, variantId: product.variantIds[0]!, quantity: 1 }])
    const order = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(t.customer), payload: {} })
    expect(order.statusCode, order.body).toBe(201)
    expect(await names('option.Color=rojo&inStock=true&maxPrice=10')).toEqual({ names: [], total: 0 })
    expect(await facetCount('option.Color=rojo&inStock=true')).toBe(0)
    expect(await names('option.Color=azul&inStock=true&maxPrice=10')).toEqual({ names: ['Last'], total: 1 })
    expect(await names('option.Color=rojo&inStock=false')).toEqual({ names: ['Last'], total: 1 })
    const { id } = order.json() as { id: number }
    const cancel = await t.app.inject({ method: 'PATCH', url: `/orders/${id}/status`, headers: bearer(t.admin), payload: { status: 'cancelled' } })
    expect(cancel.statusCode, cancel.body).toBe(200)
    expect(await names('option.Color=rojo&inStock=true&maxPrice=10')).toEqual({ names: ['Last'], total: 1 })
    expect(await facetCount('option.Color=rojo&inStock=true')).toBe(1)
  })

  it('prices up to the largest allowed compare on one same variant (beyond 32 bits of cents), list and facets', async () => {
    await filterProduct(t, {
      name: 'Yate',
      variants: [
        { options: { Color: 'Rojo' }, priceCents: 3_000_000_000, stock: 1 },
        { options: { Color: 'Azul' }, priceCents: 9_999_999_999, stock: 1 },
      ],
    })
    expect(await names('option.Color=rojo&minPrice=20000000&maxPrice=99999999')).toEqual({ names: ['Yate'], total: 1 })
    expect(await names('option.Color=azul&maxPrice=99999999')).toEqual({ names: [], total: 0 })
    expect(await names('option.Color=azul&inStock=true&minPrice=99999999.99')).toEqual({ names: ['Yate'], total: 1 })
    const facets = await get(t, '/products/facets?option.Color=azul&inStock=true&minPrice=99999999.99')
    expect(facets.statusCode, facets.body).toBe(200)
    expect(facets.json()).toMatchObject({ total: 1, price: { min: 99999999.99, max: 99999999.99 } })
  })

  it('the listed product keeps its own price: sort=price_* uses the lowest variant price', async () => {
    await split()
    await filterProduct(t, { name: 'Middle', priceCents: 3000 })
    const res = await get(t, '/products?sort=price_desc&minPrice=20')
    expect((res.json() as ProductSummary[]).map((p) => [p.name, p.price])).toEqual([
      ['Middle', 30],
      ['Split', 10],
    ])
  })

  it('422 for inStock other than true/false, and for more than 10 option values in all', async () => {
    expect((await get(t, '/products?inStock=yes')).json()).toEqual({ error: 'inStock must be a boolean value' })
    expect((await get(t, '/products?inStock=1')).json()).toEqual({ error: 'inStock must be a boolean value' })
    expect((await get(t, '/products?inStock=')).json()).toEqual({ error: 'inStock must be a boolean value' })
    const eleven = [...Array.from({ length: 6 }, (_, i) => `option.Color=c${i}`), ...Array.from({ length: 5 }, (_, i) => `option.Talla=t${i}`)].join('&')
    const res = await get(t, `/products?${eleven}`)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'option.* must contain no more than 10 elements' })
    const ten = eleven.replace('&option.Talla=t4', '')
    expect((await get(t, `/products?${ten}`)).statusCode).toBe(200)
    expect((await get(t, '/products?option.Color=')).json()).toEqual({ error: 'option.Color should not be empty' })
    expect((await get(t, `/products?option.Color=${'x'.repeat(101)}`)).json()).toEqual({
      error: 'option.Color must be shorter than or equal to 100 characters',
    })
    // Not an option parameter: refused as any unknown one.
    expect((await get(t, '/products?options.Color=x')).json()).toEqual({ error: 'property options.Color should not exist' })
  })
})

describe('q on a SKU', () => {
  it('matches a whole SKU ignoring case, not a part of it', async () => {
    await filterProduct(t, { name: 'Camiseta', variants: [{ options: { Talla: 'S' }, priceCents: 1000, stock: 1, sku: 'TS-RED-01' }] })
    await filterProduct(t, { name: 'Taza' })
    expect(await names('q=ts-red-01')).toEqual({ names: ['Camiseta'], total: 1 })
    expect(await names('q=TS-RED')).toEqual({ names: [], total: 0 })
    expect(await names('q=taza')).toEqual({ names: ['Taza'], total: 1 })
  })
})

describe('status', () => {
  it('401 without a token and 403 for a customer, whatever the value, before validation', async () => {
    for (const status of ['active', 'draft', 'archived', 'any', 'nonsense']) {
      const anonymous = await get(t, `/products?status=${status}`)
      expect([anonymous.statusCode, anonymous.json()]).toEqual([401, { error: 'Unauthorized - No user found' }])
      const customer = await get(t, `/products?status=${status}`, t.customer)
      expect([customer.statusCode, customer.json()]).toEqual([403, { error: 'Forbidden - Requires one of the following roles: admin' }])
    }
    const invalid = await get(t, '/products?status=draft&inStock=maybe')
    expect([invalid.statusCode, invalid.json()]).toEqual([401, { error: 'Unauthorized - No user found' }])
    // The same answers as an admin route's.
    const adminRoute = (user: typeof t.customer | null) => t.app.inject({ method: 'DELETE', url: '/products/999999', headers: user ? bearer(user) : {} })
    expect((await get(t, '/products?status=any')).json()).toEqual((await adminRoute(null)).json())
    expect((await get(t, '/products?status=any', t.customer)).json()).toEqual((await adminRoute(t.customer)).json())
    expect((await get(t, '/products?status=nonsense', t.admin)).json()).toEqual({
      error: 'status must be one of the following values: active, draft, archived, any',
    })
  })

  it('an admin lists drafts, archived or any; the public list never shows drafts or archived products', async () => {
    await filterProduct(t, { name: 'Live' })
    await filterProduct(t, { name: 'Draft', status: 'draft' })
    await filterProduct(t, { name: 'Old', status: 'archived' })
    expect(await names('')).toEqual({ names: ['Live'], total: 1 })
    expect(await names('status=active', t.admin)).toEqual({ names: ['Live'], total: 1 })
    expect(await names('status=draft', t.admin)).toEqual({ names: ['Draft'], total: 1 })
    expect(await names('status=archived', t.admin)).toEqual({ names: ['Old'], total: 1 })
    expect(await names('status=any', t.admin)).toEqual({ names: ['Draft', 'Live', 'Old'], total: 3 })
    // A token without the parameter still gets the public list.
    expect(await names('', t.admin)).toEqual({ names: ['Live'], total: 1 })
  })

  it('a list naming a status is never cached, nor its URL remembered', async () => {
    await filterProduct(t, { name: 'Draft', status: 'draft' })
    const before = t.app.catalogCache.usage().keys
    await names('status=draft', t.admin)
    await names('status=draft', t.admin)
    expect(t.app.catalogCache.usage().keys).toBe(before)
    await names('status=active', t.admin)
    const active = await get(t, '/products?status=active')
    expect([active.statusCode, active.json()]).toEqual([401, { error: 'Unauthorized - No user found' }])
  })
})

describe('parameters together', () => {
  it('AND between parameters; the link keeps them in one order, repeated values sorted and lower-cased', async () => {
    const root = await filterCategory(t, 'Ropa')
    for (let i = 0; i < 3; i += 1) {
      await filterProduct(t, {
        name: `Match ${i}`,
        categoryId: root.id,
        tags: ['Verano'],
        variants: [{ options: { Color: 'Rojo' }, priceCents: 1500, stock: 2 }],
      })
    }
    await filterProduct(t, { name: 'Wrong tag', categoryId: root.id, tags: ['Otro'], variants: [{ options: { Color: 'Rojo' }, priceCents: 1500, stock: 2 }] })
    await makeProduct(t.app, { name: 'Plain', categoryId: root.id, priceCents: 1500 })
    const query = `option.COLOR=ROJO&tag=verano&tag=Abc&inStock=true&maxPrice=20&category=${root.slug}&limit=2`
    const res = await get(t, `/products?${query}`)
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-total-count']).toBe('3')
    expect(res.headers.link).toBe(
      `<http://shop.test/products?limit=2&offset=2&category=${root.slug}&maxPrice=20&tag=abc&tag=verano&inStock=true&option.color=rojo>; rel="next"`,
    )
    const next = /<http:\/\/shop\.test([^>]+)>/.exec(res.headers.link as string)![1]!
    const followed = await get(t, next)
    expect((followed.json() as ProductSummary[]).length).toBe(1)
  })

  it('the same filter in two spellings is one cache entry', async () => {
    await filterProduct(t, { name: 'Red', tags: ['A'], variants: [{ options: { Color: 'Rojo' }, priceCents: 1500, stock: 2 }] })
    const one = await get(t, '/products?tag=a&tag=B&option.Color=rojo')
    const hits = t.app.catalogCache.hits().total
    const two = await get(t, '/products?option.color=ROJO&tag=b&tag=A')
    expect(two.body).toBe(one.body)
    expect(t.app.catalogCache.hits().total - hits).toBe(catalogCacheOn ? 1 : 0)
  })
})
