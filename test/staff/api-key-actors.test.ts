import { describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { exampleSetup, placeExample } from '../refunds/helpers.js'
import { bearer, makeUser } from '../helpers/factories.js'

// An API key acting on an order is named as itself wherever the order records who acted: the timeline, a refund,
// a return and the audit log say `api_key` with the key's id and name, never a user whose id happens to be the key's.

const shop = useTestApp()

async function managerKey(name: string): Promise<{ id: number; secret: string }> {
  const owner = await makeUser(shop.app, 'admin', 'Olga Owner')
  const made = await shop.app.inject({ method: 'POST', url: '/api-keys', headers: bearer(owner), payload: { name, staffRole: 'manager' } })
  expect(made.statusCode).toBe(201)
  return made.json<{ id: number; secret: string }>()
}

interface TimelineEntry {
  type: string
  actor: { type: string; id: number | null; name: string | null }
}

describe('an API key as the actor of order changes', () => {
  it('ships, notes, refunds and returns under its own name; the timeline, the refund, the return and the audit log say so', async () => {
    const key = await managerKey('Warehouse ERP')
    const as = { authorization: `Bearer ${key.secret}` }
    const owner = await makeUser(shop.app, 'admin', 'Otto Owner')
    const example = await placeExample(shop.app, owner, await exampleSetup(shop.app, owner), { paid: true })
    const order = example.order
    const line = example.mugLine
    await shop.app.db.deleteFrom('audit_log').execute()

    const shipped = await shop.app.inject({
      method: 'POST',
      url: `/orders/${order.id}/fulfillments`,
      headers: as,
      payload: { items: [{ orderItemId: line, quantity: 2 }] },
    })
    expect(shipped.statusCode, shipped.body).toBe(201)
    const noted = await shop.app.inject({ method: 'POST', url: `/orders/${order.id}/notes`, headers: as, payload: { text: 'Packed by the ERP' } })
    expect(noted.statusCode).toBe(201)
    const refunded = await shop.app.inject({
      method: 'POST',
      url: `/orders/${order.id}/refunds`,
      headers: { ...as, 'idempotency-key': 'erp-refund-1' },
      payload: { items: [{ orderItemId: line, quantity: 1 }] },
    })
    expect(refunded.statusCode, refunded.body).toBe(201)
    expect(refunded.json<{ actor: unknown }>().actor).toEqual({ type: 'api_key', id: key.id, name: 'Warehouse ERP' })
    const returned = await shop.app.inject({
      method: 'POST',
      url: `/orders/${order.id}/returns`,
      headers: as,
      payload: { items: [{ orderItemId: line, quantity: 1 }] },
    })
    expect(returned.statusCode, returned.body).toBe(201)

    const events = await shop.app.inject({ url: `/orders/${order.id}/events`, headers: as })
    expect(events.statusCode).toBe(200)
    const byKey = events
      .json<TimelineEntry[]>()
      .filter(
        (entry) =>
          ['order.fulfilled', 'note', 'order.status_changed', 'order.refunded', 'return.approved'].includes(entry.type) &&
          entry.actor.type !== 'system' &&
          entry.actor.id !== owner.id,
      )
    expect(byKey.map((entry) => entry.type).sort()).toEqual(['note', 'order.fulfilled', 'order.refunded', 'order.status_changed', 'return.approved'].sort())
    for (const entry of byKey) expect(entry.actor, entry.type).toEqual({ type: 'api_key', id: key.id, name: 'Warehouse ERP' })

    const audit = await shop.app.db
      .selectFrom('audit_log')
      .select(['action', 'actor_type', 'actor_id', 'actor_name'])
      .where('actor_type', '!=', 'user')
      .orderBy('id')
      .execute()
    expect(audit.map((entry) => entry.action)).toEqual(['fulfillment.create', 'order.add_note', 'refund.create', 'return.create'])
    for (const entry of audit) expect(entry).toMatchObject({ actor_type: 'api_key', actor_id: String(key.id), actor_name: 'Warehouse ERP' })
  })

  it('changes the user whose id is the key’s, as any other: a key is never that user (no “own role” refusal)', async () => {
    // A customer, then keys until one has the customer's id (ids of two tables, counted apart).
    const twin = await makeUser(shop.app, 'customer', 'Target')
    let key = await managerKey('CRM sync')
    while (key.id < twin.id) key = await managerKey('CRM sync')
    expect(key.id).toBe(twin.id)
    const changed = await shop.app.inject({
      method: 'PATCH',
      url: `/auth/users/${twin.id}`,
      headers: { authorization: `Bearer ${key.secret}` },
      payload: { role: 'admin', staffRole: 'support' },
    })
    // A manager key lacks staff:manage: the refusal names it, not the caller's own role.
    expect(changed.statusCode).toBe(403)
    expect(changed.json()).toEqual({ error: 'Forbidden - Requires permission: staff:manage' })
    const renamed = await shop.app.inject({
      method: 'PATCH',
      url: `/auth/users/${twin.id}`,
      headers: { authorization: `Bearer ${key.secret}` },
      payload: { name: 'Renamed' },
    })
    expect(renamed.statusCode).toBe(200)
    const deleted = await shop.app.inject({ method: 'DELETE', url: `/auth/users/${twin.id}`, headers: { authorization: `Bearer ${key.secret}` } })
    expect(deleted.statusCode).toBe(200)
    expect(await shop.app.db.selectFrom('users').select('id').where('id', '=', twin.id).executeTakeFirst()).toBeUndefined()
  })

  it('records its creation, rotation and revocation in the audit log, the secret redacted; a second revocation records nothing', async () => {
    await shop.app.db.deleteFrom('audit_log').execute()
    const owner = await makeUser(shop.app, 'admin', 'Rita Root')
    const made = await shop.app.inject({ method: 'POST', url: '/api-keys', headers: bearer(owner), payload: { name: 'Books', staffRole: 'support' } })
    const { id, secret } = made.json<{ id: number; secret: string }>()
    const rotated = await shop.app.inject({ method: 'POST', url: `/api-keys/${id}/rotate`, headers: bearer(owner) })
    expect(rotated.statusCode).toBe(200)
    for (let i = 0; i < 2; i += 1) expect((await shop.app.inject({ method: 'DELETE', url: `/api-keys/${id}`, headers: bearer(owner) })).statusCode).toBe(200)
    const entries = await shop.app.db.selectFrom('audit_log').selectAll().orderBy('id').execute()
    expect(entries.map((entry) => [entry.action, entry.entity_type, entry.entity_id, entry.actor_type, entry.actor_id])).toEqual([
      ['api_key.create', 'api_key', String(id), 'user', String(owner.id)],
      ['api_key.rotate', 'api_key', String(id), 'user', String(owner.id)],
      ['api_key.revoke', 'api_key', String(id), 'user', String(owner.id)],
    ])
    const text = JSON.stringify(entries)
    expect(text).not.toContain(secret)
    expect(text).not.toContain(rotated.json<{ secret: string }>().secret)
    expect(JSON.parse(entries[0]!.after!)).toMatchObject({ id, name: 'Books', secret: '[REDACTED]' })
    expect(JSON.parse(entries[2]!.before!).revokedAt).toBeNull()
    expect(JSON.parse(entries[2]!.after!).revokedAt).not.toBeNull()
  })
})
