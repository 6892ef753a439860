import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { inCategorySubtree, subtreeIds } from '../../src/modules/catalog/categories.repository.js'
import { useTestApp } from '../helpers/app.js'
import { makeCategory, makeProduct } from '../helpers/catalog.js'
import { bearer } from '../helpers/factories.js'

const t = useTestApp()

let sequence = 0
/** A name (and slug) no other test of the file uses. */
const uniq = (prefix: string) => `${prefix}-${(sequence += 1)}-${process.pid}`

interface CategoryBody {
  id: number
  name: string
  slug: string
  parentId: number | null
  position: number
  children?: CategoryBody[]
}

async function post(payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload })
}

async function create(payload: Record<string, unknown>): Promise<CategoryBody> {
  const res = await post(payload)
  expect(res.statusCode, res.body).toBe(201)
  return res.json() as CategoryBody
}

async function patch(id: number, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'PATCH', url: `/categories/${id}`, headers: bearer(t.admin), payload })
}

/** A chain of `levels` categories, each inside the one before; the root first. */
async function chain(levels: number): Promise<CategoryBody[]> {
  const out: CategoryBody[] = []
  for (let i = 0; i < levels; i += 1) out.push(await create({ name: uniq(`level${i + 1}`), parentId: out.at(-1)?.id ?? null }))
  return out
}

const row = (id: number) => t.app.db.selectFrom('categories').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
const allRows = () => t.app.db.selectFrom('categories').selectAll().orderBy('id').execute()
const oldSlugs = (id: number) =>
  t.app.db
    .selectFrom('category_slugs')
    .select('slug')
    .where('category_id', '=', id)
    .orderBy('slug')
    .execute()
    .then((rows) => rows.map((r) => r.slug))

describe('creating inside the tree', () => {
  it('takes parentId, slug and position; the path is the parent’s and its own id', async () => {
    const root = await create({ name: uniq('Ropa') })
    expect(root).toMatchObject({ parentId: null, position: 0 })
    expect((await row(root.id)).path).toBe(`/${root.id}/`)
    const slug = uniq('camisetas')
    const child = await create({ name: 'Camisetas', parentId: root.id, slug, position: 3 })
    expect(child).toMatchObject({ name: 'Camisetas', slug, parentId: root.id, position: 3 })
    expect(await row(child.id)).toMatchObject({ parent_id: root.id, path: `/${root.id}/${child.id}/`, slug, position: 3 })
    const grandchild = await create({ name: 'Manga corta', parentId: child.id })
    expect(grandchild.slug).toBe('manga-corta')
    expect((await row(grandchild.id)).path).toBe(`/${root.id}/${child.id}/${grandchild.id}/`)
  })

  it('generates the slug from the name: accents removed, -2 when taken, category-<id> without a letter', async () => {
    const parent = await create({ name: uniq('Bebidas') })
    const first = await create({ name: 'Café y Té', parentId: parent.id })
    const other = await create({ name: uniq('Otras') })
    const second = await create({ name: 'Café y Té', parentId: other.id })
    expect(first.slug).toMatch(/^cafe-y-te(-\d+)?$/)
    expect(second.slug).toMatch(/^cafe-y-te-\d+$/)
    expect(second.slug).not.toBe(first.slug)
    const digits = await create({ name: `${(sequence += 1)}${process.pid}`, parentId: parent.id })
    expect(digits.slug).toBe(`category-${digits.id}`)
    expect((await row(digits.id)).slug).toBe(`category-${digits.id}`)
  })

  it('names are unique among siblings ignoring case; other parents may repeat them; roots clash', async () => {
    const a = await create({ name: uniq('Hombre') })
    const b = await create({ name: uniq('Mujer') })
    await create({ name: 'Zapatos', parentId: a.id })
    const other = await create({ name: 'zapatos', parentId: b.id })
    expect(other.slug).toMatch(/^zapatos-\d+$/)
    const before = (await allRows()).length
    const clash = await post({ name: 'ZAPATOS', parentId: a.id })
    expect(clash.statusCode).toBe(409)
    expect(clash.json()).toEqual({ error: 'La categoría ya existe' })
    const name = uniq('Raíz')
    await create({ name })
    const rootClash = await post({ name: name.toUpperCase() })
    expect(rootClash.statusCode).toBe(409)
    expect(rootClash.json()).toEqual({ error: 'La categoría ya existe' })
    expect((await allRows()).length).toBe(before + 1)
  })

  it.each([
    [{ slug: '' }, 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    [{ slug: 'Mayus' }, 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    [{ slug: '123' }, 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    [{ slug: 'con espacio' }, 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    [{ slug: 'ñandu' }, 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    [{ slug: 'a'.repeat(101) }, 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    [{ slug: 7 }, 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter'],
    [{ slug: 'facets' }, 'slug is reserved'],
    [{ parentId: 'x' }, 'parentId must be an integer number'],
    [{ parentId: 0 }, 'parentId must not be less than 1'],
    [{ position: -1 }, 'position must not be less than 0'],
    [{ position: 1.5 }, 'position must be an integer number'],
  ])('422 for %j, and nothing is written', async (extra, message) => {
    const before = await allRows()
    const res = await post({ name: uniq('Mala'), ...extra })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await allRows()).toEqual(before)
  })

  it('a slug of 100 characters is fine', async () => {
    const slug = `${uniq('s')}-`.padEnd(100, 'x')
    expect((await create({ name: uniq('Larga'), slug })).slug).toBe(slug)
  })

  it('422 for an unknown parent; a customer gets 403 first', async () => {
    const before = await allRows()
    const res = await post({ name: uniq('Huérfana'), parentId: 999999 })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'La categoría padre no existe' })
    const cust = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.customer), payload: { name: 'X', slug: 'facets' } })
    expect([cust.statusCode, cust.json()]).toEqual([403, { error: 'Forbidden - Requires one of the following roles: admin' }])
    expect(await allRows()).toEqual(before)
  })

  it('409 for a slug in use, now or as another category’s old slug', async () => {
    const a = await create({ name: uniq('Primera') })
    const taken = await post({ name: uniq('Segunda'), slug: a.slug })
    expect(taken.statusCode).toBe(409)
    expect(taken.json()).toEqual({ error: 'El slug ya está en uso' })
    const old = a.slug
    expect((await patch(a.id, { slug: uniq('primera-nueva') })).statusCode).toBe(200)
    const before = await allRows()
    const oldTaken = await post({ name: uniq('Tercera'), slug: old })
    expect(oldTaken.statusCode).toBe(409)
    expect(oldTaken.json()).toEqual({ error: 'El slug ya está en uso' })
    expect(await allRows()).toEqual(before)
  })

  it('a generated slug skips old slugs too', async () => {
    const name = uniq('Bolsos')
    const a = await create({ name })
    await patch(a.id, { slug: uniq('otra') })
    const b = await create({ name, parentId: (await create({ name: uniq('Padre') })).id })
    expect(b.slug).toBe(`${a.slug}-2`)
  })

  it('409 below the fifth level; the fifth is fine', async () => {
    const levels = await chain(5)
    expect((await row(levels[4]!.id)).path.split('/').length - 2).toBe(5)
    const before = await allRows()
    const res = await post({ name: uniq('Sexto'), parentId: levels[4]!.id })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'La categoría supera la profundidad máxima (5 niveles)' })
    expect(await allRows()).toEqual(before)
  })
})

describe('moving a category', () => {
  it('moves the subtree: every path rewritten, parentId changed', async () => {
    const [a, b, c] = await chain(3)
    const target = await create({ name: uniq('Destino') })
    const res = await patch(b!.id, { parentId: target.id })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: b!.id, parentId: target.id })
    expect(await row(b!.id)).toMatchObject({ parent_id: target.id, path: `/${target.id}/${b!.id}/` })
    expect(await row(c!.id)).toMatchObject({ parent_id: b!.id, path: `/${target.id}/${b!.id}/${c!.id}/` })
    expect((await row(a!.id)).path).toBe(`/${a!.id}/`)
    const toRoot = await t.app.inject({ method: 'PUT', url: `/categories/${b!.id}`, headers: bearer(t.admin), payload: { parentId: null } })
    expect(toRoot.statusCode).toBe(200)
    expect(toRoot.json().parentId).toBeNull()
    expect((await row(c!.id)).path).toBe(`/${b!.id}/${c!.id}/`)
  })

  it('does not touch a category whose id starts like the moved one', async () => {
    const a = await create({ name: uniq('A') })
    const others = await allRows()
    const target = await create({ name: uniq('T') })
    await patch(a.id, { parentId: target.id })
    for (const other of others.filter((r) => r.id !== a.id)) expect(await row(other.id)).toEqual(other)
  })

  it('409 into itself or a descendant; nothing changes', async () => {
    const [a, , c] = await chain(3)
    const before = await allRows()
    for (const parentId of [a!.id, c!.id]) {
      const res = await patch(a!.id, { parentId, name: uniq('Nuevo') })
      expect(res.statusCode).toBe(409)
      expect(res.json()).toEqual({ error: 'Una categoría no puede estar dentro de sí misma ni de sus subcategorías' })
    }
    expect(await allRows()).toEqual(before)
  })

  it('409 when the moved subtree would go below the fifth level', async () => {
    const deep = await chain(3)
    const sub = await chain(3)
    const before = await allRows()
    const res = await patch(sub[0]!.id, { parentId: deep[2]!.id })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'La categoría supera la profundidad máxima (5 niveles)' })
    expect(await allRows()).toEqual(before)
    // Two levels under the third: five in all.
    expect((await patch(sub[1]!.id, { parentId: deep[2]!.id })).statusCode).toBe(200)
    expect((await row(sub[2]!.id)).path).toBe(`${(await row(deep[2]!.id)).path}${sub[1]!.id}/${sub[2]!.id}/`)
  })

  it('422 for an unknown parent (after 404 for an unknown category)', async () => {
    const a = await create({ name: uniq('Sola') })
    const res = await patch(a.id, { parentId: 999999 })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'La categoría padre no existe' })
    const missing = await patch(999999, { parentId: 999998 })
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toEqual({ error: 'Categoría no encontrada' })
  })

  it('409 when the new parent has a child of that name; a rename checks its own siblings', async () => {
    const p = await create({ name: uniq('P') })
    await create({ name: 'Gorras', parentId: p.id })
    const g = await create({ name: uniq('gorras') })
    await patch(g.id, { name: 'GORRAS' })
    const before = await allRows()
    const res = await patch(g.id, { parentId: p.id })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'La categoría ya existe' })
    expect(await allRows()).toEqual(before)
    const renamed = await patch(g.id, { parentId: p.id, name: 'Gorros' })
    expect(renamed.statusCode).toBe(200)
    expect(renamed.json()).toMatchObject({ name: 'Gorros', parentId: p.id })
  })

  it('two opposite moves at once: one wins, the other is refused, no cycle', async () => {
    const a = await create({ name: uniq('Ida') })
    const b = await create({ name: uniq('Vuelta') })
    const [ab, ba] = await Promise.all([patch(a.id, { parentId: b.id }), patch(b.id, { parentId: a.id })])
    expect([ab.statusCode, ba.statusCode].sort()).toEqual([200, 409])
    const rows = [await row(a.id), await row(b.id)]
    expect(rows.filter((r) => r.parent_id === null)).toHaveLength(1)
    const child = rows.find((r) => r.parent_id !== null)!
    const parent = rows.find((r) => r.parent_id === null)!
    expect(child.path).toBe(`/${parent.id}/${child.id}/`)
  })
})

describe('slugs and GET /categories/:idOrSlug', () => {
  it('answers by id or by slug; a rename keeps the slug', async () => {
    const c = await create({ name: uniq('Música') })
    await patch(c.id, { name: uniq('Discos') })
    const bySlug = await t.app.inject({ url: `/categories/${c.slug}` })
    expect(bySlug.statusCode).toBe(200)
    expect(bySlug.json()).toMatchObject({ id: c.id, slug: c.slug })
    expect((await t.app.inject({ url: `/categories/${c.id}` })).json().slug).toBe(c.slug)
    expect((await t.app.inject({ url: `/categories/00${c.id}` })).json().id).toBe(c.id)
  })

  it('an old slug answers 301 to the current one, query kept, never chained', async () => {
    const c = await create({ name: uniq('Cine') })
    const first = c.slug
    const second = uniq('peliculas')
    const third = uniq('series')
    expect((await patch(c.id, { slug: second })).json().slug).toBe(second)
    expect((await patch(c.id, { slug: third })).statusCode).toBe(200)
    expect(await oldSlugs(c.id)).toEqual([first, second].sort())
    for (const old of [first, second]) {
      const res = await t.app.inject({ url: `/categories/${old}?x=1&y=%C3%B1` })
      expect(res.statusCode).toBe(301)
      expect(res.headers.location).toBe(`http://shop.test/categories/${third}?x=1&y=%C3%B1`)
      expect(res.body).toBe('')
    }
    expect((await t.app.inject({ url: `/categories/${first}` })).headers.location).toBe(`http://shop.test/categories/${third}`)
  })

  it('a category may take back its own old slug', async () => {
    const c = await create({ name: uniq('Vuelve') })
    const first = c.slug
    await patch(c.id, { slug: uniq('fuera') })
    const back = await patch(c.id, { slug: first })
    expect(back.statusCode).toBe(200)
    expect(back.json().slug).toBe(first)
    expect(await oldSlugs(c.id)).not.toContain(first)
    expect((await t.app.inject({ url: `/categories/${first}` })).statusCode).toBe(200)
  })

  it('409 for another category’s slug, now or old; the category is unchanged', async () => {
    const a = await create({ name: uniq('Una') })
    const b = await create({ name: uniq('Otra') })
    const before = await row(b.id)
    const res = await patch(b.id, { slug: a.slug, description: 'x' })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'El slug ya está en uso' })
    const old = a.slug
    await patch(a.id, { slug: uniq('una-nueva') })
    const oldRes = await patch(b.id, { slug: old })
    expect([oldRes.statusCode, oldRes.json()]).toEqual([409, { error: 'El slug ya está en uso' }])
    expect(await row(b.id)).toEqual(before)
    expect(await oldSlugs(b.id)).toEqual([])
  })

  it('a slug taken by a category now wins over an old one of another', async () => {
    const a = await create({ name: uniq('Antes') })
    const b = await create({ name: uniq('Despues') })
    // The API refuses it; a row written by hand stands for an old slug kept before the rule.
    await t.app.db.insertInto('category_slugs').values({ slug: b.slug, category_id: a.id, created_at: new Date().toISOString() }).execute()
    const res = await t.app.inject({ url: `/categories/${b.slug}` })
    expect(res.statusCode).toBe(200)
    expect(res.json().id).toBe(b.id)
  })

  it('PATCH validates the slug: 422 malformed or reserved', async () => {
    const c = await create({ name: uniq('Valida') })
    const bad = await patch(c.id, { slug: 'No-Vale' })
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter' })
    const reserved = await patch(c.id, { slug: 'facets' })
    expect(reserved.json()).toEqual({ error: 'slug is reserved' })
    expect((await row(c.id)).slug).toBe(c.slug)
  })

  it('404 for an unknown slug; other routes keep integer ids', async () => {
    const res = await t.app.inject({ url: '/categories/no-existe-nunca' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Categoría no encontrada' })
    const put = await t.app.inject({ method: 'PATCH', url: '/categories/abc', headers: bearer(t.admin), payload: { name: 'X' } })
    expect(put.statusCode).toBe(422)
    expect(put.json()).toEqual({ error: 'id must be an integer number' })
    const del = await t.app.inject({ method: 'DELETE', url: '/categories/abc', headers: bearer(t.admin) })
    expect(del.json()).toEqual({ error: 'id must be an integer number' })
  })
})

describe('GET /categories?tree=', () => {
  it('true: the roots with nested children, siblings by name; false or absent: flat by name', async () => {
    const root = await create({ name: uniq('Árbol') })
    const b = await create({ name: 'beta', parentId: root.id })
    const a = await create({ name: 'Alfa', parentId: root.id })
    const aa = await create({ name: 'Hoja', parentId: a.id })
    const res = await t.app.inject({ url: '/categories?tree=true' })
    expect(res.statusCode).toBe(200)
    const roots = res.json() as CategoryBody[]
    expect(roots.every((r) => r.parentId === null)).toBe(true)
    const node = roots.find((r) => r.id === root.id)!
    expect(node.children!.map((c) => c.name)).toEqual(['Alfa', 'beta'])
    expect(node.children![0]).toMatchObject({ id: a.id, slug: a.slug, parentId: root.id, children: [{ id: aa.id, name: 'Hoja', children: [] }] })
    expect(node.children![1]).toMatchObject({ id: b.id, children: [] })
    expect(Object.keys(node).sort()).toEqual(['children', 'createdAt', 'description', 'id', 'name', 'parentId', 'position', 'slug', 'updatedAt'])
    for (const url of ['/categories', '/categories?tree=false']) {
      const flat = (await t.app.inject({ url })).json() as CategoryBody[]
      expect(flat.find((c) => c.id === aa.id)).toMatchObject({ parentId: a.id })
      expect(flat.every((c) => !('children' in c))).toBe(true)
      const keys = flat.map((c) => c.name.toLowerCase())
      expect(keys).toEqual([...keys].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)))
    }
  })

  it('keeps the five levels in the tree', async () => {
    const levels = await chain(5)
    let node = ((await t.app.inject({ url: '/categories?tree=true' })).json() as CategoryBody[]).find((r) => r.id === levels[0]!.id)!
    for (const level of levels.slice(1)) node = node.children!.find((c) => c.id === level.id)!
    expect(node).toMatchObject({ id: levels[4]!.id, children: [] })
  })

  it.each([
    ['/categories?tree=yes', 'tree must be a boolean value'],
    ['/categories?tree=1', 'tree must be a boolean value'],
    ['/categories?tree=', 'tree must be a boolean value'],
    ['/categories?depth=2', 'property depth should not exist'],
  ])('422 for %s', async (url, message) => {
    const res = await t.app.inject({ url })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
  })
})

describe('DELETE with subcategories', () => {
  it('409 before the products check; allowed once the children are gone', async () => {
    const parent = await create({ name: uniq('Con hijos') })
    const child = await create({ name: 'Hijo', parentId: parent.id })
    await makeProduct(t.app, { categoryId: parent.id })
    const res = await t.app.inject({ method: 'DELETE', url: `/categories/${parent.id}`, headers: bearer(t.admin) })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'La categoría tiene subcategorías' })
    expect(await row(parent.id)).toBeDefined()
    expect((await t.app.inject({ method: 'DELETE', url: `/categories/${child.id}`, headers: bearer(t.admin) })).statusCode).toBe(200)
    const again = await t.app.inject({ method: 'DELETE', url: `/categories/${parent.id}`, headers: bearer(t.admin) })
    expect(again.statusCode).toBe(409)
    expect(again.json()).toEqual({ error: 'La categoría tiene productos asociados' })
  })

  it('deleting keeps no old slugs behind', async () => {
    const c = await create({ name: uniq('Efímera') })
    await patch(c.id, { slug: uniq('efimera-bis') })
    expect((await t.app.inject({ method: 'DELETE', url: `/categories/${c.id}`, headers: bearer(t.admin) })).statusCode).toBe(200)
    expect(await oldSlugs(c.id)).toEqual([])
  })
})

describe('subtreeIds and inCategorySubtree (for a product filter)', () => {
  it('name the category and its descendants, by id or slug; nothing for an unknown one', async () => {
    const [a, b, c] = await chain(3)
    const sibling = await create({ name: uniq('Hermana'), parentId: a!.id })
    const outside = await makeCategory(t.app)
    expect((await subtreeIds(t.app.db, String(a!.id))).sort()).toEqual([a!.id, b!.id, c!.id, sibling.id].sort())
    expect(await subtreeIds(t.app.db, b!.slug)).toEqual([b!.id, c!.id])
    expect(await subtreeIds(t.app.db, 'no-existe-nunca')).toEqual([])
    expect(await subtreeIds(t.app.db, '999999')).toEqual([])

    const inB = await makeProduct(t.app, { categoryId: b!.id })
    const inC = await makeProduct(t.app, { categoryId: c!.id })
    await makeProduct(t.app, { categoryId: a!.id })
    await makeProduct(t.app, { categoryId: outside.id })
    const ids = async (idOrSlug: string) =>
      (
        await t.app.db
          .selectFrom('products')
          .select('id')
          .where(inCategorySubtree(sql.ref('products.category_id'), idOrSlug))
          .orderBy('id')
          .execute()
      ).map((r) => r.id)
    expect(await ids(b!.slug)).toEqual([inB.id, inC.id])
    expect(await ids(String(b!.id))).toEqual([inB.id, inC.id])
    expect(await ids('no-existe-nunca')).toEqual([])
  })
})

describe('concurrency', () => {
  it('two creations of one name under one parent: one 201, one 409', async () => {
    const parent = await create({ name: uniq('Carrera') })
    const results = await Promise.all([post({ name: 'Gemela', parentId: parent.id }), post({ name: 'gemela', parentId: parent.id })])
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409])
    expect(results.find((r) => r.statusCode === 409)!.json()).toEqual({ error: 'La categoría ya existe' })
    const children = await t.app.db.selectFrom('categories').select('id').where('parent_id', '=', parent.id).execute()
    expect(children).toHaveLength(1)
  })

  it('a child created while its parent moves gets the new path', async () => {
    const parent = await create({ name: uniq('Mueve') })
    const target = await create({ name: uniq('Hacia') })
    const [moved, created] = await Promise.all([patch(parent.id, { parentId: target.id }), post({ name: 'Nueva', parentId: parent.id })])
    expect(moved.statusCode).toBe(200)
    expect(created.statusCode).toBe(201)
    expect((await row(created.json().id)).path).toBe(`/${target.id}/${parent.id}/${created.json().id}/`)
  })
})
