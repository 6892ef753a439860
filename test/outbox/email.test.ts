import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { enqueueEmail } from '../../src/modules/outbox/outbox.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'
import { smtpError, startSmtpFake } from '../fakes/smtp-server.js'

// E-mail over a real SMTP server (smtp-server in this process), parsed with mailparser. On both databases.

// Started first (its URL is the shop's SMTP_URL) and closed last: Vitest runs the after hooks in reverse.
const smtp = await startSmtpFake()
afterAll(async () => {
  await smtp.close()
})
// SMTP_TIMEOUT_MS: long enough for a whole exchange with the fake (which parses each message) on a loaded machine; at
// 300 ms a CI run cut two exchanges after the fake had the message, and the retries sent them twice (at least once).
const t = useTestApp(
  { SMTP_URL: smtp.url, ADMIN_NOTIFY_EMAIL: 'ops@shop.test', SMTP_TIMEOUT_MS: '2000' },
  // A short back-off, so that a retry comes within the test; the real schedule is tested in dispatcher.test.ts.
  { outbox: { retry: { firstDelayMs: 100, factor: 2, jitter: 0 } } },
)
beforeEach(async () => {
  await t.app.outbox.drain()
  smtp.received.length = 0
  smtp.onMailFrom = undefined
  smtp.onRcptTo = undefined
  smtp.dataDelayMs = 0
})

async function placeOrder(user: TestUser, name = 'Taza de cerámica') {
  const product = await makeProduct(t.app, { name, stock: 50, priceCents: 1250 })
  await fillCart(t.app, user.id, [{ productId: product.id, quantity: 2 }])
  const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user) })
  expect(res.statusCode).toBe(201)
  return res.json() as { id: number }
}

const mailTo = (address: string) => smtp.received.filter((mail) => mail.to.includes(address))

async function outboxRows() {
  return t.app.db.selectFrom('outbox').selectAll().where('channel', '=', 'email').orderBy('created_at').execute()
}

describe('e-mail over SMTP', () => {
  it('an order reaches the SMTP server soon after its commit: the customer’s and the admin’s, text and HTML in Spanish', async () => {
    const user = await makeUser(t.app, 'customer', 'Ana')
    const order = await placeOrder(user)
    // No drain: the dispatcher is woken after the commit (the contract's bound is 5 s).
    await expect.poll(() => mailTo(user.email).length, { timeout: 5000, interval: 20 }).toBe(1)
    await expect.poll(() => mailTo('ops@shop.test').length, { timeout: 5000, interval: 20 }).toBe(1)

    const [customer] = mailTo(user.email)
    expect(customer?.from).toBe('no-reply@shop.test')
    expect(customer?.parsed.subject).toBe(`Hemos recibido tu pedido #${order.id}`)
    expect(customer?.parsed.from?.text).toBe('no-reply@shop.test')
    expect(customer?.parsed.text).toContain('Hola, Ana:')
    expect(customer?.parsed.text).toContain('2 × Taza de cerámica: 25,00\u00a0€')
    expect(customer?.parsed.text).toContain('Total: 25,00\u00a0€')
    expect(customer?.parsed.html).toContain('<td>Taza de cerámica</td>')
    expect(customer?.parsed.html).toContain('<strong>25,00\u00a0€</strong>')

    const [ops] = mailTo('ops@shop.test')
    expect(ops?.parsed.subject).toBe(`Nuevo pedido #${order.id} (25,00\u00a0€)`)
    expect(ops?.parsed.text).toContain(`Nuevo pedido de Ana <${user.email}>`)
    expect(ops?.parsed.html).toContain(`Nuevo pedido de Ana &lt;${user.email}&gt;`)

    // The row is marked once the server's 250 is back, a moment after the server has the message.
    const customerRow = async () => (await outboxRows()).find((r) => JSON.parse(r.payload).to === user.email)
    await expect.poll(async () => (await customerRow())?.status, { timeout: 5000, interval: 20 }).toBe('delivered')
    const row = await customerRow()
    expect(row).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 250, last_error: null })
    // The Message-ID is the outbox row's id: the same on every attempt, a receiver's deduplication key.
    expect(customer?.parsed.messageId).toBe(`<${row?.id}@shop.test>`)
  })

  it('shows the shipping address with its recipient’s name, to the customer and to the admin, in text and HTML', async () => {
    const user = await makeUser(t.app, 'customer', 'Ana')
    const product = await makeProduct(t.app, { name: 'Jarra', stock: 10, priceCents: 900 })
    await fillCart(t.app, user.id, [{ productId: product.id, quantity: 1 }])
    // The parcel goes to someone else than the account's holder: their name is the address's, not the account's.
    const shippingAddress = { fullName: 'Lucía Fernández <Ruiz>', line1: 'Calle Mayor 1', line2: '2º B', city: 'Madrid', postalCode: '28013', country: 'ES' }
    const res = await t.app.inject({ method: 'POST', url: '/orders', headers: bearer(user), payload: { shippingAddress } })
    expect(res.statusCode).toBe(201)
    expect(res.json().shippingAddress).toMatchObject({ fullName: shippingAddress.fullName })
    await t.app.outbox.drain()
    for (const mail of [...mailTo(user.email), ...mailTo('ops@shop.test')]) {
      expect(mail.parsed.text).toContain('Envío a:\nLucía Fernández <Ruiz>\nCalle Mayor 1, 2º B\n28013 Madrid (ES)')
      expect(mail.parsed.html).toContain('Envío a:<br />Lucía Fernández &lt;Ruiz&gt;<br />Calle Mayor 1, 2º B<br />28013 Madrid (ES)')
    }
    expect(mailTo(user.email)).toHaveLength(1)
    expect(mailTo('ops@shop.test')).toHaveLength(1)
  })

  it('paid, shipped and cancelled orders each send the customer their e-mail, with #id in the subject', async () => {
    const user = await makeUser(t.app)
    const first = await placeOrder(user)
    const second = await placeOrder(user)
    for (const status of ['paid', 'shipped', 'delivered']) {
      const res = await t.app.inject({ method: 'PATCH', url: `/orders/${first.id}/status`, headers: bearer(t.admin), payload: { status } })
      expect(res.statusCode).toBe(200)
    }
    expect((await t.app.inject({ method: 'POST', url: `/orders/${second.id}/cancel`, headers: bearer(user) })).statusCode).toBe(200)
    await t.app.outbox.drain()
    expect(
      mailTo(user.email)
        .map((mail) => mail.parsed.subject)
        .sort(),
    ).toEqual(
      [
        `Hemos recibido tu pedido #${first.id}`,
        `Hemos recibido tu pedido #${second.id}`,
        `Pago confirmado: pedido #${first.id}`,
        `Tu pedido #${first.id} está en camino`,
        `Tu pedido #${second.id} ha sido cancelado`,
      ].sort(),
    )
  })

  it('escapes what the shop did not write (a product name) in the HTML', async () => {
    const user = await makeUser(t.app, 'customer', 'Eve <script>')
    await placeOrder(user, 'Taza <b>"negrita"</b> {{order.total}}')
    await t.app.outbox.drain()
    const [mail] = mailTo(user.email)
    expect(mail?.parsed.html).toContain('Taza &lt;b&gt;&quot;negrita&quot;&lt;/b&gt; {{order.total}}')
    expect(mail?.parsed.html).toContain('Hola, Eve &lt;script&gt;:')
    expect(mail?.parsed.html).not.toContain('<b>')
    // The plain text shows it as written, never expanded.
    expect(mail?.parsed.text).toContain('2 × Taza <b>"negrita"</b> {{order.total}}: 25,00\u00a0€')
  })

  it('sends the password reset of h-sessions’ enqueueEmail with its link, in text and HTML', async () => {
    await t.app.db
      .transaction()
      .execute((trx) =>
        enqueueEmail(trx, { template: 'password-reset', to: 'ana@shop.test', data: { name: 'Ana', link: 'https://shop.test/reset?token=abc&x=1' } }),
      )
    await t.app.outbox.drain()
    const [mail] = mailTo('ana@shop.test')
    expect(mail?.parsed.subject).toBe('Restablece tu contraseña')
    expect(mail?.parsed.text).toContain('https://shop.test/reset?token=abc&x=1')
    expect(mail?.parsed.html).toContain('href="https://shop.test/reset?token=abc&amp;x=1"')
  })

  it('SMTP down for a while, then back: retried with back-off and delivered once', async () => {
    await smtp.stop()
    try {
      await t.app.db
        .transaction()
        .execute((trx) => enqueueEmail(trx, { template: 'password-reset', to: 'down@shop.test', data: { name: 'D', link: 'https://x.test/r' } }))
      await t.app.outbox.drain()
      const [failed] = await t.app.db.selectFrom('outbox').selectAll().where('payload', 'like', '%down@shop.test%').execute()
      expect(failed).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null })
      expect(failed?.last_error).toMatch(/ECONNREFUSED|connect/i)
      expect(Date.parse(failed?.next_attempt_at ?? '')).toBeGreaterThan(Date.now() - 1000)
    } finally {
      await smtp.start()
    }
    await expect
      .poll(async () => (await t.app.db.selectFrom('outbox').select('status').where('payload', 'like', '%down@shop.test%').executeTakeFirst())?.status, {
        timeout: 10_000,
        interval: 50,
      })
      .toBe('delivered')
    await t.app.outbox.drain()
    expect(mailTo('down@shop.test')).toHaveLength(1)
    const row = await t.app.db.selectFrom('outbox').selectAll().where('payload', 'like', '%down@shop.test%').executeTakeFirstOrThrow()
    expect(row.attempts).toBeGreaterThanOrEqual(2)
    expect(row.last_error).toBeNull()
  })

  it('a server that refuses for now (4xx) is retried; one that refuses the recipient (5xx) fails the message at once', async () => {
    smtp.onMailFrom = () => {
      throw smtpError(451, 'Try again later')
    }
    await t.app.db
      .transaction()
      .execute((trx) => enqueueEmail(trx, { template: 'password-reset', to: 'later@shop.test', data: { name: 'L', link: 'https://x.test/r' } }))
    await t.app.outbox.drain()
    expect(
      await t.app.db.selectFrom('outbox').select(['status', 'attempts', 'last_status_code']).where('payload', 'like', '%later@shop.test%').executeTakeFirst(),
    ).toEqual({
      status: 'pending',
      attempts: 1,
      last_status_code: 451,
    })
    smtp.onMailFrom = undefined
    smtp.onRcptTo = (address) => {
      if (address.address === 'nobody@shop.test') throw smtpError(550, 'No such user')
    }
    await t.app.db
      .transaction()
      .execute((trx) => enqueueEmail(trx, { template: 'password-reset', to: 'nobody@shop.test', data: { name: 'N', link: 'https://x.test/r' } }))
    await t.app.outbox.drain()
    const refused = await t.app.db.selectFrom('outbox').selectAll().where('payload', 'like', '%nobody@shop.test%').executeTakeFirstOrThrow()
    expect(refused).toMatchObject({ status: 'failed', attempts: 1, last_status_code: 550 })
    expect(refused.last_error).toContain('No such user')
    expect(mailTo('nobody@shop.test')).toEqual([])
  })

  it('a slow SMTP server holds an attempt no longer than SMTP_TIMEOUT_MS', async () => {
    smtp.dataDelayMs = 5000
    await t.app.db
      .transaction()
      .execute((trx) => enqueueEmail(trx, { template: 'password-reset', to: 'slow@shop.test', data: { name: 'S', link: 'https://x.test/r' } }))
    await t.app.outbox.drain()
    // Answered after 5 s, an attempt not cut at SMTP_TIMEOUT_MS (2 s) would have delivered it.
    const row = await t.app.db.selectFrom('outbox').selectAll().where('payload', 'like', '%slow@shop.test%').executeTakeFirstOrThrow()
    expect(row.status).toBe('pending')
    expect(row.attempts).toBeGreaterThanOrEqual(1)
    expect(row.last_error).toMatch(/timeout/i)
    smtp.dataDelayMs = 0
  })
})
