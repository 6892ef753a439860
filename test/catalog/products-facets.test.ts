import { beforeEach, describe, expect, it } from 'vitest'
import { catalogCacheOn, useTestApp } from '../helpers/app.js'
import { emptyCatalog, filterCategory, filterProduct, get } from '../helpers/catalog-filters.js'
import { bearer } from '../helpers/factories.js'

// GET /products/facets (docs/api.md, "Facets"): the list's filters, each facet without its own.

const t = useTestApp()

beforeEach(async () => {
  await emptyCatalog(t)
})

interface Facets {
  total: number
  categories: Array<{ id: number; slug: string; name: string; count: number }>
  tags: Array<{ tag: string; count: number }>
  options: Array<{ name: string; values: Array<{ value: string; count: number }> }>
  price: { min: number; max: number } | null
}

async function facets(query = '', user: Parameters<typeof get>[2] = null): Promise<Facets> {
  const res = await get(t, `/products/facets${query ? `?${query}` : ''}`, user)
  expect(res.statusCode, res.body).toBe(200)
  return res.json() as Facets
}

/**
 * Ropa > Camisetas, and Hogar. Shirt 1 (Camisetas; red S 10.00 no stock, blue M 30.00 stock 2; Verano), Shirt 2
 * (Camisetas; red M 20.00 stock 1; verano, Algodón), Mug (Hogar; 5.00 stock 3; Regalo), and a draft in Hogar.
 */
async function shop() {
  const ropa = await filterCategory(t, 'Ropa')
  const camisetas = await filterCategory(t, 'Camisetas', ropa.id)
  const hogar = await filterCategory(t, 'Hogar')
  await filterProduct(t, {
    name: 'Shirt 1',
    categoryId: camisetas.id,
    tags: ['Verano'],
    variants: [
      { options: { Color: 'Rojo', Talla: 'S' }, priceCents: 1000, stock: 0 },
      { options: { Color: 'Azul', Talla: 'M' }, priceCents: 3000, stock: 2 },
    ],
  })
  await filterProduct(t, {
    name: 'Shirt 2',
    categoryId: camisetas.id,
    tags: ['verano', 'Algodón'],
    variants: [{ options: { color: 'ROJO', talla: 'M' }, priceCents: 2000, stock: 1 }],
  })
  await filterProduct(t, { name: 'Mug', categoryId: hogar.id, tags: ['Regalo'], priceCents: 500, stock: 3 })
  await filterProduct(t, { name: 'Hidden', categoryId: hogar.id, tags: ['Secreto'], priceCents: 99900, status: 'draft' })
  return { ropa, camisetas, hogar }
}

describe('GET /products/facets', () => {
  it('without filters: every active product, categories by subtree, tags and options merged ignoring case, the price range', async () => {
    const { ropa, camisetas, hogar } = await shop()
    expect(await facets()).toEqual({
      total: 3,
      categories: [
        { id: camisetas.id, slug: camisetas.slug, name: 'Camisetas', count: 2 },
        { id: ropa.id, slug: ropa.slug, name: 'Ropa', count: 2 },
        { id: hogar.id, slug: hogar.slug, name: 'Hogar', count: 1 },
      ],
      tags: [
        { tag: 'Verano', count: 2 },
        { tag: 'Algodón', count: 1 },
        { tag: 'Regalo', count: 1 },
      ],
      options: [
        {
          name: 'Color',
          values: [
            { value: 'Rojo', count: 2 },
            { value: 'Azul', count: 1 },
          ],
        },
        {
          name: 'Talla',
          values: [
            { value: 'M', count: 2 },
            { value: 'S', count: 1 },
          ],
        },
      ],
      price: { min: 5, max: 30 },
    })
  })

  it('each facet applies every filter but its own', async () => {
    const { ropa, camisetas, hogar } = await shop()
    // category: the categories facet ignores it; the others apply it.
    const inRopa = await facets(`category=${ropa.slug}`)
    expect(inRopa.total).toBe(2)
    expect(inRopa.categories.map((c) => [c.name, c.count])).toEqual([
      ['Camisetas', 2],
      ['Ropa', 2],
      ['Hogar', 1],
    ])
    expect(inRopa.tags).toEqual([
      { tag: 'Verano', count: 2 },
      { tag: 'Algodón', count: 1 },
    ])
    expect(inRopa.price).toEqual({ min: 10, max: 30 })
    expect((await facets(`categoryId=${hogar.id}`)).categories.map((c) => c.id)).toEqual([camisetas.id, ropa.id, hogar.id])
    // tag: the tag facet ignores it.
    const algodon = await facets('tag=ALGODÓN')
    expect(algodon.total).toBe(1)
    expect(algodon.tags.map((x) => x.tag)).toEqual(['Verano', 'Algodón', 'Regalo'])
    expect(algodon.categories.map((c) => [c.name, c.count])).toEqual([
      ['Camisetas', 1],
      ['Ropa', 1],
    ])
    // price: the range ignores minPrice/maxPrice, the rest applies them (one same variant).
    const cheap = await facets('maxPrice=15')
    expect(cheap.total).toBe(2)
    expect(cheap.price).toEqual({ min: 5, max: 30 })
    expect(cheap.options).toEqual([
      { name: 'Color', values: [{ value: 'Rojo', count: 1 }] },
      { name: 'Talla', values: [{ value: 'S', count: 1 }] },
    ])
  })

  it('an option’s values ignore its own filter but apply the other options, prices and stock, on one same variant', async () => {
    await shop()
    const red = await facets('option.color=rojo')
    expect(red.total).toBe(2)
    expect(red.options).toEqual([
      {
        name: 'Color',
        values: [
          { value: 'Rojo', count: 2 },
          { value: 'Azul', count: 1 },
        ],
      },
      {
        name: 'Talla',
        values: [
          { value: 'M', count: 1 },
          { value: 'S', count: 1 },
        ],
      },
    ])
    // In stock: Shirt 1's red variant has none, so red counts Shirt 2 only (spelled as there), and S nobody.
    const inStock = await facets('inStock=true')
    expect(inStock.total).toBe(3)
    expect(inStock.options).toEqual([
      {
        name: 'Color',
        values: [
          { value: 'Azul', count: 1 },
          { value: 'ROJO', count: 1 },
        ],
      },
      { name: 'Talla', values: [{ value: 'M', count: 2 }] },
    ])
    expect(inStock.price).toEqual({ min: 5, max: 30 })
    // Red and in stock: Shirt 2 only (20.00); the Talla facet sees only red variants in stock.
    const redInStock = await facets('option.Color=Rojo&inStock=true')
    expect(redInStock.total).toBe(1)
    expect(redInStock.price).toEqual({ min: 20, max: 20 })
    // Spelled as on the oldest product counted: Talla counts Shirt 2 only, whose option is `talla`.
    expect(redInStock.options).toEqual([
      {
        name: 'Color',
        values: [
          { value: 'Azul', count: 1 },
          { value: 'ROJO', count: 1 },
        ],
      },
      { name: 'talla', values: [{ value: 'M', count: 1 }] },
    ])
    // Two option filters: each name's values apply the other one.
    const two = await facets('option.Color=Rojo&option.Talla=S')
    expect(two.total).toBe(1)
    expect(two.options).toEqual([
      { name: 'Color', values: [{ value: 'Rojo', count: 1 }] },
      {
        name: 'Talla',
        values: [
          { value: 'M', count: 1 },
          { value: 'S', count: 1 },
        ],
      },
    ])
  })

  it('with a search or tags beside the options, every facet checks them on the product (total = the list’s count)', async () => {
    await shop()
    const totals = async (query: string) => {
      const list = await get(t, `/products?${query}`)
      expect(list.statusCode, list.body).toBe(200)
      return { facets: (await facets(query)).total, list: Number(list.headers['x-total-count']) }
    }
    expect(await totals('option.Color=rojo&tag=algodón')).toEqual({ facets: 1, list: 1 })
    expect(await totals('option.Color=rojo&inStock=true&tag=regalo')).toEqual({ facets: 0, list: 0 })
    expect(await totals('option.Color=azul&inStock=true&q=shirt 1')).toEqual({ facets: 1, list: 1 })
    expect(await totals('option.Color=rojo&maxPrice=15&q=shirt')).toEqual({ facets: 1, list: 1 })
    // The option's own values and the others', with the search: only Shirt 2 is counted, in its own spellings.
    const both = await facets('option.Color=rojo&inStock=true&q=shirt 2')
    expect(both.options).toEqual([
      { name: 'color', values: [{ value: 'ROJO', count: 1 }] },
      { name: 'talla', values: [{ value: 'M', count: 1 }] },
    ])
    expect((await facets('inStock=true&minPrice=1&q=shirt 1')).options).toEqual([
      { name: 'Color', values: [{ value: 'Azul', count: 1 }] },
      { name: 'Talla', values: [{ value: 'M', count: 1 }] },
    ])
  })

  it('an option and a price range: the categories counted one by one, the products without a category in the total', async () => {
    const { ropa, camisetas, hogar } = await shop()
    // Red in stock between 15 and 40: Shirt 2 (Camisetas, 20.00) and Loose (no category, 25.00); not Shirt 1 (red out
    // of stock), not Lamp (Hogar, its red at 45.00), not Stored (red in range, archived).
    await filterProduct(t, { name: 'Loose', variants: [{ options: { Color: 'Rojo' }, priceCents: 2500, stock: 1 }] })
    await filterProduct(t, { name: 'Lamp', categoryId: hogar.id, variants: [{ options: { Color: 'rojo' }, priceCents: 4500, stock: 4 }] })
    await filterProduct(t, {
      name: 'Stored',
      categoryId: hogar.id,
      status: 'archived',
      variants: [{ options: { Color: 'Rojo' }, priceCents: 3000, stock: 4 }],
    })
    const query = 'option.color=rojo&minPrice=15&maxPrice=40&inStock=true'
    const out = await facets(query)
    expect(out.total).toBe(2)
    expect(out.categories).toEqual([
      { id: camisetas.id, slug: camisetas.slug, name: 'Camisetas', count: 1 },
      { id: ropa.id, slug: ropa.slug, name: 'Ropa', count: 1 },
    ])
    expect(Number((await get(t, `/products?${query}`)).headers['x-total-count'])).toBe(2)
    // Within a category the total is that category's part; the categories facet stays the same.
    const inHogar = await facets(`${query}&category=${hogar.slug}`)
    expect(inHogar.total).toBe(0)
    expect(inHogar.categories).toEqual(out.categories)
    const wider = await facets('option.color=rojo&minPrice=15&maxPrice=50&inStock=true')
    expect(wider.total).toBe(3)
    expect(wider.categories.map((c) => [c.name, c.count])).toEqual([
      ['Camisetas', 1],
      ['Hogar', 1],
      ['Ropa', 1],
    ])
  })

  it('inStock=false with an option: the values whose variants meeting the other filters have no stock', async () => {
    await shop()
    const out = await facets('option.Color=rojo&inStock=false')
    const list = await get(t, '/products?option.Color=rojo&inStock=false')
    expect(out.total).toBe(Number(list.headers['x-total-count']))
    expect(out.total).toBe(1)
    expect(out.options).toEqual([
      { name: 'Color', values: [{ value: 'Rojo', count: 1 }] },
      { name: 'Talla', values: [{ value: 'S', count: 1 }] },
    ])
  })

  it('no match: total 0, empty facets of the filter that failed only where their own filter is ignored, price null', async () => {
    const { ropa } = await shop()
    const none = await facets('tag=nada')
    expect(none.total).toBe(0)
    expect(none.categories).toEqual([])
    expect(none.options).toEqual([])
    expect(none.price).toBeNull()
    expect(none.tags.length).toBe(3)
    const unknown = await facets('category=no-such-category')
    expect(unknown).toEqual({ total: 0, categories: expect.any(Array), tags: [], options: [], price: null })
    expect(unknown.categories.map((c) => c.name)).toContain(ropa.name)
    await emptyCatalog(t)
    expect(await facets()).toEqual({ total: 0, categories: [], tags: [], options: [], price: null })
  })

  it('orders by count then name and keeps 100 entries per facet', async () => {
    for (let i = 0; i < 3; i += 1) await filterProduct(t, { name: `P${i}`, tags: i === 0 ? ['b', 'a', 'c'] : i === 1 ? ['b', 'c'] : ['c'] })
    expect((await facets()).tags).toEqual([
      { tag: 'c', count: 3 },
      { tag: 'b', count: 2 },
      { tag: 'a', count: 1 },
    ])
    await emptyCatalog(t)
    const tags = Array.from({ length: 50 }, (_, i) => `tag-${String(i).padStart(3, '0')}`)
    const more = Array.from({ length: 50 }, (_, i) => `tag-${String(i + 50).padStart(3, '0')}`)
    const last = Array.from({ length: 5 }, (_, i) => `tag-${String(i + 100).padStart(3, '0')}`)
    await filterProduct(t, { name: 'A', tags })
    await filterProduct(t, { name: 'B', tags: more })
    await filterProduct(t, { name: 'C', tags: last })
    const shown = (await facets()).tags
    expect(shown.length).toBe(100)
    expect(shown[0]).toEqual({ tag: 'tag-000', count: 1 })
    expect(shown.at(-1)).toEqual({ tag: 'tag-099', count: 1 })
  })

  it('drafts and archived products are counted only for an admin naming a status; status needs an admin', async () => {
    await shop()
    expect((await facets()).tags.map((x) => x.tag)).not.toContain('Secreto')
    const anonymous = await get(t, '/products/facets?status=draft')
    expect([anonymous.statusCode, anonymous.json()]).toEqual([401, { error: 'Unauthorized - No user found' }])
    const customer = await get(t, '/products/facets?status=draft', t.customer)
    expect([customer.statusCode, customer.json()]).toEqual([403, { error: 'Forbidden - Requires one of the following roles: admin' }])
    const drafts = await facets('status=draft', t.admin)
    expect(drafts.total).toBe(1)
    expect(drafts.tags).toEqual([{ tag: 'Secreto', count: 1 }])
    expect(drafts.price).toEqual({ min: 999, max: 999 })
    expect((await facets('status=any', t.admin)).total).toBe(4)
  })

  it('answers the list’s 422s', async () => {
    expect((await get(t, '/products/facets?inStock=maybe')).json()).toEqual({ error: 'inStock must be a boolean value' })
    expect((await get(t, '/products/facets?minPrice=1.001')).json()).toEqual({ error: 'minPrice must be a number conforming to the specified constraints' })
    expect((await get(t, '/products/facets?limit=10')).json()).toEqual({ error: 'property limit should not exist' })
    const eleven = Array.from({ length: 11 }, (_, i) => `option.Color=c${i}`).join('&')
    expect((await get(t, `/products/facets?${eleven}`)).json()).toEqual({ error: 'option.* must contain no more than 10 elements' })
  })

  it('is cached under its canonical URL, and a product write empties it', async () => {
    const { hogar } = await shop()
    const first = await facets('tag=Regalo&tag=verano')
    const hits = t.app.catalogCache.hits().total
    const again = await facets('tag=VERANO&tag=regalo')
    expect(again).toEqual(first)
    expect(t.app.catalogCache.hits().total - hits).toBe(catalogCacheOn ? 1 : 0)
    const mug = (await get(t, `/products?categoryId=${hogar.id}`)).json() as Array<{ id: number }>
    const res = await t.app.inject({ method: 'PATCH', url: `/products/${mug[0]!.id}`, headers: bearer(t.admin), payload: { tags: ['Verano'] } })
    expect(res.statusCode).toBe(200)
    const after = await facets('tag=regalo&tag=verano')
    expect(after.tags.find((x) => x.tag === 'Verano')?.count).toBe(3)
    expect(after.tags.find((x) => x.tag === 'Regalo')).toBeUndefined()
  })
})
