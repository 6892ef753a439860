import { describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'

const t = useTestApp()

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

async function entries() {
  return t.app.db.selectFrom('audit_log').selectAll().orderBy('id').execute()
}

async function auditLog(admin: { token: string }, query = '') {
  const res = await t.app.inject({ method: 'GET', url: `/audit-log${query}`, headers: bearer(admin) })
  return res
}

describe('the audit log of a product', () => {
  it('an update writes one entry with the product before and after, its actor and its request', async () => {
    const admin = await makeUser(t.app, 'admin', 'Ana Admin')
    const product = await makeProduct(t.app, { name: 'Taza' })
    const before = (await t.app.inject({ method: 'GET', url: `/products/${product.id}`, headers: bearer(admin) })).json()
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/products/${product.id}`,
      headers: { ...bearer(admin), 'x-request-id': 'req-audit-1', 'user-agent': 'audit-test/1.0' },
      payload: { name: 'Taza grande' },
    })
    expect(res.statusCode).toBe(200)
    const rows = await entries()
    expect(rows).toHaveLength(1)
    const list = await auditLog(admin)
    expect(list.statusCode).toBe(200)
    expect(list.headers['x-total-count']).toBe('1')
    const [entry] = list.json()
    expect(entry).toEqual({
      id: expect.stringMatching(UUID_V7),
      at: expect.any(String),
      actor: { type: 'user', id: admin.id, name: 'Ana Admin' },
      action: 'product.update',
      entityType: 'product',
      entityId: String(product.id),
      before,
      after: res.json(),
      requestId: 'req-audit-1',
      ip: '127.0.0.1',
      userAgent: 'audit-test/1.0',
    })
  })
})
