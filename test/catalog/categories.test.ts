import { describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { makeCategory, makeProduct } from '../helpers/catalog.js'
import { bearer } from '../helpers/factories.js'

const t = useTestApp()

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

async function countCategories(): Promise<number> {
  const row = await t.app.db
    .selectFrom('categories')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

describe('GET /categories', () => {
  it('is public and ordered by name', async () => {
    await makeCategory(t.app, 'zz Último')
    await makeCategory(t.app, 'AA primera')
    const res = await t.app.inject({ method: 'GET', url: '/categories' })
    expect(res.statusCode).toBe(200)
    const body = res.json() as Array<{ name: string }>
    const names = body.map((c) => c.name)
    expect(names.indexOf('AA primera')).toBeLessThan(names.indexOf('zz Último'))
    expect(Object.keys(body[0]!).sort()).toEqual(['createdAt', 'description', 'id', 'name', 'parentId', 'position', 'slug', 'updatedAt'])
  })

  it('orders by name ignoring case: alpha, beta, Zeta', async () => {
    await makeCategory(t.app, 'alpha')
    await makeCategory(t.app, 'Zeta')
    await makeCategory(t.app, 'beta')
    const res = await t.app.inject({ method: 'GET', url: '/categories' })
    expect(res.statusCode).toBe(200)
    const names = (res.json() as Array<{ name: string }>).map((c) => c.name).filter((n) => ['alpha', 'Zeta', 'beta'].includes(n))
    expect(names).toEqual(['alpha', 'beta', 'Zeta'])
  })
})

describe('GET /categories/:id', () => {
  it('returns one category', async () => {
    const c = await makeCategory(t.app, 'Libros', 'Papel')
    const res = await t.app.inject({ method: 'GET', url: `/categories/${c.id}` })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body).toEqual({
      id: c.id,
      name: 'Libros',
      slug: 'libros',
      description: 'Papel',
      parentId: null,
      position: 0,
      createdAt: c.createdAt,
      updatedAt: c.updatedAt,
    })
    expect(body.createdAt).toMatch(ISO)
    expect(typeof body.id).toBe('number')
  })

  it('404 for an unknown id', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/categories/999999' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Categoría no encontrada' })
  })

  it('text is a slug: 404 for an unknown one', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/categories/abc' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Categoría no encontrada' })
  })
})

describe('POST /categories', () => {
  it('creates a category (201) with description defaulting to ""', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload: { name: '  Juguetes  ' } })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toMatchObject({ name: 'Juguetes', description: '' })
    expect(body.createdAt).toMatch(ISO)
    expect(body.updatedAt).toMatch(ISO)
    const row = await t.app.db.selectFrom('categories').selectAll().where('id', '=', body.id).executeTakeFirst()
    expect(row?.name).toBe('Juguetes')
  })

  it('401 without a token, 403 for a customer, and nothing is written', async () => {
    const before = await countCategories()
    const anon = await t.app.inject({ method: 'POST', url: '/categories', payload: { name: 'Anon' } })
    expect(anon.statusCode).toBe(401)
    expect(anon.json()).toEqual({ error: 'Unauthorized - No user found' })
    const cust = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.customer), payload: { name: 'Cust' } })
    expect(cust.statusCode).toBe(403)
    expect(cust.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    expect(await countCategories()).toBe(before)
  })

  it('auth comes before validation', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.customer), payload: { name: '' } })
    expect(res.statusCode).toBe(403)
  })

  it.each([
    [{ name: '' }, 'name should not be empty'],
    [{ name: '   ' }, 'name should not be empty'],
    [{}, 'name should not be empty'],
    [{ name: 5 }, 'name must be a string'],
    [{ name: 'x'.repeat(101) }, 'name must be shorter than or equal to 100 characters'],
    [{ name: 'Ok', description: 7 }, 'description must be a string'],
  ])('422 for %j', async (payload, message) => {
    const before = await countCategories()
    const res = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: message })
    expect(await countCategories()).toBe(before)
  })

  it('409 for a name already taken, ignoring case', async () => {
    await makeCategory(t.app, 'Electrónica')
    const before = await countCategories()
    const res = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload: { name: 'ELECTRÓNICA' } })
    const lower = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload: { name: 'electrónica' } })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'La categoría ya existe' })
    expect(lower.statusCode).toBe(409)
    expect(await countCategories()).toBe(before)
  })
})

describe('PUT and PATCH /categories/:id', () => {
  it.each(['PUT', 'PATCH'] as const)('%s changes only the fields sent', async (method) => {
    const c = await makeCategory(t.app, `Ropa ${method}`, 'antes')
    const res = await t.app.inject({ method, url: `/categories/${c.id}`, headers: bearer(t.admin), payload: { description: 'después' } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: c.id, name: `Ropa ${method}`, description: 'después', createdAt: c.createdAt })
    const renamed = await t.app.inject({ method, url: `/categories/${c.id}`, headers: bearer(t.admin), payload: { name: `Moda ${method}` } })
    expect(renamed.json()).toMatchObject({ name: `Moda ${method}`, description: 'después' })
    expect(renamed.json().updatedAt >= c.updatedAt).toBe(true)
  })

  it('keeps its own name under another case', async () => {
    const c = await makeCategory(t.app, 'Hogar')
    const res = await t.app.inject({ method: 'PATCH', url: `/categories/${c.id}`, headers: bearer(t.admin), payload: { name: 'HOGAR' } })
    expect(res.statusCode).toBe(200)
    expect(res.json().name).toBe('HOGAR')
  })

  it('409 when renaming onto another category', async () => {
    await makeCategory(t.app, 'Deportes')
    const c = await makeCategory(t.app, 'Jardín')
    const res = await t.app.inject({ method: 'PUT', url: `/categories/${c.id}`, headers: bearer(t.admin), payload: { name: 'deportes' } })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'La categoría ya existe' })
    const row = await t.app.db.selectFrom('categories').select('name').where('id', '=', c.id).executeTakeFirst()
    expect(row?.name).toBe('Jardín')
  })

  it('422 for an empty name or an empty body, before 404', async () => {
    const empty = await t.app.inject({ method: 'PATCH', url: '/categories/999999', headers: bearer(t.admin), payload: { name: ' ' } })
    expect(empty.statusCode).toBe(422)
    expect(empty.json()).toEqual({ error: 'name should not be empty' })
    const none = await t.app.inject({ method: 'PUT', url: '/categories/999999', headers: bearer(t.admin), payload: {} })
    expect(none.statusCode).toBe(422)
    expect(none.json()).toEqual({ error: 'body must contain at least one field' })
  })

  it.each(['PUT', 'PATCH'] as const)('%s with only unknown fields is 422 and changes nothing', async (method) => {
    const c = await makeCategory(t.app)
    const before = await t.app.db.selectFrom('categories').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow()
    const res = await t.app.inject({ method, url: `/categories/${c.id}`, headers: bearer(t.admin), payload: { foo: 1 } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'body must contain at least one field' })
    expect(await t.app.db.selectFrom('categories').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow()).toEqual(before)
  })

  it('404 for an unknown id, 403 for a customer', async () => {
    const res = await t.app.inject({ method: 'PATCH', url: '/categories/999999', headers: bearer(t.admin), payload: { name: 'X' } })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Categoría no encontrada' })
    const c = await makeCategory(t.app)
    const cust = await t.app.inject({ method: 'PUT', url: `/categories/${c.id}`, headers: bearer(t.customer), payload: { name: 'X' } })
    expect(cust.statusCode).toBe(403)
  })

  it.each(['PUT', 'PATCH'] as const)('%s: 401 without a token, 403 for a customer, and the row is unchanged', async (method) => {
    const c = await makeCategory(t.app, `Protegida ${method}`, 'original')
    const before = await t.app.db.selectFrom('categories').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow()
    const count = await countCategories()
    const payload = { name: `Cambiada ${method}`, description: 'cambiada' }
    const anon = await t.app.inject({ method, url: `/categories/${c.id}`, payload })
    expect(anon.statusCode).toBe(401)
    expect(anon.json()).toEqual({ error: 'Unauthorized - No user found' })
    const cust = await t.app.inject({ method, url: `/categories/${c.id}`, headers: bearer(t.customer), payload })
    expect(cust.statusCode).toBe(403)
    expect(cust.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    expect(await t.app.db.selectFrom('categories').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow()).toEqual(before)
    expect(await countCategories()).toBe(count)
    const res = await t.app.inject({ method: 'GET', url: `/categories/${c.id}` })
    expect(res.json()).toMatchObject({ name: `Protegida ${method}`, description: 'original', updatedAt: c.updatedAt })
  })
})

describe('DELETE /categories/:id', () => {
  it('deletes an unused category', async () => {
    const c = await makeCategory(t.app)
    const res = await t.app.inject({ method: 'DELETE', url: `/categories/${c.id}`, headers: bearer(t.admin) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: 'Categoría eliminada correctamente' })
    expect(await t.app.db.selectFrom('categories').select('id').where('id', '=', c.id).executeTakeFirst()).toBeUndefined()
  })

  it('409 while products use it; allowed once they are gone', async () => {
    const c = await makeCategory(t.app)
    const p = await makeProduct(t.app, { categoryId: c.id })
    const res = await t.app.inject({ method: 'DELETE', url: `/categories/${c.id}`, headers: bearer(t.admin) })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'La categoría tiene productos asociados' })
    expect(await t.app.db.selectFrom('categories').select('id').where('id', '=', c.id).executeTakeFirst()).toBeDefined()
    await t.app.db.deleteFrom('products').where('id', '=', p.id).execute()
    const again = await t.app.inject({ method: 'DELETE', url: `/categories/${c.id}`, headers: bearer(t.admin) })
    expect(again.statusCode).toBe(200)
  })

  it('404 for an unknown id; 401/403 before that', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/categories/999999', headers: bearer(t.admin) })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 'Categoría no encontrada' })
    expect((await t.app.inject({ method: 'DELETE', url: '/categories/999999' })).statusCode).toBe(401)
    expect((await t.app.inject({ method: 'DELETE', url: '/categories/999999', headers: bearer(t.customer) })).statusCode).toBe(403)
  })

  it('401 without a token and 403 for a customer, with their messages; the category stays', async () => {
    const c = await makeCategory(t.app, 'Permanente', 'sigue aquí')
    const before = await t.app.db.selectFrom('categories').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow()
    const count = await countCategories()
    const anon = await t.app.inject({ method: 'DELETE', url: `/categories/${c.id}` })
    expect(anon.statusCode).toBe(401)
    expect(anon.json()).toEqual({ error: 'Unauthorized - No user found' })
    const cust = await t.app.inject({ method: 'DELETE', url: `/categories/${c.id}`, headers: bearer(t.customer) })
    expect(cust.statusCode).toBe(403)
    expect(cust.json()).toEqual({ error: 'Forbidden - Requires one of the following roles: admin' })
    expect(await t.app.db.selectFrom('categories').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow()).toEqual(before)
    expect(await countCategories()).toBe(count)
    expect((await t.app.inject({ method: 'GET', url: `/categories/${c.id}` })).statusCode).toBe(200)
  })
})
