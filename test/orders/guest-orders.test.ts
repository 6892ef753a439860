import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { redactUrlToken } from '../../src/app.js'
import { ConfigError, loadConfig } from '../../src/config.js'
import { createOrderTokens, signOrderTokenUntil } from '../../src/modules/orders/order-token.js'
import * as ordersRepo from '../../src/modules/orders/orders.repository.js'
import { orderLink } from '../../src/modules/orders/orders.service.js'
import { isUniqueViolation } from '../../src/shared/db-errors.js'
import { renderEmail } from '../../src/modules/outbox/mail/templates.js'
import { emailView } from '../../src/modules/outbox/mail/views.js'
import { emailNotifications } from '../../src/modules/outbox/notifications.js'
import type { EmailMessage } from '../../src/modules/outbox/outbox.js'
import { nowIso } from '../../src/shared/time.js'
import { testConfig, useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { queuedEmails } from '../helpers/outbox.js'

// Guest orders are placed by guest checkout; here they are written straight into the database, as that checkout
// writes them: no user, `guest` 1, the guest's e-mail.

const SECRET = 'test-secret-that-is-long-enough-for-hs256-000'
const BAD_LINK = { error: 'Enlace inválido o caducado' }
const NO_USER = { error: 'Unauthorized - No user found' }
const NOT_FOUND = { error: 'Orden no encontrada' }
const LOOKUP_ACCEPTED = { message: 'Si los datos coinciden, te enviaremos un enlace a tu pedido' }

const shop = useTestApp({ AUTH_RATE_LIMIT_MAX: '100000' })

interface GuestOrder {
  id: number
  productId: number
  variantId: number
  token: string
}

/** A pending guest order of 2 units of a new product (stock left: 8), with its line, and a token for it. */
async function guestOrder(app: FastifyInstance, email: string, options: { status?: 'pending' | 'paid'; fullName?: string } = {}): Promise<GuestOrder> {
  const product = await makeProduct(app, { name: 'Taza', stock: 8, priceCents: 1250 })
  const variant = await app.db.selectFrom('product_variants').select('id').where('product_id', '=', product.id).executeTakeFirstOrThrow()
  const now = nowIso()
  const order = await app.db
    .insertInto('orders')
    .values({
      user_id: null,
      guest: 1,
      email,
      total_cents: 2500,
      status: options.status ?? 'pending',
      created_at: now,
      updated_at: now,
      subtotal_cents: 2500,
      shipping_cents: 0,
      shipping_address: options.fullName
        ? JSON.stringify({
            fullName: options.fullName,
            line1: 'Calle Mayor 1',
            line2: null,
            city: 'Madrid',
            region: null,
            postalCode: '28013',
            country: 'ES',
            phone: null,
          })
        : null,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  await app.db
    .insertInto('order_items')
    .values({ order_id: order.id, product_id: product.id, variant_id: variant.id, quantity: 2, price_cents: 1250, name: 'Taza' })
    .execute()
  return { id: order.id, productId: product.id, variantId: variant.id, token: app.orderTokens.sign(order.id) }
}

const stockOf = async (app: FastifyInstance, variantId: number) =>
  (await app.db.selectFrom('product_variants').select('stock').where('id', '=', variantId).executeTakeFirstOrThrow()).stock
const statusOf = async (app: FastifyInstance, orderId: number) =>
  (await app.db.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirstOrThrow()).status

describe('order tokens', () => {
  const tokens = createOrderTokens(SECRET, 30 * 86_400_000)
  const now = Date.parse('2026-12-01T10:00:00.000Z')

  it('are <orderId>.<expiry in Unix seconds>.<base64url HMAC-SHA256>, valid for the configured time', () => {
    const token = tokens.sign(42, now)
    expect(token).toMatch(/^42\.\d+\.[\w-]{43}$/)
    expect(Number(token.split('.')[1])).toBe(now / 1000 + 30 * 86_400)
    expect(token).toBe(signOrderTokenUntil(SECRET, 42, now / 1000 + 30 * 86_400))
    expect(tokens.verify(token, 42, now)).toBe(true)
    expect(tokens.orderOf(token, now)).toBe(42)
    // Until the last second of their life, not at it.
    expect(tokens.verify(token, 42, now + 30 * 86_400_000 - 1)).toBe(true)
    expect(tokens.verify(token, 42, now + 30 * 86_400_000)).toBe(false)
  })

  it('open only their own order, and refuse anything changed, another secret, or garbage', () => {
    const token = tokens.sign(42, now)
    const [id, expiry, signature] = token.split('.') as [string, string, string]
    const flipped = `${signature.slice(0, 10)}${signature[10] === 'A' ? 'B' : 'A'}${signature.slice(11)}`
    // The last character holds 4 bits of the signature and 2 unused ones: each other spelling of it is refused too,
    // also those that decode to the same bytes.
    const lastSpellings = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_']
      .filter((c) => c !== signature.at(-1))
      .map((c) => `${id}.${expiry}.${signature.slice(0, -1)}${c}`)
    expect(tokens.verify(token, 43, now)).toBe(false)
    for (const bad of [
      `43.${expiry}.${signature}`,
      `${id}.${Number(expiry) + 1}.${signature}`,
      `${id}.${expiry}.${flipped}`,
      `${id}.${expiry}.${signature}=`,
      `0${id}.${expiry}.${signature}`,
      `${id}.${expiry}`,
      createOrderTokens(`${SECRET}x`, 30 * 86_400_000).sign(42, now),
      '',
      'garbage',
      `${token}.`,
      ...lastSpellings,
    ]) {
      expect(tokens.orderOf(bad, now), bad).toBeUndefined()
    }
  })

  it('orderLink gives the token and the storefront link that carries it', () => {
    const link = orderLink({ tokens, shopUrl: 'https://tienda.test' }, 7, now)
    expect(link).toEqual({ orderToken: tokens.sign(7, now), link: `https://tienda.test/orders/7?token=${tokens.sign(7, now)}` })
  })
})

describe('GET /orders/:id with an order token', () => {
  it('opens a guest order by ?token= or X-Order-Token: userId null, guest true, its e-mail', async () => {
    const order = await guestOrder(shop.app, 'Invitada@Shop.test')
    for (const request of [{ url: `/orders/${order.id}?token=${order.token}` }, { url: `/orders/${order.id}`, headers: { 'x-order-token': order.token } }]) {
      const res = await shop.app.inject(request)
      expect(res.statusCode).toBe(200)
      const body = res.json()
      expect(body).toMatchObject({ id: order.id, userId: null, guest: true, email: 'Invitada@Shop.test', status: 'pending', total: 25 })
      expect(body.items).toEqual([expect.objectContaining({ productId: order.productId, quantity: 2, price: 12.5, name: 'Taza' })])
      // The owner's view: no customer, no next statuses.
      expect(body).not.toHaveProperty('customer')
      expect(body).not.toHaveProperty('nextStatuses')
    }
  })

  it('refuses a bad, tampered, expired or another order’s token with 401', async () => {
    const order = await guestOrder(shop.app, 'guest-a@shop.test')
    const other = await guestOrder(shop.app, 'guest-b@shop.test')
    const [id, expiry, signature] = order.token.split('.') as [string, string, string]
    const expired = signOrderTokenUntil(SECRET, order.id, Math.floor(Date.now() / 1000) - 1)
    for (const token of [
      'garbage',
      '',
      `${id}.${Number(expiry) + 60}.${signature}`,
      `${id}.${expiry}.${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`,
      expired,
      other.token,
      signOrderTokenUntil('another-secret-that-is-long-enough-000000000', order.id, Number(expiry)),
    ]) {
      for (const request of [
        { url: `/orders/${order.id}?token=${encodeURIComponent(token)}` },
        { url: `/orders/${order.id}`, headers: { 'x-order-token': token } },
      ]) {
        const res = await shop.app.inject(request)
        expect({ token, status: res.statusCode, body: res.json() }).toEqual({ token, status: 401, body: BAD_LINK })
      }
    }
    // Two tokens in the query are no token.
    const twice = await shop.app.inject({ url: `/orders/${order.id}?token=${order.token}&token=${order.token}`, headers: bearer(shop.admin) })
    expect(twice.statusCode).toBe(401)
    expect(twice.json()).toEqual(BAD_LINK)
    // A token of an order does not open another order by its id either.
    const res = await shop.app.inject({ url: `/orders/${other.id}?token=${order.token}` })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual(BAD_LINK)
  })

  it('without a token a guest order needs a bearer: none is 401, a customer’s is 404, an admin sees it with customer null', async () => {
    const order = await guestOrder(shop.app, 'guest-c@shop.test')
    const anonymous = await shop.app.inject({ url: `/orders/${order.id}` })
    expect(anonymous.statusCode).toBe(401)
    expect(anonymous.json()).toEqual(NO_USER)
    const customer = await shop.app.inject({ url: `/orders/${order.id}`, headers: bearer(shop.customer) })
    expect(customer.statusCode).toBe(404)
    expect(customer.json()).toEqual(NOT_FOUND)
    const admin = await shop.app.inject({ url: `/orders/${order.id}`, headers: bearer(shop.admin) })
    expect(admin.statusCode).toBe(200)
    expect(admin.json()).toMatchObject({
      id: order.id,
      userId: null,
      guest: true,
      email: 'guest-c@shop.test',
      customer: null,
      nextStatuses: ['paid', 'cancelled'],
    })
  })

  it('with a bearer too, the token decides: a signed-in customer opens the link; a bad token is 401 whatever the bearer', async () => {
    const order = await guestOrder(shop.app, 'guest-d@shop.test')
    const opened = await shop.app.inject({ url: `/orders/${order.id}?token=${order.token}`, headers: bearer(shop.customer) })
    expect(opened.statusCode).toBe(200)
    expect(opened.json()).toMatchObject({ id: order.id, guest: true })
    // Even an admin's bearer does not rescue a bad token (and the token's view has no admin fields).
    const refused = await shop.app.inject({ url: `/orders/${order.id}?token=nope`, headers: bearer(shop.admin) })
    expect(refused.statusCode).toBe(401)
    expect(refused.json()).toEqual(BAD_LINK)
    const asAdmin = await shop.app.inject({ url: `/orders/${order.id}?token=${order.token}`, headers: bearer(shop.admin) })
    expect(asAdmin.json()).not.toHaveProperty('customer')
  })

  it('an account order keeps its shape: its user’s e-mail, guest false', async () => {
    const user = await makeUser(shop.app)
    const now = nowIso()
    const row = await shop.app.db
      .insertInto('orders')
      .values({ user_id: user.id, total_cents: 500, status: 'pending', created_at: now, updated_at: now })
      .returning(['id', 'guest', 'email'])
      .executeTakeFirstOrThrow()
    // Stored without an e-mail of its own: the account's is read through the user.
    expect(row).toMatchObject({ guest: 0, email: null })
    // Other query parameters are ignored, as before (only `token` is read).
    const res = await shop.app.inject({ url: `/orders/${row.id}?utm_source=mail`, headers: bearer(user) })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: row.id, userId: user.id, email: user.email, guest: false })
  })
})

describe('POST /orders/:id/cancel and /payment with an order token', () => {
  it('cancels a guest’s pending order: 200, the stock comes back, the guest is e-mailed with a fresh link', async () => {
    const order = await guestOrder(shop.app, 'guest-cancel@shop.test', { fullName: 'Lucía' })
    const res = await shop.app.inject({ method: 'POST', url: `/orders/${order.id}/cancel`, headers: { 'x-order-token': order.token } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: order.id, status: 'cancelled', guest: true, userId: null })
    expect(await statusOf(shop.app, order.id)).toBe('cancelled')
    expect(await stockOf(shop.app, order.variantId)).toBe(10)
    const events = await shop.app.db.selectFrom('order_events').selectAll().where('order_id', '=', order.id).execute()
    // The guest, named on the timeline by the order's e-mail.
    expect(events).toEqual([
      expect.objectContaining({
        type: 'order.status_changed',
        actor_type: 'guest',
        actor_id: null,
        actor_name: 'guest-cancel@shop.test',
        data: JSON.stringify({ from: 'pending', to: 'cancelled', cause: 'customer' }),
      }),
    ])
    const mails = await queuedEmails(shop.app.db, 'guest-cancel@shop.test')
    expect(mails.map((mail) => mail.template)).toEqual(['order-cancelled'])
    const link = new URL(String(mails[0]!.data.link))
    expect(`${link.origin}${link.pathname}`).toBe(`http://shop.test/orders/${order.id}`)
    expect(mails[0]!.data.name).toBe('Lucía')
    // The link opens the order.
    const opened = await shop.app.inject({ url: `/orders/${order.id}?token=${link.searchParams.get('token')}` })
    expect(opened.statusCode).toBe(200)
    const rendered = renderEmail('order-cancelled', emailView(mails[0]!, { currency: 'EUR', publicUrl: 'http://shop.test' }))
    expect(rendered.subject).toBe(`Tu pedido #${order.id} ha sido cancelado`)
    expect(rendered.text).toContain('Hola, Lucía:')
    expect(rendered.text).toContain(`Consulta tu pedido en cualquier momento en este enlace:\n${link.href}\n`)
    expect(rendered.html).toContain(`href="${link.href}"`)
  })

  it('cancelling a paid guest order is 409 (a customer cancels only pending orders) and changes nothing', async () => {
    const order = await guestOrder(shop.app, 'guest-paid@shop.test', { status: 'paid' })
    const res = await shop.app.inject({ method: 'POST', url: `/orders/${order.id}/cancel?token=${order.token}` })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'Transición de estado no permitida: paid -> cancelled' })
    expect(await statusOf(shop.app, order.id)).toBe('paid')
    expect(await stockOf(shop.app, order.variantId)).toBe(8)
    expect(await queuedEmails(shop.app.db, 'guest-paid@shop.test')).toEqual([])
  })

  it('a bad token cancels nothing (401), and neither does a customer’s bearer (404)', async () => {
    const order = await guestOrder(shop.app, 'guest-keep@shop.test')
    const other = await guestOrder(shop.app, 'guest-other@shop.test')
    const bad = await shop.app.inject({ method: 'POST', url: `/orders/${order.id}/cancel`, headers: { 'x-order-token': other.token } })
    expect(bad.statusCode).toBe(401)
    expect(bad.json()).toEqual(BAD_LINK)
    const customer = await shop.app.inject({ method: 'POST', url: `/orders/${order.id}/cancel`, headers: bearer(shop.customer) })
    expect(customer.statusCode).toBe(404)
    expect(customer.json()).toEqual(NOT_FOUND)
    expect(await statusOf(shop.app, order.id)).toBe('pending')
    expect(await stockOf(shop.app, order.variantId)).toBe(8)
  })

  it('pays a guest’s pending order with its token (the manual provider: unpaid), refuses another order’s token', async () => {
    const order = await guestOrder(shop.app, 'guest-pay@shop.test')
    const res = await shop.app.inject({ method: 'POST', url: `/orders/${order.id}/payment?token=${order.token}` })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ provider: 'manual', status: 'unpaid', amount: 25 })
    const other = await guestOrder(shop.app, 'guest-pay2@shop.test')
    const refused = await shop.app.inject({ method: 'POST', url: `/orders/${order.id}/payment`, headers: { 'x-order-token': other.token } })
    expect(refused.statusCode).toBe(401)
    expect(refused.json()).toEqual(BAD_LINK)
    const anonymous = await shop.app.inject({ method: 'POST', url: `/orders/${order.id}/payment` })
    expect(anonymous.statusCode).toBe(401)
    expect(anonymous.json()).toEqual(NO_USER)
    const customer = await shop.app.inject({ method: 'POST', url: `/orders/${order.id}/payment`, headers: bearer(shop.customer) })
    expect(customer.statusCode).toBe(404)
    expect(customer.json()).toEqual(NOT_FOUND)
  })
})

describe('GET /orders filters guest and email', () => {
  const t = useTestApp()

  it('guest=true|false splits guest and account orders; email matches a guest’s or an account’s, ignoring case', async () => {
    const ana = await makeUser(t.app)
    const now = nowIso()
    const account = await t.app.db
      .insertInto('orders')
      .values({ user_id: ana.id, total_cents: 500, status: 'pending', created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    const guestA = await guestOrder(t.app, 'Compra@Shop.test')
    const guestB = await guestOrder(t.app, 'otra@shop.test')
    const list = async (query: string) => {
      const res = await t.app.inject({ url: `/orders?${query}`, headers: bearer(t.admin) })
      expect(res.statusCode).toBe(200)
      return { ids: (res.json() as Array<{ id: number }>).map((o) => o.id), total: res.headers['x-total-count'] }
    }
    expect(await list('guest=true')).toEqual({ ids: [guestB.id, guestA.id], total: '2' })
    expect(await list('guest=false')).toEqual({ ids: [account.id], total: '1' })
    expect(await list('email=compra@shop.test')).toEqual({ ids: [guestA.id], total: '1' })
    expect(await list(`email=${encodeURIComponent(ana.email.toUpperCase())}`)).toEqual({ ids: [account.id], total: '1' })
    expect(await list(`email=${encodeURIComponent(ana.email)}&guest=true`)).toEqual({ ids: [], total: '0' })
    expect(await list('email=nadie@shop.test')).toEqual({ ids: [], total: '0' })
    const page = await t.app.inject({ url: '/orders?guest=true&limit=1', headers: bearer(t.admin) })
    expect(page.headers.link).toBe('<http://shop.test/orders?limit=1&offset=1&guest=true>; rel="next"')
    const guests = (await t.app.inject({ url: '/orders?guest=true', headers: bearer(t.admin) })).json()
    expect(guests[0]).toMatchObject({ userId: null, guest: true, email: 'otra@shop.test', customer: null })
    // A customer's list is their own orders, whatever the filters.
    const own = await t.app.inject({ url: '/orders?guest=true', headers: bearer(ana) })
    expect(own.json()).toEqual([])
  })

  it('refuses a filter that is not a boolean or an e-mail of 1 to 254 characters with 422', async () => {
    for (const [query, message] of [
      ['guest=maybe', 'guest must be a boolean value'],
      ['email=', 'email should not be empty'],
    ]) {
      const res = await t.app.inject({ url: `/orders?${query}`, headers: bearer(t.admin) })
      expect({ query, status: res.statusCode, body: res.json() }).toEqual({ query, status: 422, body: { error: message } })
    }
  })
})

describe('POST /orders/lookup', () => {
  const lookup = (payload: unknown, app = shop.app, remoteAddress?: string) =>
    app.inject({ method: 'POST', url: '/orders/lookup', payload: payload as object, ...(remoteAddress ? { remoteAddress } : {}) })

  it('a matching guest order (e-mail ignoring case) gets a fresh link by e-mail; 202', async () => {
    const order = await guestOrder(shop.app, 'Busca@Shop.test')
    const res = await lookup({ orderId: order.id, email: '  BUSCA@shop.TEST ' })
    expect(res.statusCode).toBe(202)
    expect(res.json()).toEqual(LOOKUP_ACCEPTED)
    const mails = await queuedEmails(shop.app.db, 'Busca@Shop.test')
    expect(mails).toEqual([{ template: 'guest-order-link', to: 'Busca@Shop.test', data: { order: { id: order.id }, link: expect.any(String) } }])
    const link = new URL(String(mails[0]!.data.link))
    expect(`${link.origin}${link.pathname}`).toBe(`http://shop.test/orders/${order.id}`)
    const token = link.searchParams.get('token')!
    expect(token).toMatch(new RegExp(`^${order.id}\\.\\d+\\.[\\w-]{43}$`))
    // Valid GUEST_ORDER_LINK_TTL (30 days by default) from now.
    expect(Number(token.split('.')[1]) - Date.now() / 1000).toBeGreaterThan(30 * 86_400 - 60)
    expect(Number(token.split('.')[1]) - Date.now() / 1000).toBeLessThanOrEqual(30 * 86_400 + 1)
    expect((await shop.app.inject({ url: `/orders/${order.id}?token=${token}` })).statusCode).toBe(200)
    const rendered = renderEmail('guest-order-link', emailView(mails[0] as EmailMessage, { currency: 'EUR', publicUrl: 'http://shop.test' }))
    expect(rendered.subject).toBe(`Accede a tu pedido #${order.id}`)
    expect(rendered.text).toContain(`\n${link.href}\n`)
    expect(rendered.html).toContain(`href="${link.href}"`)
  })

  it('no match gets the same answer and no e-mail: another e-mail, an unknown order, an account order', async () => {
    const order = await guestOrder(shop.app, 'real@shop.test')
    const user = await makeUser(shop.app)
    const now = nowIso()
    const account = await shop.app.db
      .insertInto('orders')
      .values({ user_id: user.id, total_cents: 500, status: 'pending', created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    const outbox = async () => (await queuedEmails(shop.app.db)).length
    const before = await outbox()
    const matched = await lookup({ orderId: order.id, email: 'real@shop.test' })
    expect(await outbox()).toBe(before + 1)
    for (const payload of [
      { orderId: order.id, email: 'fake@shop.test' },
      { orderId: 2_000_000_000, email: 'real@shop.test' },
      { orderId: account.id, email: user.email },
    ]) {
      const res = await lookup(payload)
      expect(res.statusCode).toBe(matched.statusCode)
      expect(res.body).toBe(matched.body)
      expect(res.headers['content-type']).toBe(matched.headers['content-type'])
    }
    expect(await outbox()).toBe(before + 1)
    expect(await queuedEmails(shop.app.db, user.email)).toEqual([])
    expect(await queuedEmails(shop.app.db, 'fake@shop.test')).toEqual([])
  })

  it.each([
    [{ email: 'a@shop.test' }, 'orderId should not be empty'],
    [{ orderId: 1 }, 'email should not be empty'],
    [{ orderId: 'x', email: 'a@shop.test' }, 'orderId must be an integer number'],
    [{ orderId: 0, email: 'a@shop.test' }, 'orderId must not be less than 1'],
    [{ orderId: 1, email: 'not-an-email' }, 'email must be a valid email'],
  ])('validates first: %j → 422 %s, nothing queued', async (payload, message) => {
    const before = (await queuedEmails(shop.app.db)).length
    const res = await lookup(payload)
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 422, body: { error: message } })
    expect(await queuedEmails(shop.app.db)).toHaveLength(before)
  })

  describe('rate limit', () => {
    const limited = useTestApp({ AUTH_RATE_LIMIT_MAX: '2' })

    it('login’s maximum, window, headers and 429, on a counter of its own', async () => {
      const ip = '198.51.100.23'
      const order = await guestOrder(limited.app, 'limited@shop.test')
      const answers = [
        await lookup({ orderId: order.id, email: 'limited@shop.test' }, limited.app, ip),
        await lookup({ orderId: 1, email: 'x@shop.test' }, limited.app, ip),
      ]
      expect(answers.map((a) => a.statusCode)).toEqual([202, 202])
      answers.forEach((answer, i) => {
        expect(answer.headers['ratelimit-limit']).toBe('2')
        expect(answer.headers['ratelimit-remaining']).toBe(String(1 - i))
      })
      const blocked = await lookup({ orderId: order.id, email: 'limited@shop.test' }, limited.app, ip)
      expect(blocked.statusCode).toBe(429)
      expect(blocked.json()).toEqual({ error: 'Demasiados intentos. Intenta de nuevo en 15 minutos.' })
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0)
      // The blocked lookup sent nothing.
      expect(await queuedEmails(limited.app.db, 'limited@shop.test')).toHaveLength(1)
      // Another client has its own counter; log-in keeps its own.
      expect((await lookup({ orderId: order.id, email: 'limited@shop.test' }, limited.app, '198.51.100.24')).statusCode).toBe(202)
      const login = await limited.app.inject({
        method: 'POST',
        url: '/auth/login',
        remoteAddress: ip,
        payload: { email: limited.customer.email, password: limited.customer.password },
      })
      expect(login.statusCode).toBe(200)
    })
  })
})

describe('e-mails of a guest order', () => {
  it('order-received goes to the guest’s e-mail with the link checkout answered (signed as of the order’s creation)', async () => {
    const config = testConfig({ SHOP_URL: 'https://tienda.test/', ADMIN_NOTIFY_EMAIL: 'ops@shop.test' })
    const createdAt = '2026-12-01T10:00:00.000Z'
    const order = { id: 77, userId: null, guest: true, email: 'Guest@Shop.test', status: 'pending', createdAt, total: 25, items: [], shippingAddress: null }
    const rows = await emailNotifications(config)(undefined as never, { type: 'order.created', data: order })
    const mails = rows.map((row) => JSON.parse(row.payload) as EmailMessage)
    const token = orderLink({ tokens: createOrderTokens(config.jwtSecret, config.guests.orderLinkTtlMs), shopUrl: '' }, 77, Date.parse(createdAt)).orderToken
    expect(mails).toEqual([
      { template: 'order-received', to: 'Guest@Shop.test', data: { name: '', order, link: `https://tienda.test/orders/77?token=${token}` } },
      // The admins hear of a guest's order by its e-mail; their e-mail carries no link.
      { template: 'admin-new-order', to: 'ops@shop.test', data: { name: '(invitado)', email: 'Guest@Shop.test', order } },
    ])
    const rendered = renderEmail('order-received', emailView(mails[0]!, { currency: 'EUR', publicUrl: 'http://shop.test' }))
    expect(rendered.text).toContain('Hola:\n')
    expect(rendered.text).toContain(`https://tienda.test/orders/77?token=${token}`)
  })

  it('an account’s order-received has no link and greets the customer by name, as before', async () => {
    const user = await makeUser(shop.app, 'customer', 'Ana')
    const order = { id: 78, userId: user.id, guest: false, email: user.email, status: 'pending', total: 25, items: [] }
    const rows = await shop.app.db.transaction().execute((trx) => emailNotifications(shop.config)(trx, { type: 'order.created', data: order }))
    const mail = rows.map((row) => JSON.parse(row.payload) as EmailMessage).find((m) => m.template === 'order-received')!
    expect(mail).toEqual({ template: 'order-received', to: user.email, data: { name: 'Ana', order } })
    const rendered = renderEmail('order-received', emailView(mail, { currency: 'EUR', publicUrl: 'http://shop.test' }))
    expect(rendered.text).toContain('Hola, Ana:\n\nGracias por tu compra.')
    expect(rendered.text).not.toContain('enlace')
    expect(rendered.html).not.toContain('href')
  })
})

describe('idempotency keys of a guest cart', () => {
  it('are found, freed and raced within their cart’s scope, apart from users’ keys', async () => {
    const db = shop.app.db
    const first = await guestOrder(shop.app, 'keys@shop.test')
    const second = await guestOrder(shop.app, 'keys@shop.test')
    const cart = { cartTokenHash: 'cart-hash-1' }
    const old = '2026-01-01T00:00:00.000Z'
    await db.transaction().execute((trx) => ordersRepo.insertIdempotencyKey(trx, { scope: cart, key: 'k1', order_id: first.id, created_at: old }))
    expect(await ordersRepo.findOrderIdByIdempotencyKey(db, cart, 'k1', old)).toBe(first.id)
    // Another cart, or a user, with the same key: not this key.
    expect(await ordersRepo.findOrderIdByIdempotencyKey(db, { cartTokenHash: 'cart-hash-2' }, 'k1', old)).toBeUndefined()
    expect(await ordersRepo.findOrderIdByIdempotencyKey(db, { userId: shop.customer.id }, 'k1', old)).toBeUndefined()
    // The same key in the same cart loses the race on the unique index.
    const race = await db
      .transaction()
      .execute((trx) => ordersRepo.insertIdempotencyKey(trx, { scope: cart, key: 'k1', order_id: second.id, created_at: nowIso() }))
      .catch((error: unknown) => error)
    expect(isUniqueViolation(race)).toBe(true)
    // Past its 24 hours the key is freed (only in its scope), then names a new order.
    await db.transaction().execute((trx) => ordersRepo.deleteExpiredIdempotencyKey(trx, { userId: shop.customer.id }, 'k1', nowIso()))
    expect(await ordersRepo.findOrderIdByIdempotencyKey(db, cart, 'k1', old)).toBe(first.id)
    await db.transaction().execute(async (trx) => {
      await ordersRepo.deleteExpiredIdempotencyKey(trx, cart, 'k1', nowIso())
      await ordersRepo.insertIdempotencyKey(trx, { scope: cart, key: 'k1', order_id: second.id, created_at: nowIso() })
    })
    expect(await ordersRepo.findOrderIdByIdempotencyKey(db, cart, 'k1', old)).toBe(second.id)
    expect(await db.selectFrom('idempotency_keys').selectAll().where('cart_token_hash', '=', 'cart-hash-1').execute()).toEqual([
      { user_id: null, cart_token_hash: 'cart-hash-1', key: 'k1', order_id: second.id, created_at: expect.any(String) },
    ])
  })
})

describe('configuration and logs', () => {
  it('GUEST_CHECKOUT, GUEST_CART_TTL and GUEST_ORDER_LINK_TTL: defaults, durations, one line per bad value', () => {
    const base = { NODE_ENV: 'test', JWT_SECRET: SECRET, DATA_DIR: '/tmp/shop-guests-config', LOG_LEVEL: 'silent' }
    expect(loadConfig(base).guests).toEqual({ checkout: true, cartTtlMs: 30 * 86_400_000, orderLinkTtlMs: 30 * 86_400_000 })
    expect(loadConfig({ ...base, GUEST_CHECKOUT: 'false', GUEST_CART_TTL: '12h', GUEST_ORDER_LINK_TTL: '3600' }).guests).toEqual({
      checkout: false,
      cartTtlMs: 12 * 3_600_000,
      orderLinkTtlMs: 3_600_000,
    })
    let problems: string[] = []
    try {
      loadConfig({ ...base, GUEST_CHECKOUT: 'yes', GUEST_CART_TTL: 'forever', GUEST_ORDER_LINK_TTL: '500ms' })
    } catch (error) {
      problems = (error as ConfigError).problems
    }
    expect(problems).toEqual([
      'GUEST_CHECKOUT must be true or false (got "yes")',
      'GUEST_CART_TTL must be a duration of at least one second such as 30d, 12h, 3600 or 30m (got "forever")',
      'GUEST_ORDER_LINK_TTL must be a duration of at least one second such as 30d, 12h, 3600 or 30m (got "500ms")',
    ])
  })

  it('an order token in the URL is not written to the log', () => {
    expect(redactUrlToken('/orders/5?token=5.123.abc')).toBe('/orders/5?token=[redacted]')
    expect(redactUrlToken('/orders/5/cancel?x=1&token=5.1.a&y=2')).toBe('/orders/5/cancel?x=1&token=[redacted]&y=2')
    expect(redactUrlToken('/orders?limit=1')).toBe('/orders?limit=1')
  })
})
