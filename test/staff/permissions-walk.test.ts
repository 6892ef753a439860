import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { makeUser, type TestUser } from '../helpers/factories.js'
import type { Permission } from '../../src/modules/staff/permissions.js'
import { DOCUMENTED_GRANTS, makeStaff, sessionToken } from '../helpers/staff.js'

// Every operation of /openapi.json, called as anonymous, as a customer, as an admin of each staff role and as an API
// key of each role a key may have (refused on the caller's own data), against a table written here, by method and
// path: who may call it. The table, and what each role may do (DOCUMENTED_GRANTS), are the documented access
// (docs/staff.md), kept apart from the routes' declarations and the source's table on purpose: a route that forgets
// its permission, or declares the wrong one, fails here. An operation missing from the table fails too.

type Access =
  /** Anyone: never 401 or 403. */
  | { kind: 'public' }
  /** Any signed-in user, on their own data: 401 for anonymous, never 403. */
  | { kind: 'signed-in' }
  /** The admin role alone: 401, 403 for a customer, any staff role. */
  | { kind: 'admin' }
  /** The admin role and these permissions: a staff role lacking one is refused, naming the first missing. */
  | { kind: 'staff'; needs: Permission[] }
  /** Customers on their own, staff with these permissions (an order and its returns). */
  | { kind: 'own-or-staff'; needs: Permission[] }

const PUBLIC: Access = { kind: 'public' }
const SIGNED_IN: Access = { kind: 'signed-in' }
const ADMIN: Access = { kind: 'admin' }
const staff = (...needs: Permission[]): Access => ({ kind: 'staff', needs })
const ownOrStaff = (...needs: Permission[]): Access => ({ kind: 'own-or-staff', needs })

/** What each role may do (docs/staff.md), written out again in the tests' helper. */
const GRANTS: Record<string, Permission[]> = DOCUMENTED_GRANTS
const TABLE_ORDER: Permission[] = GRANTS.owner!

/** Every operation, by `METHOD /path` as /openapi.json spells it; the bodies sent are empty (`{}`). */
const ACCESS: Record<string, Access> = {
  'GET /health': PUBLIC,
  'GET /ready': PUBLIC,
  'POST /auth/refresh': PUBLIC,
  'POST /auth/logout': SIGNED_IN,
  'POST /auth/logout-all': SIGNED_IN,
  'PATCH /auth/me': SIGNED_IN,
  'GET /auth/me': SIGNED_IN,
  'POST /auth/password-reset': PUBLIC,
  'POST /auth/password-reset/confirm': PUBLIC,
  'POST /auth/register': PUBLIC,
  'POST /auth/login': PUBLIC,
  // A body that makes no admin: a customer's creation.
  'POST /auth/users': staff('customers:write'),
  'POST /auth/create-user': staff('customers:write'),
  'GET /auth/users': staff('customers:read'),
  'GET /auth/users/{id}': staff('customers:read'),
  // Before the user is read: either customers:write or staff:manage (the first in the table's order is named).
  'PATCH /auth/users/{id}': staff('customers:write'),
  'DELETE /auth/users/{id}': staff('customers:write'),
  'POST /carts': PUBLIC,
  'GET /cart': SIGNED_IN,
  'PATCH /cart': SIGNED_IN,
  'POST /cart/discount': SIGNED_IN,
  'DELETE /cart/discount': SIGNED_IN,
  'POST /cart/add': SIGNED_IN,
  'PUT /cart/item/{id}': SIGNED_IN,
  'DELETE /cart/item/{id}': SIGNED_IN,
  'DELETE /cart/clear': SIGNED_IN,
  'POST /orders/{id}/payment': SIGNED_IN,
  'POST /orders': SIGNED_IN,
  'GET /orders': ownOrStaff('orders:read'),
  'POST /orders/lookup': PUBLIC,
  'GET /orders/{id}': ownOrStaff('orders:read'),
  'POST /orders/{id}/cancel': SIGNED_IN,
  'PATCH /orders/{id}/status': staff('orders:write'),
  'PUT /orders/{id}/status': staff('orders:write'),
  'POST /orders/{id}/fulfillments': staff('fulfillments:write'),
  'PATCH /fulfillments/{id}': staff('fulfillments:write'),
  'POST /fulfillments/{id}/delivered': staff('fulfillments:write'),
  'GET /orders/{id}/events': staff('orders:read'),
  'POST /orders/{id}/notes': staff('orders:write'),
  'POST /orders/{id}/returns': ownOrStaff('returns:write'),
  'GET /orders/{id}/returns': ownOrStaff('orders:read'),
  'GET /returns': staff('orders:read'),
  'GET /returns/{id}': staff('orders:read'),
  'POST /returns/{id}/approve': staff('returns:write'),
  'POST /returns/{id}/reject': staff('returns:write'),
  // A receipt refunds unless the body says `refund: false`.
  'POST /returns/{id}/receive': staff('returns:write', 'refunds:write'),
  'POST /withdrawals/preview': PUBLIC,
  'POST /withdrawals/confirm': PUBLIC,
  'GET /withdrawals': staff('orders:read'),
  'GET /withdrawals/{id}': staff('orders:read'),
  'POST /withdrawals/{id}/return': staff('returns:write'),
  'POST /orders/{id}/refunds/preview': staff('refunds:write'),
  'POST /orders/{id}/refunds': staff('refunds:write'),
  'GET /addresses': SIGNED_IN,
  'POST /addresses': SIGNED_IN,
  'PATCH /addresses/{id}': SIGNED_IN,
  'DELETE /addresses/{id}': SIGNED_IN,
  'GET /shipping-methods': PUBLIC,
  'GET /shipping-methods?all=true': ADMIN,
  'POST /shipping-methods': staff('settings:write'),
  'PATCH /shipping-methods/{id}': staff('settings:write'),
  'DELETE /shipping-methods/{id}': staff('settings:write'),
  'GET /discount-codes': staff('discounts:write'),
  'POST /discount-codes': staff('discounts:write'),
  'GET /discount-codes/{id}': staff('discounts:write'),
  'PATCH /discount-codes/{id}': staff('discounts:write'),
  'DELETE /discount-codes/{id}': staff('discounts:write'),
  'GET /discount-codes/{id}/redemptions': staff('discounts:write'),
  'GET /tax-classes': ADMIN,
  'POST /tax-classes': staff('settings:write'),
  'PATCH /tax-classes/{code}': staff('settings:write'),
  'DELETE /tax-classes/{code}': staff('settings:write'),
  'GET /tax-rates': ADMIN,
  'POST /tax-rates': staff('settings:write'),
  'PATCH /tax-rates/{id}': staff('settings:write'),
  'DELETE /tax-rates/{id}': staff('settings:write'),
  'GET /categories': PUBLIC,
  'POST /categories': staff('catalog:write'),
  'GET /categories/{id}': PUBLIC,
  'PUT /categories/{id}': staff('catalog:write'),
  'PATCH /categories/{id}': staff('catalog:write'),
  'DELETE /categories/{id}': staff('catalog:write'),
  'GET /products': PUBLIC,
  'GET /products?status=draft': staff('catalog:read'),
  'POST /products': staff('catalog:write'),
  'GET /products/facets': PUBLIC,
  'GET /products/facets?status=draft': staff('catalog:read'),
  'GET /products/{id}': PUBLIC,
  'PUT /products/{id}': staff('catalog:write'),
  'PATCH /products/{id}': staff('catalog:write'),
  'DELETE /products/{id}': staff('catalog:write'),
  'POST /products/{id}/options': staff('catalog:write'),
  'PATCH /products/{id}/options/{optionId}': staff('catalog:write'),
  'DELETE /products/{id}/options/{optionId}': staff('catalog:write'),
  'PATCH /products/{id}/options/{optionId}/values/{valueId}': staff('catalog:write'),
  'DELETE /products/{id}/options/{optionId}/values/{valueId}': staff('catalog:write'),
  'POST /products/{id}/variants': staff('catalog:write'),
  'PATCH /variants/{id}': staff('catalog:write'),
  'DELETE /variants/{id}': staff('catalog:write'),
  'POST /products/{id}/images': staff('catalog:write'),
  'PUT /products/{id}/images/order': staff('catalog:write'),
  'PATCH /products/{id}/images/{imageId}': staff('catalog:write'),
  'DELETE /products/{id}/images/{imageId}': staff('catalog:write'),
  'GET /uploads/products/{name}': PUBLIC,
  'GET /exports/products.csv': staff('catalog:read'),
  'GET /exports/orders.csv': staff('orders:read'),
  'GET /exports/customers.csv': staff('customers:read'),
  'POST /imports/products': staff('catalog:write'),
  'POST /webhooks': staff('settings:write'),
  'GET /webhooks': staff('settings:write'),
  'GET /webhooks/{id}': staff('settings:write'),
  'PATCH /webhooks/{id}': staff('settings:write'),
  'DELETE /webhooks/{id}': staff('settings:write'),
  'GET /webhooks/{id}/deliveries': staff('settings:write'),
  'POST /webhooks/{id}/deliveries/{deliveryId}/retry': staff('settings:write'),
  'GET /admin/api/stats': staff('orders:read'),
  'POST /api-keys': staff('staff:manage'),
  'GET /api-keys': staff('staff:manage'),
  'POST /api-keys/{id}/rotate': staff('staff:manage'),
  'DELETE /api-keys/{id}': staff('staff:manage'),
  'GET /audit-log': staff('audit:read'),
}

/** Operations whose query makes them staff's: not in /openapi.json as operations of their own. */
const QUERY_VARIANTS = Object.keys(ACCESS).filter((key) => key.includes('?'))

const STAFF_ROLES = ['owner', 'manager', 'catalog', 'fulfillment', 'support'] as const
/** API keys, one per role a key may have: an admin of that role, refused on the caller's own data. */
const KEY_ROLES = ['manager', 'catalog', 'fulfillment', 'support'] as const
type KeyCaller = `key:${(typeof KEY_ROLES)[number]}`
const KEY_CALLERS = KEY_ROLES.map((role): KeyCaller => `key:${role}`)
const KEY_REFUSED = 'Forbidden - API keys cannot be used on this route'
const DENIED_ROLE = 'Forbidden - Requires one of the following roles: admin'
const UNAUTHORIZED = 'Unauthorized - No user found'

/** The path with its placeholders filled: ids that name nothing, a name that names no file. */
function concrete(path: string): string {
  return path.replace(/\{(\w+)\}/g, (_match, name: string) => (name === 'code' ? 'nope' : name === 'name' ? 'nothing.png' : '999999'))
}

/** What the caller should get: 'pass' (anything but 401 and 403), or the exact refusal. */
function expected(access: Access, caller: 'anonymous' | 'customer' | (typeof STAFF_ROLES)[number] | KeyCaller): 'pass' | { status: number; error: string } {
  if (access.kind === 'public') return 'pass'
  if (caller.startsWith('key:')) {
    if (access.kind === 'signed-in') return { status: 403, error: KEY_REFUSED }
    return expected(access, caller.slice(4) as (typeof STAFF_ROLES)[number])
  }
  if (caller === 'anonymous') return { status: 401, error: UNAUTHORIZED }
  if (access.kind === 'signed-in') return 'pass'
  if (caller === 'customer') return access.kind === 'own-or-staff' ? 'pass' : { status: 403, error: DENIED_ROLE }
  if (access.kind === 'admin') return 'pass'
  const missing = TABLE_ORDER.find((permission) => access.needs.includes(permission) && !GRANTS[caller]!.includes(permission))
  return missing === undefined ? 'pass' : { status: 403, error: `Forbidden - Requires permission: ${missing}` }
}

const shop = useTestApp()
let operations: string[] = []
const callers: Record<string, TestUser> = {}
const keySecrets: Record<string, string> = {}

beforeAll(async () => {
  const spec = (await shop.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> }
  operations = Object.entries(spec.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map((method) => `${method.toUpperCase()} ${path}`),
  )
  callers.customer = await makeUser(shop.app, 'customer', 'Walking Customer')
  for (const role of STAFF_ROLES) callers[role] = await makeStaff(shop.app, role)
  for (const role of KEY_ROLES) {
    const made = await shop.app.inject({
      method: 'POST',
      url: '/api-keys',
      headers: { authorization: `Bearer ${await sessionToken(shop.app, callers.owner!)}` },
      payload: { name: `Walking ${role} key`, staffRole: role },
    })
    expect(made.statusCode).toBe(201)
    keySecrets[`key:${role}`] = made.json<{ secret: string }>().secret
  }
})

describe('every operation, as every kind of caller', () => {
  it('the table names every operation of /openapi.json, and nothing else', () => {
    expect(operations.length).toBeGreaterThan(100)
    const missing = operations.filter((operation) => ACCESS[operation] === undefined)
    expect(missing, 'operations with no expected access in this test').toEqual([])
    const stale = Object.keys(ACCESS).filter((key) => !key.includes('?') && !operations.includes(key))
    expect(stale, 'entries naming no operation').toEqual([])
  })

  it('answers 401, 403 with the exact message, or lets the caller through, as the table says', async () => {
    const wrong: string[] = []
    let calls = 0
    for (const key of [...operations, ...QUERY_VARIANTS]) {
      const access = ACCESS[key]
      if (access === undefined) continue
      const [method, path] = key.split(' ') as [string, string]
      for (const caller of ['anonymous', 'customer', ...STAFF_ROLES, ...KEY_CALLERS] as const) {
        const user = callers[caller]
        const secret = keySecrets[caller]
        // Each call its own session: a logout ends only that one.
        const headers =
          secret !== undefined
            ? { authorization: `Bearer ${secret}` }
            : user === undefined
              ? {}
              : { authorization: `Bearer ${await sessionToken(shop.app, user)}` }
        const withBody = method !== 'GET' && method !== 'DELETE'
        const res = await shop.app.inject({
          method: method as 'GET',
          url: concrete(path),
          headers,
          ...(withBody ? { payload: {} } : {}),
        })
        calls += 1
        const want = expected(access, caller)
        if (want === 'pass') {
          if (res.statusCode === 401 || res.statusCode === 403) wrong.push(`${key} as ${caller}: ${res.statusCode} ${res.body}, expected to pass`)
        } else if (res.statusCode !== want.status || res.json<{ error?: string }>().error !== want.error) {
          wrong.push(`${key} as ${caller}: ${res.statusCode} ${res.body}, expected ${want.status} ${want.error}`)
        }
      }
    }
    expect(wrong).toEqual([])
    expect(calls).toBe((operations.length + QUERY_VARIANTS.length) * 11)
  }, 120_000)
})
