import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import type { FastifyRequest } from 'fastify'
import { auditSource, redact, uuidMs, uuidv7 } from '../../src/modules/staff/audit-log.js'
import { dialect, testConfig, useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { placeOrder } from '../payments/helpers.js'

// Unpaid orders expire after an hour: the expiry job's entry is tested below.
const t = useTestApp({ ORDER_PAYMENT_TTL: '1h', WEBHOOKS_ALLOW_PRIVATE: 'true' })

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

async function entries() {
  return t.app.db.selectFrom('audit_log').selectAll().orderBy('id').execute()
}

/** An entry by the system at the instant `ms`, to be written straight into the table (as if made then). */
function systemEntry(ms: number, action = 'x.y') {
  return {
    id: uuidv7(ms),
    at: new Date(ms).toISOString(),
    actor_type: 'system' as const,
    actor_id: null,
    actor_name: 'test',
    action,
    entity_type: action.split('.')[0]!,
    entity_id: null,
    before: null,
    after: null,
    request_id: null,
    ip: null,
    user_agent: null,
  }
}

/** An order as the status route answers it: as its owner reads it (an admin's GET adds `customer` and `nextStatuses`). */
async function orderAsAnswered(id: number) {
  const { customer: _customer, nextStatuses: _next, ...order } = (await t.app.inject({ url: `/orders/${id}`, headers: bearer(t.admin) })).json()
  return order
}

function auditLog(query = '', as: { token: string } = t.admin) {
  return t.app.inject({ method: 'GET', url: `/audit-log${query}`, headers: bearer(as) })
}

beforeEach(async () => {
  await t.app.db.deleteFrom('audit_log').execute()
})

describe('an admin write writes one entry, in its transaction', () => {
  it('an update: the product before and after as answered, the actor by name, the request id, address and user agent', async () => {
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
    expect(await entries()).toHaveLength(1)
    const list = await auditLog()
    expect(list.statusCode).toBe(200)
    expect(list.headers['x-total-count']).toBe('1')
    expect(list.json()).toEqual([
      {
        id: expect.stringMatching(UUID_V7),
        at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        actor: { type: 'user', id: admin.id, name: 'Ana Admin' },
        action: 'product.update',
        entityType: 'product',
        entityId: String(product.id),
        before,
        after: res.json(),
        requestId: 'req-audit-1',
        ip: '127.0.0.1',
        userAgent: 'audit-test/1.0',
      },
    ])
  })

  it('a create has no before, a delete no after', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload: { name: 'Tazas' } })
    expect(created.statusCode).toBe(201)
    const category = created.json()
    const deleted = await t.app.inject({ method: 'DELETE', url: `/categories/${category.id}`, headers: bearer(t.admin) })
    expect(deleted.statusCode).toBe(200)
    const list = (await auditLog()).json() as Array<Record<string, unknown>>
    expect(list.map((e) => [e.action, e.entityId, e.before, e.after])).toEqual([
      ['category.delete', String(category.id), category, null],
      ['category.create', String(category.id), null, category],
    ])
  })

  it('a user’s role change is its own action; the user as answered never carries the password', async () => {
    const created = await t.app.inject({
      method: 'POST',
      url: '/auth/users',
      headers: bearer(t.admin),
      payload: { name: 'Eva', email: `eva-${Date.now()}@example.com`, password: 'secret123', role: 'customer' },
    })
    expect(created.statusCode).toBe(201)
    const user = created.json()
    const moved = await t.app.inject({ method: 'PATCH', url: `/auth/users/${user.id}`, headers: bearer(t.admin), payload: { role: 'admin' } })
    expect(moved.statusCode).toBe(200)
    const list = (await auditLog()).json() as Array<Record<string, unknown>>
    expect(list.map((e) => [e.action, e.before, e.after])).toEqual([
      ['user.role_change', user, moved.json()],
      ['user.create', null, user],
    ])
    expect(JSON.stringify(list)).not.toContain('secret123')
  })

  it('a webhook’s secret reads [REDACTED]', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: bearer(t.admin),
      payload: { url: 'http://127.0.0.1:9/hook', events: ['order.paid'] },
    })
    expect(res.statusCode).toBe(201)
    const secret = res.json().secret as string
    const [entry] = (await auditLog()).json() as Array<{ action: string; after: Record<string, unknown> }>
    expect(entry!.action).toBe('webhook.create')
    expect(entry!.after).toEqual({ ...res.json(), secret: '[REDACTED]' })
    expect((await entries())[0]!.after).not.toContain(secret)
  })

  it('an order’s status move and a note', async () => {
    const order = await placeOrder(t.app)
    const before = await orderAsAnswered(order.id)
    const moved = await t.app.inject({ method: 'PATCH', url: `/orders/${order.id}/status`, headers: bearer(t.admin), payload: { status: 'paid' } })
    expect(moved.statusCode).toBe(200)
    const note = await t.app.inject({ method: 'POST', url: `/orders/${order.id}/notes`, headers: bearer(t.admin), payload: { text: 'Llamar antes' } })
    expect(note.statusCode).toBe(201)
    const list = (await auditLog(`?entityType=order&entityId=${order.id}`)).json() as Array<Record<string, unknown>>
    expect(list.map((e) => [e.action, e.before, e.after])).toEqual([
      ['order.add_note', null, note.json()],
      ['order.status_change', before, moved.json()],
    ])
  })
})

describe('after the sale', () => {
  it('a fulfillment, staff’s return and its receipt, and a refund: one entry each', async () => {
    const order = await placeOrder(t.app)
    expect((await t.app.inject({ method: 'PATCH', url: `/orders/${order.id}/status`, headers: bearer(t.admin), payload: { status: 'paid' } })).statusCode).toBe(
      200,
    )
    await t.app.db.deleteFrom('audit_log').execute()
    const shipped = await t.app.inject({ method: 'POST', url: `/orders/${order.id}/fulfillments`, headers: bearer(t.admin), payload: {} })
    expect(shipped.statusCode).toBe(201)
    const line = (shipped.json() as { items: Array<{ orderItemId: number }> }).items[0]!.orderItemId
    const made = await t.app.inject({
      method: 'POST',
      url: `/orders/${order.id}/returns`,
      headers: bearer(t.admin),
      payload: { items: [{ orderItemId: line, quantity: 1 }] },
    })
    expect(made.statusCode).toBe(201)
    const received = await t.app.inject({ method: 'POST', url: `/returns/${made.json().id}/receive`, headers: bearer(t.admin), payload: { refund: false } })
    expect(received.statusCode).toBe(200)
    const refunded = await t.app.inject({
      method: 'POST',
      url: `/orders/${order.id}/refunds`,
      headers: { ...bearer(t.admin), 'idempotency-key': `audit-${order.id}` },
      payload: { items: [{ orderItemId: line, quantity: 1 }] },
    })
    expect(refunded.statusCode).toBe(201)
    const list = (await auditLog()).json() as Array<Record<string, unknown>>
    expect(list.map((e) => [e.action, e.entityId, e.before, e.after])).toEqual([
      ['refund.create', String(refunded.json().id), null, refunded.json()],
      ['return.receive', String(made.json().id), made.json(), received.json()],
      ['return.create', String(made.json().id), null, made.json()],
      ['fulfillment.create', String(shipped.json().id), null, shipped.json()],
    ])
  })
})

describe('a refused or failed write writes none', () => {
  it('422, 404 and 409 write no entry', async () => {
    const product = await makeProduct(t.app)
    const other = await makeProduct(t.app)
    const refused = [
      await t.app.inject({ method: 'PATCH', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { name: '' } }),
      await t.app.inject({ method: 'PATCH', url: '/products/999999', headers: bearer(t.admin), payload: { name: 'Nada' } }),
      await t.app.inject({ method: 'PATCH', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { slug: other.slug } }),
      await t.app.inject({ method: 'DELETE', url: '/categories/999999', headers: bearer(t.admin) }),
      await t.app.inject({ method: 'PATCH', url: `/products/${product.id}`, headers: bearer(t.customer), payload: { name: 'Mía' } }),
    ]
    expect(refused.map((res) => res.statusCode)).toEqual([422, 404, 409, 404, 403])
    expect(await entries()).toEqual([])
  })

  it('a transaction that fails once its change is made leaves neither the change nor an entry', async () => {
    const product = await makeProduct(t.app, { name: 'Original' })
    // The audit entry's insert is refused: the last statement of the change's transaction.
    if (dialect === 'postgres') {
      await sql`create function refuse_audit() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$`.execute(t.app.db)
      await sql`create trigger refuse_audit before insert on audit_log for each row execute function refuse_audit()`.execute(t.app.db)
    } else {
      await sql`create trigger refuse_audit before insert on audit_log begin select raise(abort, 'refused'); end`.execute(t.app.db)
    }
    try {
      const res = await t.app.inject({ method: 'PATCH', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { name: 'Cambiado' } })
      expect(res.statusCode).toBe(500)
      const created = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload: { name: 'Nunca' } })
      expect(created.statusCode).toBe(500)
    } finally {
      await sql`drop trigger refuse_audit${sql.raw(dialect === 'postgres' ? ' on audit_log' : '')}`.execute(t.app.db)
      if (dialect === 'postgres') await sql`drop function refuse_audit()`.execute(t.app.db)
    }
    const row = await t.app.db.selectFrom('products').select('name').where('id', '=', product.id).executeTakeFirstOrThrow()
    expect(row.name).toBe('Original')
    expect(await t.app.db.selectFrom('categories').select('id').where('name', '=', 'Nunca').execute()).toEqual([])
    expect(await entries()).toEqual([])
  })
})

describe('GET /audit-log', () => {
  async function threeChanges() {
    const product = await makeProduct(t.app)
    for (const name of ['Uno', 'Dos']) {
      const res = await t.app.inject({ method: 'PATCH', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { name } })
      expect(res.statusCode).toBe(200)
    }
    const category = await t.app.inject({ method: 'POST', url: '/categories', headers: bearer(t.admin), payload: { name: `Cat ${Date.now()}` } })
    expect(category.statusCode).toBe(201)
    return { product, categoryId: category.json().id as number }
  }

  it('filters by resource, action, actor and time, newest first', async () => {
    const { product, categoryId } = await threeChanges()
    const actions = async (query: string) => ((await auditLog(query)).json() as Array<{ action: string; after: { name?: string } }>).map((e) => e.action)
    expect(await actions('')).toEqual(['category.create', 'product.update', 'product.update'])
    expect(await actions(`?entityType=product&entityId=${product.id}`)).toEqual(['product.update', 'product.update'])
    expect(await actions(`?entityType=category&entityId=${categoryId}`)).toEqual(['category.create'])
    expect(await actions('?action=category.create')).toEqual(['category.create'])
    expect(await actions(`?actorType=user&actorId=${t.admin.id}`)).toHaveLength(3)
    expect(await actions('?actorType=system')).toEqual([])
    expect(await actions(`?actorId=${t.customer.id}`)).toEqual([])
    const newest = (await entries()).at(-1)!
    expect(await actions(`?from=${encodeURIComponent(newest.at)}`)).toContain('category.create')
    expect(await actions('?to=2000-01-01T00:00:00Z')).toEqual([])
    expect(await actions('?from=2000-01-01T00:00:00Z')).toHaveLength(3)
  })

  it('a time filter is exact to the millisecond: from includes its instant, to excludes it', async () => {
    await threeChanges()
    // Each entry's time is its id's millisecond (the filters bound the id by it).
    const written = await entries()
    expect(written).toHaveLength(3)
    for (const entry of written) expect(new Date(uuidMs(entry.id)).toISOString()).toBe(entry.at)
    const base = Date.UTC(2026, 5, 1, 12, 0, 0, 0)
    const at = (ms: number) => new Date(base + ms).toISOString()
    await t.app.db
      .insertInto('audit_log')
      .values([0, 1, 2, 999, 1000].map((ms) => systemEntry(base + ms, `x.at${ms}`)))
      .execute()
    const actions = async (query: string) => ((await auditLog(`?entityType=x&${query}`)).json() as Array<{ action: string }>).map((e) => e.action)
    expect(await actions(`from=${at(1)}&to=${at(999)}`)).toEqual(['x.at2', 'x.at1'])
    expect(await actions(`from=${at(2)}`)).toEqual(['x.at1000', 'x.at999', 'x.at2'])
    expect(await actions(`to=${at(1)}`)).toEqual(['x.at0'])
    expect(await actions(`to=${at(1000)}`)).toEqual(['x.at999', 'x.at2', 'x.at1', 'x.at0'])
  })

  it('pages with X-Total-Count and Link, the filters kept', async () => {
    await threeChanges()
    const first = await auditLog('?limit=2&entityType=product')
    expect(first.headers['x-total-count']).toBe('2')
    expect(first.headers.link).toBeUndefined()
    const page = await auditLog('?limit=1&offset=1')
    expect(page.headers['x-total-count']).toBe('3')
    expect(page.json()).toHaveLength(1)
    expect(page.headers.link).toBe('<http://shop.test/audit-log?limit=1&offset=2>; rel="next", <http://shop.test/audit-log?limit=1&offset=0>; rel="prev"')
    const filtered = await auditLog('?limit=1&action=product.update')
    expect(filtered.headers.link).toBe('<http://shop.test/audit-log?limit=1&offset=1&action=product.update>; rel="next"')
  })

  it('refuses bad filters with 422, a customer with 403, no token with 401', async () => {
    const cases: Array<[string, string]> = [
      ['?actorType=robot', 'actorType must be one of the following values: user, api_key, system'],
      ['?actorId=abc', 'actorId must be an integer number'],
      ['?from=yesterday', 'from must be a valid ISO 8601 date string'],
      ['?to=2026-13-01', 'to must be a valid ISO 8601 date string'],
      ['?limit=0', 'limit must not be less than 1'],
      ['?sort=oldest', 'property sort should not exist'],
    ]
    for (const [query, error] of cases) {
      const res = await auditLog(query)
      expect([query, res.statusCode, res.json()]).toEqual([query, 422, { error }])
    }
    expect((await auditLog('', t.customer)).statusCode).toBe(403)
    expect((await t.app.inject({ url: '/audit-log' })).statusCode).toBe(401)
  })

  it('no route changes or deletes an entry', async () => {
    await threeChanges()
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
      expect((await t.app.inject({ method, url: '/audit-log', headers: bearer(t.admin), payload: {} })).statusCode).toBe(404)
    }
    expect(await entries()).toHaveLength(3)
  })
})

describe('the jobs', () => {
  it('the expiry of an unpaid order is a system entry', async () => {
    const order = await placeOrder(t.app)
    const before = await orderAsAnswered(order.id)
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString()
    await t.app.db.updateTable('orders').set({ created_at: twoHoursAgo }).where('id', '=', order.id).execute()
    expect(await t.app.paymentJobs.expire()).toEqual([order.id])
    const after = await orderAsAnswered(order.id)
    const [entry] = (await auditLog('?actorType=system')).json() as Array<Record<string, unknown>>
    expect(entry).toMatchObject({
      actor: { type: 'system', id: null, name: 'order-expiry' },
      action: 'order.status_change',
      entityType: 'order',
      entityId: String(order.id),
      before: { ...before, createdAt: twoHoursAgo },
      after,
      requestId: null,
      ip: null,
      userAgent: null,
    })
    expect((after as { status: string }).status).toBe('cancelled')
  })

  it('the retention job deletes the entries older than AUDIT_LOG_RETENTION (365 days by default), and only those', async () => {
    await threeChanges()
    const now = Date.now()
    const old = (days: number) => systemEntry(now - days * 86_400_000, 'product.update')
    await t.app.db
      .insertInto('audit_log')
      .values([old(400), old(366), old(364)])
      .execute()
    expect(await t.app.pruneAuditLog(now)).toBe(2)
    expect(await entries()).toHaveLength(4)
    expect(await t.app.pruneAuditLog(now)).toBe(0)
  })

  async function threeChanges() {
    const product = await makeProduct(t.app)
    await t.app.inject({ method: 'PATCH', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { name: 'Uno' } })
    await t.app.inject({ method: 'PATCH', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { name: 'Dos' } })
    await t.app.inject({ method: 'PATCH', url: `/products/${product.id}`, headers: bearer(t.admin), payload: { name: 'Tres' } })
  }
})

describe('AUDIT_LOG_RETENTION', () => {
  it('takes JWT_EXPIRES_IN’s forms, 365 days by default, 0 for ever; anything else stops the start-up with one line', () => {
    expect(testConfig().auditLogRetentionMs).toBe(365 * 86_400_000)
    expect(testConfig({ AUDIT_LOG_RETENTION: '90d' }).auditLogRetentionMs).toBe(90 * 86_400_000)
    expect(testConfig({ AUDIT_LOG_RETENTION: '0' }).auditLogRetentionMs).toBe(0)
    expect(() => testConfig({ AUDIT_LOG_RETENTION: 'forever' })).toThrow(
      'AUDIT_LOG_RETENTION must be 0 or a duration of at least one second such as 365d, 12h or 3600 (got "forever")',
    )
  })

  it('0 keeps every entry', async () => {
    const { pruneAuditLog } = await import('../../src/modules/staff/audit-log.service.js')
    const old = new Date(Date.now() - 10 * 365 * 86_400_000)
    await t.app.db.insertInto('audit_log').values(systemEntry(old.getTime())).execute()
    expect(await pruneAuditLog(t.app.db, 0)).toBe(0)
    expect(await entries()).toHaveLength(1)
  })
})

describe('the writer’s parts', () => {
  it('redacts any key naming a password, secret, token or hash, at any depth, in any case', () => {
    expect(
      redact({
        name: 'x',
        password: 'p',
        nested: { apiSecret: 's', refreshToken: 't', PASSWORD_HASH: 'h', list: [{ token: 1, keep: 2 }] },
        note: 'password',
      }),
    ).toEqual({
      name: 'x',
      password: '[REDACTED]',
      nested: { apiSecret: '[REDACTED]', refreshToken: '[REDACTED]', PASSWORD_HASH: '[REDACTED]', list: [{ token: '[REDACTED]', keep: 2 }] },
      note: 'password',
    })
  })

  it('makes UUIDv7 ids that sort in the order they were made, with their millisecond', () => {
    const at = Date.UTC(2026, 0, 1)
    const ids = Array.from({ length: 50 }, () => uuidv7(at))
    for (const id of ids) expect(id).toMatch(UUID_V7)
    expect([...ids].sort()).toEqual(ids)
    expect(parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16)).toBe(at)
  })

  it('an API key is the actor by its id and name', () => {
    const request = {
      user: { id: 7, role: 'admin', sessionId: undefined, staffRole: 'catalog', apiKey: { id: 7, name: 'ERP' } },
      id: 'req-1',
      ip: '10.0.0.1',
      headers: { 'user-agent': 'erp/2' },
    } as unknown as FastifyRequest
    expect(auditSource(request)).toEqual({ actor: { type: 'api_key', id: 7, name: 'ERP' }, requestId: 'req-1', ip: '10.0.0.1', userAgent: 'erp/2' })
  })
})
