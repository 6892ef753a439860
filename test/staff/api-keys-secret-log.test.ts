import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'

// An API key's secret is in two answers only (its creation's and its rotation's): never in another answer, never in
// the log at any level, nor is its hash.

let t: TestApp
const lines: string[] = []

beforeAll(async () => {
  const stream = { write: (line: string) => void lines.push(line) }
  t = await buildTestApp({}, { logger: { level: 'trace', stream } })
  await t.app.ready()
})
afterAll(async () => {
  await t.close()
})

describe('an API key’s secret', () => {
  it('is never logged, nor its hash: not on creation, rotation, use, a refused use, or a list', async () => {
    const admin = await makeUser(t.app, 'admin')
    const created = await t.app.inject({ method: 'POST', url: '/api-keys', headers: bearer(admin), payload: { name: 'ERP', staffRole: 'catalog' } })
    expect(created.statusCode).toBe(201)
    const { id, secret } = created.json() as { id: number; secret: string }
    const use = (token: string) => t.app.inject({ url: '/products?status=draft', headers: { authorization: `Bearer ${token}` } })
    expect((await use(secret)).statusCode).toBe(200)
    const rotated = await t.app.inject({ method: 'POST', url: `/api-keys/${id}/rotate`, headers: bearer(admin) })
    expect(rotated.statusCode).toBe(200)
    const renewed = (rotated.json() as { secret: string }).secret
    expect((await use(secret)).statusCode).toBe(401)
    expect((await use(renewed)).statusCode).toBe(200)
    // A refused route (the caller's own data) and a list.
    expect((await t.app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${renewed}` } })).statusCode).toBe(403)
    const listed = await t.app.inject({ url: '/api-keys', headers: bearer(admin) })
    expect(listed.statusCode).toBe(200)

    const hidden = [secret, renewed].flatMap((text) => [text.slice('sk_0123456789ab_'.length), createHash('sha256').update(text).digest('hex')])
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.some((line) => line.includes('/api-keys'))).toBe(true)
    for (const text of hidden) {
      expect(listed.body).not.toContain(text)
      for (const line of lines) expect(line).not.toContain(text)
    }
  })
})
