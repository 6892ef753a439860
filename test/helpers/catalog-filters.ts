import { expect } from 'vitest'
import type { UsedTestApp } from './app.js'
import { makeProduct, type ProductValues } from './catalog.js'
import { bearer, type TestUser } from './factories.js'

// Builders shared by the filter and facet tests (products-filters.test.ts, products-facets.test.ts).

export interface VariantSpec {
  options: Record<string, string>
  priceCents: number
  stock: number
  sku?: string
}

export interface FilterProduct {
  id: number
  name: string
  /** The variants' ids, in the order given. */
  variantIds: number[]
}

const amount = (cents: number) => (cents / 100).toFixed(2)

/**
 * A product with these variants through the API (options added with the first variant's values, which its default
 * variant takes; the others created), then its tags and status. Without variants: its default variant only.
 */
export async function filterProduct(
  t: UsedTestApp,
  spec: ProductValues & { variants?: VariantSpec[]; tags?: string[]; status?: 'draft' | 'active' | 'archived' } = {},
): Promise<FilterProduct> {
  const { variants = [], tags, status, ...values } = spec
  const product = await makeProduct(t.app, values)
  const send = (method: 'POST' | 'PATCH', url: string, payload: object) => t.app.inject({ method, url, payload, headers: bearer(t.admin) })
  const variantIds: number[] = []
  const [first, ...others] = variants
  if (first) {
    for (const [name, value] of Object.entries(first.options)) {
      const res = await send('POST', `/products/${product.id}/options`, { name, defaultValue: value })
      expect(res.statusCode, res.body).toBe(201)
    }
    const row = await t.app.db.selectFrom('product_variants').select('id').where('product_id', '=', product.id).executeTakeFirstOrThrow()
    const res = await send('PATCH', `/variants/${row.id}`, { price: amount(first.priceCents), stock: first.stock, ...(first.sku ? { sku: first.sku } : {}) })
    expect(res.statusCode, res.body).toBe(200)
    variantIds.push(row.id)
    if (others.length > 0) {
      const created = await send(
        'POST',
        `/products/${product.id}/variants`,
        others.map((v) => ({ options: v.options, price: amount(v.priceCents), stock: v.stock, ...(v.sku ? { sku: v.sku } : {}) })),
      )
      expect(created.statusCode, created.body).toBe(201)
      variantIds.push(...(created.json() as Array<{ id: number }>).map((v) => v.id))
    }
  }
  if (tags !== undefined || status !== undefined) {
    const res = await send('PATCH', `/products/${product.id}`, { ...(tags ? { tags } : {}), ...(status ? { status } : {}) })
    expect(res.statusCode, res.body).toBe(200)
  }
  return { id: product.id, name: product.name, variantIds }
}

/** A category through the API, inside `parentId` when given. */
export async function filterCategory(t: UsedTestApp, name: string, parentId?: number): Promise<{ id: number; slug: string; name: string }> {
  const res = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload: { name, ...(parentId ? { parentId } : {}) } })
  expect(res.statusCode, res.body).toBe(201)
  return res.json() as { id: number; slug: string; name: string }
}

/** Empties the catalog (products with their variants, options and tags; categories) between tests. */
export async function emptyCatalog(t: UsedTestApp): Promise<void> {
  await t.app.db.deleteFrom('cart_items').execute()
  await t.app.db.deleteFrom('products').execute()
  // Children before their parents.
  const categories = await t.app.db.selectFrom('categories').select(['id', 'path']).execute()
  for (const c of categories.sort((a, b) => b.path.length - a.path.length)) await t.app.db.deleteFrom('categories').where('id', '=', c.id).execute()
  t.app.catalogCache.invalidate()
}

/** GET `url` as `user` (anonymous by default). */
export function get(t: UsedTestApp, url: string, user: TestUser | null = null) {
  return t.app.inject({ method: 'GET', url, headers: user ? bearer(user) : {} })
}
