import { beforeAll, describe, expect, it, vi } from 'vitest'
import { sql } from 'kysely'
import { dialect, useTestApp } from '../helpers/app.js'
import { paidOrder } from '../helpers/after-sale.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, uniqueEmail, type TestUser } from '../helpers/factories.js'
import { backendPid, waitUntilBlockedBy } from '../helpers/pg-locks.js'
import { countRows } from '../helpers/shop.js'
import { DOCUMENTED_GRANTS, makeStaff, sessionToken } from '../helpers/staff.js'

// Staff roles on users (docs/staff.md): who may create, change and delete whom, the staff role in the user's JSON
// and in /auth/me's permissions, one's own staff role, the last owner, and a change taking effect at once.

const shop = useTestApp()
const staff: Record<string, TestUser> = {}

beforeAll(async () => {
  for (const role of ['owner', 'manager', 'catalog', 'fulfillment', 'support'] as const) staff[role] = await makeStaff(shop.app, role)
})

const as = (user: TestUser) => bearer(user)
const row = (id: number) => shop.app.db.selectFrom('users').select(['role', 'staff_role', 'name']).where('id', '=', id).executeTakeFirst()
const newUser = (role: 'customer' | 'admin', extra: Record<string, unknown> = {}) => ({
  name: 'New',
  email: uniqueEmail(role),
  password: 'secret123',
  role,
  ...extra,
})

describe('GET /auth/me', () => {
  it("lists the caller's permissions in the table's order; none for a customer", async () => {
    const expected = DOCUMENTED_GRANTS
    for (const [role, permissions] of Object.entries(expected)) {
      const res = await shop.app.inject({ url: '/auth/me', headers: as(staff[role]!) })
      expect(res.statusCode).toBe(200)
      expect(res.json()).toEqual({
        id: staff[role]!.id,
        name: `Staff ${role}`,
        email: staff[role]!.email,
        role: 'admin',
        staffRole: role,
        createdAt: expect.any(String),
        permissions,
      })
    }
    const customer = await shop.app.inject({ url: '/auth/me', headers: as(shop.customer) })
    expect(customer.json()).toMatchObject({ role: 'customer', staffRole: null, permissions: [] })
  })
})

describe('creating users', () => {
  it('an admin with a staff role needs staff:manage; without one given it is an owner', async () => {
    const res = await shop.app.inject({ method: 'POST', url: '/auth/users', headers: as(staff.owner!), payload: newUser('admin', { staffRole: 'catalog' }) })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ role: 'admin', staffRole: 'catalog' })
    expect(await row(res.json().id)).toMatchObject({ role: 'admin', staff_role: 'catalog' })
    const plain = await shop.app.inject({ method: 'POST', url: '/auth/create-user', headers: as(staff.owner!), payload: newUser('admin') })
    expect(plain.json()).toMatchObject({ role: 'admin', staffRole: 'owner' })

    const before = await countRows(shop.app, 'users')
    for (const role of ['manager', 'support', 'catalog'] as const) {
      const refused = await shop.app.inject({
        method: 'POST',
        url: '/auth/users',
        headers: as(staff[role]!),
        payload: newUser('admin', { staffRole: 'catalog' }),
      })
      expect(refused.statusCode).toBe(403)
      expect(refused.json()).toEqual({ error: 'Forbidden - Requires permission: staff:manage' })
    }
    expect(await countRows(shop.app, 'users')).toBe(before)
  })

  it('a customer needs customers:write, and never has a staff role', async () => {
    const res = await shop.app.inject({ method: 'POST', url: '/auth/users', headers: as(staff.support!), payload: newUser('customer') })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toEqual({
      id: expect.any(Number),
      name: 'New',
      email: expect.any(String),
      role: 'customer',
      staffRole: null,
      createdAt: expect.any(String),
    })
    const before = await countRows(shop.app, 'users')
    const refused = await shop.app.inject({ method: 'POST', url: '/auth/users', headers: as(staff.fulfillment!), payload: newUser('customer') })
    expect(refused.statusCode).toBe(403)
    expect(refused.json()).toEqual({ error: 'Forbidden - Requires permission: customers:write' })
    expect(await countRows(shop.app, 'users')).toBe(before)
  })

  it('refuses an unknown staff role with 422, writing nothing', async () => {
    const before = await countRows(shop.app, 'users')
    for (const staffRole of ['boss', null, 3, 'Owner']) {
      const res = await shop.app.inject({ method: 'POST', url: '/auth/users', headers: as(staff.owner!), payload: newUser('admin', { staffRole }) })
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({ error: 'staffRole must be one of the following values: owner, manager, catalog, fulfillment, support' })
    }
    const patch = await shop.app.inject({
      method: 'PATCH',
      url: `/auth/users/${staff.catalog!.id}`,
      headers: as(staff.owner!),
      payload: { staffRole: 'chief' },
    })
    expect(patch.statusCode).toBe(422)
    expect(patch.json()).toEqual({ error: 'staffRole must be one of the following values: owner, manager, catalog, fulfillment, support' })
    expect(await countRows(shop.app, 'users')).toBe(before)
    expect(await row(staff.catalog!.id)).toMatchObject({ staff_role: 'catalog' })
  })
})

describe('reading users', () => {
  it('needs customers:read; the list shows customers and admins with their staff role, and filters by role', async () => {
    const admins = await shop.app.inject({ url: '/auth/users?role=admin&limit=1000', headers: as(staff.support!) })
    expect(admins.statusCode).toBe(200)
    const list = admins.json() as Array<{ id: number; role: string; staffRole: string | null }>
    expect(list.every((user) => user.role === 'admin')).toBe(true)
    expect(list.find((user) => user.id === staff.fulfillment!.id)).toMatchObject({ staffRole: 'fulfillment' })
    expect(admins.headers['x-total-count']).toBe(String(list.length))
    const customers = await shop.app.inject({ url: '/auth/users?role=customer&limit=1000', headers: as(staff.owner!) })
    expect((customers.json() as Array<{ role: string; staffRole: null }>).every((user) => user.role === 'customer' && user.staffRole === null)).toBe(true)
    const refused = await shop.app.inject({ url: '/auth/users', headers: as(staff.catalog!) })
    expect(refused.statusCode).toBe(403)
    expect(refused.json()).toEqual({ error: 'Forbidden - Requires permission: customers:read' })
    const bad = await shop.app.inject({ url: '/auth/users?role=owner', headers: as(staff.owner!) })
    expect(bad.statusCode).toBe(422)
    expect(bad.json()).toEqual({ error: "El rol debe ser 'customer' o 'admin'" })
  })
})

describe('changing and deleting users', () => {
  it("a customer's change needs customers:write, an admin's staff:manage (promoting a customer too)", async () => {
    const customer = await makeUser(shop.app, 'customer', 'Carla')
    const renamed = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${customer.id}`, headers: as(staff.support!), payload: { name: 'Carla B' } })
    expect(renamed.statusCode).toBe(200)
    expect(renamed.json()).toMatchObject({ name: 'Carla B', staffRole: null })

    const cases: Array<[TestUser, number, Record<string, unknown>, string]> = [
      [staff.support!, staff.catalog!.id, { name: 'Renamed' }, 'staff:manage'],
      [staff.manager!, staff.catalog!.id, { staffRole: 'manager' }, 'staff:manage'],
      [staff.support!, customer.id, { role: 'admin' }, 'staff:manage'],
      [staff.catalog!, customer.id, { name: 'Nope' }, 'customers:write'],
    ]
    for (const [actor, target, payload, permission] of cases) {
      const before = await row(target)
      const res = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${target}`, headers: as(actor), payload })
      expect(res.statusCode).toBe(403)
      expect(res.json()).toEqual({ error: `Forbidden - Requires permission: ${permission}` })
      expect(await row(target)).toEqual(before)
    }

    const deleted = await shop.app.inject({ method: 'DELETE', url: `/auth/users/${staff.catalog!.id}`, headers: as(staff.manager!) })
    expect(deleted.statusCode).toBe(403)
    expect(deleted.json()).toEqual({ error: 'Forbidden - Requires permission: staff:manage' })
    expect(await row(staff.catalog!.id)).toBeDefined()
    const gone = await shop.app.inject({ method: 'DELETE', url: `/auth/users/${customer.id}`, headers: as(staff.support!) })
    expect(gone.statusCode).toBe(200)
    expect(await row(customer.id)).toBeUndefined()
  })

  it('nobody changes their own staff role (403); changing it to what it is changes nothing', async () => {
    const res = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${staff.owner!.id}`, headers: as(staff.owner!), payload: { staffRole: 'manager' } })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toEqual({ error: 'No puedes cambiar tu propio rol' })
    expect(await row(staff.owner!.id)).toMatchObject({ role: 'admin', staff_role: 'owner' })
    const same = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${staff.owner!.id}`, headers: as(staff.owner!), payload: { staffRole: 'owner' } })
    expect(same.statusCode).toBe(200)
  })

  it('a demoted admin loses the permission on the very next request', async () => {
    const clerk = await makeStaff(shop.app, 'manager', 'Clerk')
    // Its credentials are now in the auth cache.
    expect((await shop.app.inject({ url: '/orders', headers: as(clerk) })).statusCode).toBe(200)
    const demoted = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${clerk.id}`, headers: as(staff.owner!), payload: { staffRole: 'catalog' } })
    expect(demoted.statusCode).toBe(200)
    expect(demoted.json()).toMatchObject({ role: 'admin', staffRole: 'catalog' })
    expect(await row(clerk.id)).toMatchObject({ staff_role: 'catalog' })
    // A staff role change ends the admin's sessions, as a role change does.
    const old = await shop.app.inject({ url: '/orders', headers: as(clerk) })
    expect(old.statusCode).toBe(401)
    // Signed in again: the new role's permissions.
    const fresh = { authorization: `Bearer ${await sessionToken(shop.app, clerk)}` }
    const orders = await shop.app.inject({ url: '/orders', headers: fresh })
    expect(orders.statusCode).toBe(403)
    expect(orders.json()).toEqual({ error: 'Forbidden - Requires permission: orders:read' })
    expect((await shop.app.inject({ url: '/auth/me', headers: fresh })).json().permissions).toEqual(['catalog:read', 'catalog:write'])
  })

  it('an admin made a customer loses the staff role; a customer made an admin becomes an owner unless told', async () => {
    const admin = await makeStaff(shop.app, 'support', 'Sam')
    const res = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${admin.id}`, headers: as(staff.owner!), payload: { role: 'customer' } })
    expect(res.json()).toMatchObject({ role: 'customer', staffRole: null })
    expect(await row(admin.id)).toMatchObject({ role: 'customer', staff_role: null })
    const back = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${admin.id}`, headers: as(staff.owner!), payload: { role: 'admin' } })
    expect(back.json()).toMatchObject({ role: 'admin', staffRole: 'owner' })
    const told = await shop.app.inject({
      method: 'PATCH',
      url: `/auth/users/${admin.id}`,
      headers: as(staff.owner!),
      payload: { role: 'admin', staffRole: 'fulfillment' },
    })
    expect(told.json()).toMatchObject({ role: 'admin', staffRole: 'fulfillment' })
  })
})

describe('orders by permission', () => {
  it('cancelling a paid order also needs refunds:write; a pending one only orders:write', async () => {
    const paid = await paidOrder(shop.app, { userId: shop.customer.id, email: shop.customer.email }, [{ name: 'Lamp', quantity: 1 }])
    const refused = await shop.app.inject({ method: 'PATCH', url: `/orders/${paid.id}/status`, headers: as(staff.support!), payload: { status: 'cancelled' } })
    expect(refused.statusCode).toBe(403)
    expect(refused.json()).toEqual({ error: 'Forbidden - Requires permission: refunds:write' })
    const after = await shop.app.db.selectFrom('orders').select('status').where('id', '=', paid.id).executeTakeFirstOrThrow()
    expect(after.status).toBe('paid')
    expect(await countRows(shop.app, 'refunds')).toBe(0)

    const pending = await paidOrder(shop.app, { userId: shop.customer.id, email: shop.customer.email }, [{ name: 'Rug', quantity: 1 }], 'pending')
    const cancelled = await shop.app.inject({
      method: 'PATCH',
      url: `/orders/${pending.id}/status`,
      headers: as(staff.support!),
      payload: { status: 'cancelled' },
    })
    expect(cancelled.statusCode).toBe(200)
    expect(cancelled.json()).toMatchObject({ status: 'cancelled' })
  })

  it('a receipt that does not refund needs only returns:write', async () => {
    const refunding = await shop.app.inject({ method: 'POST', url: '/returns/999999/receive', headers: as(staff.fulfillment!), payload: { refund: true } })
    expect(refunding.json()).toEqual({ error: 'Forbidden - Requires permission: refunds:write' })
    const keeping = await shop.app.inject({ method: 'POST', url: '/returns/999999/receive', headers: as(staff.fulfillment!), payload: { refund: false } })
    expect(keeping.statusCode).toBe(404)
  })

  it('a draft product shows to staff (catalog:read), not to customers', async () => {
    const product = await makeProduct(shop.app, { name: 'Hidden' })
    await shop.app.db.updateTable('products').set({ status: 'draft' }).where('id', '=', product.id).execute()
    shop.app.catalogCache.invalidate()
    expect((await shop.app.inject({ url: `/products/${product.id}`, headers: as(staff.fulfillment!) })).statusCode).toBe(200)
    expect((await shop.app.inject({ url: `/products/${product.id}`, headers: as(shop.customer) })).statusCode).toBe(404)
  })
})

describe('the last owner', () => {
  it("stays one when a change made elsewhere left only them (409), and can't be deleted", async () => {
    // Two owners; the auth cache still holds the first as an owner when another instance demotes it.
    const first = await makeStaff(shop.app, 'owner', 'First')
    const lastOne = await makeStaff(shop.app, 'owner', 'Last')
    expect((await shop.app.inject({ url: '/auth/me', headers: as(first) })).statusCode).toBe(200)
    await shop.app.db
      .updateTable('users')
      .set({ staff_role: 'manager' })
      .where('role', '=', 'admin')
      .where('staff_role', '=', 'owner')
      .where('id', '!=', lastOne.id)
      .where('id', '!=', first.id)
      .execute()
    await shop.app.db.updateTable('users').set({ staff_role: 'manager' }).where('id', '=', first.id).execute()
    const demote = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${lastOne.id}`, headers: as(first), payload: { staffRole: 'manager' } })
    expect(demote.statusCode).toBe(409)
    expect(demote.json()).toEqual({ error: 'Debe quedar al menos un propietario' })
    const toCustomer = await shop.app.inject({ method: 'PATCH', url: `/auth/users/${lastOne.id}`, headers: as(first), payload: { role: 'customer' } })
    expect(toCustomer.json()).toEqual({ error: 'Debe quedar al menos un propietario' })
    const deleted = await shop.app.inject({ method: 'DELETE', url: `/auth/users/${lastOne.id}`, headers: as(first) })
    expect(deleted.statusCode).toBe(409)
    expect(deleted.json()).toEqual({ error: 'Debe quedar al menos un propietario' })
    expect(await row(lastOne.id)).toMatchObject({ role: 'admin', staff_role: 'owner' })
    // Put back for the other tests.
    await shop.app.db.updateTable('users').set({ staff_role: 'owner' }).where('id', 'in', [first.id, staff.owner!.id, shop.admin.id]).execute()
  })
})

describe(`two owners demoting each other at once (${dialect})`, () => {
  const owners = useTestApp()

  it('exactly one succeeds; one owner is left', async () => {
    const app = owners.app
    // Only these two are owners.
    await app.db.updateTable('users').set({ staff_role: 'manager' }).where('id', '=', owners.admin.id).execute()
    const ana = await makeStaff(app, 'owner', 'Ana')
    const bea = await makeStaff(app, 'owner', 'Bea')
    const demote = (actor: TestUser, target: TestUser) =>
      app.inject({ method: 'PATCH', url: `/auth/users/${target.id}`, headers: bearer(actor), payload: { staffRole: 'manager' } })
    let answers
    if (dialect === 'postgres') {
      // Both past authentication and waiting on the owners' rows, held by a third transaction: a real race.
      let release!: () => void
      const hold = new Promise<void>((resolve) => (release = resolve))
      let holder = 0
      let locked = false
      const holding = app.db.transaction().execute(async (trx) => {
        holder = await backendPid(trx)
        await sql`select id from users where staff_role = 'owner' order by id for update`.execute(trx)
        locked = true
        await hold
      })
      await vi.waitUntil(() => locked, { timeout: 5000, interval: 5 })
      const both = Promise.all([demote(ana, bea), demote(bea, ana)])
      await waitUntilBlockedBy(app.db, holder, 5000, 2)
      release()
      await holding
      answers = await both
      expect(answers.map((res) => res.statusCode).sort()).toEqual([200, 409])
      expect(answers.find((res) => res.statusCode === 409)!.json()).toEqual({ error: 'Debe quedar al menos un propietario' })
    } else {
      // SQLite runs one transaction at a time: the second sees the first's change (or its token ended with it).
      answers = await Promise.all([demote(ana, bea), demote(bea, ana)])
      const codes = answers.map((res) => res.statusCode).sort()
      expect(codes[0]).toBe(200)
      expect([401, 409]).toContain(codes[1])
    }
    const left = await app.db.selectFrom('users').select('id').where('staff_role', '=', 'owner').where('role', '=', 'admin').execute()
    expect(left).toHaveLength(1)
    expect([ana.id, bea.id]).toContain(left[0]!.id)
  })
})
