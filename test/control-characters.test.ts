import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalImageHost } from '../src/modules/images/local-image-host.js'
import { useTestApp } from './helpers/app.js'
import { makeCategory, makeProduct, multipart, pngPart, storedImages } from './helpers/catalog.js'
import { bearer, makeUser } from './helpers/factories.js'

// One rule for every text a client sends (JSON bodies, query strings, path parameters, headers,
// multipart fields): control characters are refused with 422, except tab, line feed and carriage return.
// PostgreSQL cannot store U+0000 in text at all, and SQLite's search failed on it: both were 500s.

const uploadDir = mkdtempSync(join(tmpdir(), 'shop-uploads-'))
const t = useTestApp({ UPLOAD_DIR: uploadDir }, { imageHost: createLocalImageHost(uploadDir, 'http://shop.test') })
let product: number

beforeAll(async () => {
  const category = (await makeCategory(t.app, 'Lámparas')).id
  product = (await makeProduct(t.app, { name: 'Lámpara', categoryId: category })).id
})
afterAll(() => {
  rmSync(uploadDir, { recursive: true, force: true })
})

async function count(table: 'users' | 'categories' | 'products'): Promise<number> {
  const row = await t.app.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

describe('control characters in text', () => {
  it.each([
    ['NUL', 'a\u0000b'],
    ['only NUL', '\u0000'],
    ['bell', 'a\u0007b'],
    ['escape', 'a\u001bb'],
    ['DEL', 'a\u007fb'],
    ['C1 control', 'a\u0085b'],
  ])('GET /products?q= with %s is a 422, on a public route', async (_label, q) => {
    const res = await t.app.inject({ method: 'GET', url: `/products?q=${encodeURIComponent(q)}` })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'q must not contain control characters' })
  })

  it('a search with tab or newline is still a search', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/products?q=${encodeURIComponent('Lám\tpara\n')}` })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual([])
  })

  it.each(['name', 'email', 'password'])('register with NUL in %s is a 422 and creates no user', async (field) => {
    const before = await count('users')
    const body: Record<string, string> = { name: 'Ana', email: `ana-${field}@shop.test`, password: 'secret123' }
    body[field] = field === 'email' ? 'ana\u0000@shop.test' : `${body[field]}\u0000`
    const res = await t.app.inject({ method: 'POST', url: '/auth/register', payload: body })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: `${field} must not contain control characters` })
    expect(await count('users')).toBe(before)
  })

  it('register accepts a name with a tab', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/auth/register',
      payload: { name: 'Ana\tMaría', email: 'ana-tab@shop.test', password: 'secret123' },
    })
    expect(res.statusCode).toBe(201)
    expect(res.json().user.name).toBe('Ana\tMaría')
  })

  it('login with NUL in the password is a 422', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: 'ana-tab@shop.test', password: 'secret\u0000' } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'password must not contain control characters' })
  })

  it('admin user update with NUL in the name is a 422 and changes nothing', async () => {
    const user = await makeUser(t.app, 'customer', 'Before')
    const res = await t.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(t.admin), payload: { name: 'After\u0000' } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'name must not contain control characters' })
    const row = await t.app.db.selectFrom('users').select('name').where('id', '=', user.id).executeTakeFirstOrThrow()
    expect(row.name).toBe('Before')
  })

  it.each(['name', 'description'])('category with NUL in %s is a 422 and creates nothing', async (field) => {
    const before = await count('categories')
    const body: Record<string, string> = { name: 'Mesas', description: 'De madera' }
    body[field] = `${body[field]}\u0000`
    const res = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload: body })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: `${field} must not contain control characters` })
    expect(await count('categories')).toBe(before)
  })

  it('a description may hold line breaks and tabs', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/categories',
      headers: bearer(t.admin),
      payload: { name: 'Sillas', description: 'Línea 1\r\nLínea 2\tfin' },
    })
    expect(res.statusCode).toBe(201)
    expect(res.json().description).toBe('Línea 1\r\nLínea 2\tfin')
  })

  it.each(['name', 'description'])('multipart product create with NUL in %s is a 422 and stores nothing', async (field) => {
    const rows = await count('products')
    const files = storedImages(t.config)
    const fields: Record<string, string> = { name: 'Mesa', description: 'Roble', price: '10', stock: '1' }
    fields[field] = `${fields[field]}\u0000`
    const form = await multipart(fields, [pngPart()])
    const res = await t.app.inject({ method: 'POST', url: '/products', headers: { ...form.headers, ...bearer(t.admin) }, payload: form.payload })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: `${field} must not contain control characters` })
    expect(await count('products')).toBe(rows)
    expect(storedImages(t.config)).toEqual(files)
  })

  it('multipart product update with a control character in the description is a 422 and changes nothing', async () => {
    const form = await multipart({ description: 'x\u0001y' }, [])
    const res = await t.app.inject({ method: 'PUT', url: `/products/${product}`, headers: { ...form.headers, ...bearer(t.admin) }, payload: form.payload })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'description must not contain control characters' })
    const row = await t.app.db.selectFrom('products').select('description').where('id', '=', product).executeTakeFirstOrThrow()
    expect(row.description).toBe('')
  })

  it('JSON product update with NUL in the name is a 422 and changes nothing', async () => {
    const res = await t.app.inject({ method: 'PUT', url: `/products/${product}`, headers: bearer(t.admin), payload: { name: 'Lámpara\u0000' } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'name must not contain control characters' })
    const row = await t.app.db.selectFrom('products').select('name').where('id', '=', product).executeTakeFirstOrThrow()
    expect(row.name).toBe('Lámpara')
  })

  it('a product description keeps its line breaks (multipart)', async () => {
    // A form sends its line breaks as CRLF.
    const form = await multipart({ description: 'Uno\r\nDos\tTres' }, [])
    const res = await t.app.inject({ method: 'PUT', url: `/products/${product}`, headers: { ...form.headers, ...bearer(t.admin) }, payload: form.payload })
    expect(res.statusCode).toBe(200)
    expect(res.json().description).toBe('Uno\r\nDos\tTres')
  })

  it('a path parameter with NUL is a 422', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/uploads/products/a%00.png' })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'name must not contain control characters' })
  })
})
