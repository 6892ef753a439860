import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { createProductViaApi, makeCategory, makeProduct, makeProducts, PNG } from '../helpers/catalog.js'
import { renderPng } from '../../src/modules/images/png.js'
import { stockOf } from '../helpers/shop.js'
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js'
import { ADMIN, DESKTOP, hasChromium, launchBrowser, openPage, PHONE, screenshot, seriousViolations, type Shop, signIn, startShop } from '../helpers/browser.js'

// One service and one browser for the file; the admin's page stays signed in from test to test.
describe.skipIf(!hasChromium)('admin dashboard in a browser', () => {
  let shop: Shop
  let browser: Browser
  let admin: { context: BrowserContext; page: Page }
  let receiver: WebhookReceiver

  const api = async (method: 'GET' | 'POST' | 'PATCH', url: string, user?: { token: string }, payload?: object) => {
    const response = await shop.app.inject({ method, url, headers: user ? bearer(user) : {}, ...(payload ? { payload } : {}) })
    return { status: response.statusCode, body: response.json() }
  }
  // Going to the page the browser is already on is no navigation at all (the list would not be read again): reload.
  const go = async (page: Page, hash: string) => {
    const target = `/admin/#${hash}`
    if (new URL(page.url()).pathname + new URL(page.url()).hash === target) await page.reload()
    else await page.goto(target)
  }
  const alertWith = (page: Page, text: string) => page.getByRole('alert').filter({ hasText: text })
  /** What is said beside a form's input: its helper text, where MUI puts the field's error (aria-describedby). */
  const besideField = async (input: Locator): Promise<string> => {
    const ids = (await input.getAttribute('aria-describedby'))?.split(/\s+/).filter(Boolean) ?? []
    if (ids.length === 0) return ''
    const texts = await input
      .page()
      .locator(ids.map((id) => `[id="${id}"]`).join(', '))
      .allTextContents()
    return texts.join(' ')
  }

  /** A customer who bought `quantity` of a product: the order, placed through the API. */
  async function placeOrder(quantity = 2): Promise<{ customer: TestUser; productId: number; orderId: number }> {
    const customer = await makeUser(shop.app, 'customer', 'Carla Customer')
    const product = await makeProduct(shop.app, { name: `Lamp ${Math.random().toString(36).slice(2, 7)}`, priceCents: 2550, stock: 10 })
    expect((await api('POST', '/cart/add', customer, { productId: product.id, quantity })).status).toBe(201)
    const order = await api('POST', '/orders', customer)
    expect(order.status).toBe(201)
    return { customer, productId: product.id, orderId: order.body.id }
  }

  beforeAll(async () => {
    // The webhooks' receiver is on 127.0.0.1, which a shop's webhooks may only reach when allowed.
    ;[shop, browser, receiver] = await Promise.all([startShop({ WEBHOOKS_ALLOW_PRIVATE: 'true' }), launchBrowser(), startWebhookReceiver()])
    admin = await openPage(browser, shop)
    await signIn(admin.page)
    await admin.page.getByRole('menuitem', { name: 'Products' }).waitFor()
  })
  afterAll(async () => {
    await browser?.close()
    await shop?.close()
    await receiver?.close()
  })

  it('refuses a customer, says why, and keeps no session', async () => {
    const customer = await makeUser(shop.app, 'customer')
    const { context, page } = await openPage(browser, shop)
    await page.goto('/admin/')
    await signIn(page, customer.email, customer.password)
    await alertWith(page, 'the dashboard is for the shop’s administrators only').waitFor()
    expect(await page.evaluate(() => localStorage.getItem('shop-admin.session'))).toBeNull()
    expect(page.url()).toContain('#/login')
    await context.close()
  })

  it('shows the API’s message for a wrong password', async () => {
    const { context, page } = await openPage(browser, shop)
    await signIn(page, ADMIN.email, 'not-the-password')
    await alertWith(page, 'Credenciales inválidas').waitFor()
    await context.close()
  })

  it('creates a product with an image (previewed before upload), and the shop lists it', async () => {
    const { page } = admin
    const category = await makeCategory(shop.app, 'Lighting')
    await go(page, '/products/create')
    await page.getByRole('textbox', { name: /^Name/ }).fill('Desk lamp')
    await page.getByLabel('Description').fill('A warm light')
    await page.getByRole('spinbutton', { name: 'Price', exact: true }).fill('19.99')
    await page.getByLabel('Stock').fill('7')
    await page.getByLabel('Category').fill('Light')
    await page.getByRole('option', { name: 'Lighting' }).click()
    await page.locator('input[type=file]').setInputFiles({ name: 'lamp.png', mimeType: 'image/png', buffer: PNG })
    // The preview is the local file, before anything is sent.
    await page.locator('img[src^="blob:"]').waitFor()
    await page.getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/#\/products(\?|$)/)
    const list = await api('GET', '/products?q=Desk%20lamp')
    expect(list.body).toHaveLength(1)
    expect(list.body[0]).toMatchObject({ name: 'Desk lamp', description: 'A warm light', price: 19.99, stock: 7, categoryId: category.id })
    expect(list.body[0].imageUrl).toMatch(/\/uploads\/products\/\d+-lamp\.png$/)
    await page.getByRole('row', { name: /Desk lamp/ }).waitFor()
  })

  it('shows the API’s validation message beside the field', async () => {
    const { page } = admin
    await go(page, '/products/create')
    await page.getByRole('textbox', { name: /^Name/ }).fill('Too long a description')
    await page.getByLabel('Description').fill('x'.repeat(6000))
    await page.getByRole('spinbutton', { name: 'Price', exact: true }).fill('1')
    await page.locator('input[type=file]').setInputFiles({ name: 'a.png', mimeType: 'image/png', buffer: PNG })
    const sent = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/products')
    await page.getByRole('button', { name: 'Save' }).click()
    // The dashboard asks for problem details: the field's error is found by the problem's `field`, not its wording.
    expect((await (await sent).allHeaders()).accept).toBe('application/json, application/problem+json')
    // Beside the field, in the form (the notification says it too).
    await page.locator('form').getByText('description must be shorter than or equal to 5000 characters').waitFor()
    expect(await besideField(page.getByLabel('Description'))).toContain('description must be shorter than or equal to 5000 characters')
    expect((await api('GET', '/products?q=Too%20long')).body).toHaveLength(0)
  })

  it('edits a product’s price', async () => {
    const { page } = admin
    const product = await makeProduct(shop.app, { name: 'Kettle', priceCents: 3000 })
    await go(page, `/products/${product.id}`)
    await expect.poll(() => page.getByRole('spinbutton', { name: 'Price', exact: true }).inputValue()).toBe('30')
    await page.getByRole('spinbutton', { name: 'Price', exact: true }).fill('27.5')
    await page.getByRole('button', { name: 'Save' }).click()
    await expect.poll(async () => (await api('GET', `/products/${product.id}`)).body.price).toBe(27.5)
  })

  it('deletes a product after confirmation', async () => {
    const { page } = admin
    const product = await makeProduct(shop.app, { name: 'Old toaster' })
    // A product that stays, so the list is still there (with its header) once the toaster is gone, whichever tests ran.
    await makeProduct(shop.app, { name: 'Kept kettle' })
    await go(page, '/products')
    const row = page.getByRole('row', { name: /Old toaster/ })
    await row.getByRole('button', { name: 'Delete' }).click()
    const dialog = page.getByRole('dialog')
    await dialog.getByText('Delete this product?').waitFor()
    expect((await api('GET', `/products/${product.id}`)).status).toBe(200)
    await dialog.getByRole('button', { name: 'Confirm' }).click()
    await expect.poll(async () => (await api('GET', `/products/${product.id}`)).status).toBe(404)
    // While the dialog is open or closing the list is hidden from role lookups: wait for it to go first, so that the
    // row's absence says something (the kept product's row is still found).
    await dialog.waitFor({ state: 'detached' })
    await row.waitFor({ state: 'detached' })
    await page.getByRole('row', { name: /Kept kettle/ }).waitFor()
  })

  it('creates, renames and deletes a category, and shows the API’s message for one in use', async () => {
    const { page } = admin
    await go(page, '/categories/create')
    await page.getByRole('textbox', { name: /^Name/ }).fill('Garden')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('row', { name: /Garden/ }).waitFor()
    const created = (await api('GET', '/categories')).body.find((category: { name: string }) => category.name === 'Garden')
    expect(created).toBeDefined()

    await page
      .getByRole('row', { name: /Garden/ })
      .getByRole('link', { name: 'Rename' })
      .click()
    await page.getByRole('textbox', { name: /^Name/ }).fill('Garden & patio')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('row', { name: /Garden & patio/ }).waitFor()
    expect((await api('GET', `/categories/${created.id}`)).body.name).toBe('Garden & patio')

    const used = await makeCategory(shop.app, 'Tools')
    await makeProduct(shop.app, { name: 'Hammer', categoryId: used.id })
    await page.reload()
    await page.getByRole('row', { name: /Tools/ }).getByRole('button', { name: 'Delete' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click()
    await alertWith(page, 'La categoría tiene productos asociados').waitFor()
    expect((await api('GET', `/categories/${used.id}`)).status).toBe(200)

    await page
      .getByRole('row', { name: /Garden & patio/ })
      .getByRole('button', { name: 'Delete' })
      .click()
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click()
    await expect.poll(async () => (await api('GET', `/categories/${created.id}`)).status).toBe(404)
  })

  it('shows an order placed through the API and moves it pending → paid → shipped', async () => {
    const { page } = admin
    const { customer, orderId } = await placeOrder()
    await go(page, '/orders')
    await page.getByRole('row', { name: new RegExp(customer.email) }).click()
    await page.getByRole('heading', { name: `Order #${orderId}`, level: 2 }).waitFor()
    await page.getByRole('table', { name: 'Order lines' }).getByText('51.00').first().waitFor()
    // Only the moves the API allows from pending.
    expect(await page.getByRole('button', { name: /^(Mark|Cancel)/ }).allTextContents()).toEqual(['Mark as paid', 'Cancel order'])
    await page.getByRole('button', { name: 'Mark as paid' }).click()
    await expect.poll(async () => (await api('GET', `/orders/${orderId}`, customer)).body.status).toBe('paid')
    await page.getByRole('button', { name: 'Mark as shipped' }).click()
    await expect.poll(async () => (await api('GET', `/orders/${orderId}`, customer)).body.status).toBe('shipped')
    await page.getByRole('button', { name: 'Mark as delivered' }).waitFor()
    expect(await page.getByRole('button', { name: /^(Mark|Cancel)/ }).allTextContents()).toEqual(['Mark as delivered'])
  })

  it('cancels a paid order after saying it refunds, and the stock comes back', async () => {
    const { page } = admin
    const { customer, productId, orderId } = await placeOrder(3)
    expect(await stockOf(shop.app, productId)).toBe(7)
    const adminUser = await makeUser(shop.app, 'admin')
    expect((await api('PATCH', `/orders/${orderId}/status`, adminUser, { status: 'paid' })).status).toBe(200)
    await go(page, `/orders/${orderId}/show`)
    await page.getByRole('button', { name: 'Cancel order' }).click()
    const dialog = page.getByRole('dialog')
    await dialog.getByText('cancelling it refunds the payment of 76.50').waitFor()
    await dialog.getByRole('button', { name: 'Cancel order' }).click()
    await expect.poll(async () => (await api('GET', `/orders/${orderId}`, customer)).body.status).toBe('cancelled')
    expect(await stockOf(shop.app, productId)).toBe(10)
  })

  it('lists orders by status', async () => {
    const { page } = admin
    const { orderId } = await placeOrder(1)
    await go(page, `/orders?filter=${encodeURIComponent(JSON.stringify({ status: 'pending' }))}`)
    await page.getByRole('row', { name: new RegExp(`#${orderId}\\b`) }).waitFor()
    expect(await page.getByRole('row', { name: /shipped|cancelled/ }).count()).toBe(0)
  })

  it('promotes a customer to admin, and creates an admin', async () => {
    const { page } = admin
    const customer = await makeUser(shop.app, 'customer', 'Promoted Person')
    await go(page, `/users/${customer.id}`)
    await page.getByLabel('Role').click()
    await page.getByRole('option', { name: 'Admin' }).click()
    await page.getByRole('button', { name: 'Save' }).click()
    const adminUser = await makeUser(shop.app, 'admin')
    await expect.poll(async () => (await api('GET', `/auth/users/${customer.id}`, adminUser)).body.role).toBe('admin')
    // Back on the list once the save is through (its notice gone), before going on: a page left while the edit's
    // save settles is drawn again under the next one.
    await page.waitForURL(/#\/users(\?.*)?$/)
    await page.getByRole('row', { name: /Promoted Person/ }).waitFor()

    await go(page, '/users/create')
    await page.getByRole('heading', { name: 'New user' }).waitFor()
    await page.getByRole('textbox', { name: /^Name/ }).fill('Second Admin')
    await page.getByLabel('Email').fill(customer.email)
    await page.getByRole('textbox', { name: /^Password/ }).fill('short')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.locator('form').getByText('La contraseña debe tener al menos 6 caracteres').waitFor()
    expect(await besideField(page.getByRole('textbox', { name: /^Password/ }))).toContain('La contraseña debe tener al menos 6 caracteres')
    await page.getByRole('textbox', { name: /^Password/ }).fill('long-enough-1')
    await page.getByRole('button', { name: 'Save' }).click()
    // A duplicate e-mail (409 email_taken) is the e-mail field's error: the problem names the field.
    await expect.poll(() => besideField(page.getByLabel('Email'))).toContain('El email ya está en uso')
    await page.getByLabel('Email').fill('second@shop.test')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('row', { name: /second@shop\.test/ }).waitFor()
    const users = (await api('GET', '/auth/users?limit=100', adminUser)).body
    expect(users.find((user: { email: string }) => user.email === 'second@shop.test')).toMatchObject({ name: 'Second Admin', role: 'admin' })
  })

  it('an expired session brings the admin back to sign-in, then to the page they were on', async () => {
    const { customer } = await placeOrder(1)
    const { context, page } = await openPage(browser, shop)
    await page.addInitScript(() => {
      if (!sessionStorage.getItem('seeded')) {
        sessionStorage.setItem('seeded', '1')
        localStorage.setItem(
          'shop-admin.session',
          JSON.stringify({ token: 'expired.token.value', user: { id: '1', name: 'Owner', email: 'o@x', role: 'admin' } }),
        )
      }
    })
    await go(page, '/orders')
    await page.waitForURL(/#\/login/)
    await alertWith(page, 'Your session has expired').waitFor()
    await signIn(page)
    await page.waitForURL(/#\/orders/)
    await page.getByRole('row', { name: new RegExp(customer.email) }).waitFor()
    await context.close()
  })

  it('a 401 first renews the token with the refresh token, and carries on without signing in again', async () => {
    const { customer } = await placeOrder(1)
    const fresh = await makeUser(shop.app, 'admin')
    const { context, page } = await openPage(browser, shop)
    await page.addInitScript(() => {
      if (!sessionStorage.getItem('seeded')) {
        sessionStorage.setItem('seeded', '1')
        const user = { id: '1', name: 'Owner', email: 'o@x', role: 'admin' }
        localStorage.setItem('shop-admin.session', JSON.stringify({ token: 'expired.token.value', refreshToken: 'refresh-1', user }))
      }
    })
    // The service's POST /auth/refresh, as a service with sessions answers it.
    const sent: unknown[] = []
    await page.route(
      (url) => url.pathname === '/auth/refresh',
      async (route) => {
        sent.push(route.request().postDataJSON())
        await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ token: fresh.token, refreshToken: 'refresh-2' }) })
      },
    )
    await go(page, '/orders')
    await page.getByRole('row', { name: new RegExp(customer.email) }).waitFor()
    expect(page.url()).toContain('#/orders')
    expect(sent).toEqual([{ refreshToken: 'refresh-1' }])
    const session = JSON.parse((await page.evaluate(() => localStorage.getItem('shop-admin.session'))) ?? '{}')
    expect(session).toMatchObject({ token: fresh.token, refreshToken: 'refresh-2' })
    await context.close()
  })

  it('signs out: the session ends on the service too (POST /auth/logout), not only in the browser', async () => {
    const { context, page } = await openPage(browser, shop)
    await signIn(page)
    await page.getByRole('menuitem', { name: 'Products' }).waitFor()
    const session = JSON.parse((await page.evaluate(() => localStorage.getItem('shop-admin.session'))) ?? '{}') as { token: string; refreshToken: string }
    expect(session.refreshToken).toEqual(expect.any(String))
    expect((await api('GET', '/auth/me', session)).status).toBe(200)

    await page.getByRole('button', { name: 'Profile' }).click()
    await page.getByRole('menuitem', { name: 'Logout' }).click()
    await page.waitForURL(/#\/login$/)
    expect(await page.evaluate(() => localStorage.getItem('shop-admin.session'))).toBeNull()
    // Both of the session's tokens stopped working.
    await expect.poll(async () => (await api('GET', '/auth/me', session)).status).toBe(401)
    const refresh = await api('POST', '/auth/refresh', undefined, { refreshToken: session.refreshToken })
    expect(refresh).toEqual({ status: 401, body: { error: 'Token inválido o expirado' } })
    await context.close()
  })

  it('the overview says so when its figures cannot be loaded, after one more try', async () => {
    const { context, page } = await openPage(browser, shop)
    await signIn(page)
    await page.getByRole('menuitem', { name: 'Products' }).waitFor()
    // The first page's own calls done before the counting starts (on a slow VM one was still on its way: a third call).
    await page.waitForLoadState('networkidle')
    let statsCalls = 0
    await page.route(
      (url) => url.pathname.startsWith('/admin/api/'),
      (route) => {
        if (new URL(route.request().url()).pathname === '/admin/api/stats') statsCalls += 1
        return route.abort('connectionrefused')
      },
    )
    await page.reload()
    await alertWith(page, 'The overview could not be loaded: The shop API cannot be reached').waitFor()
    // The call and one retry (App.tsx), not React Query's default three more over 7 s.
    expect(statsCalls).toBe(2)
    await context.close()
  })

  it('does not let an admin change their own role', async () => {
    const { page } = admin
    const me = (await api('GET', '/auth/users?limit=100', await makeUser(shop.app, 'admin'))).body.find((user: { email: string }) => user.email === ADMIN.email)
    await go(page, `/users/${me.id}`)
    await page.getByText('You cannot change your own role.').waitFor()
    expect(await page.getByRole('combobox', { name: /Role/ }).getAttribute('aria-disabled')).toBe('true')
  })

  it('adds a webhook, shows its secret once, lists its deliveries and sends one again (slow: the real routes and dispatcher, two deliveries and four page loads)', async () => {
    const { context, page } = await openPage(browser, shop)
    await signIn(page)
    await page.getByRole('menuitem', { name: 'Webhooks' }).waitFor()
    const url = `${receiver.url}/shop`
    await go(page, '/webhooks/create')
    await page.getByRole('textbox', { name: /^URL/ }).fill(url)
    await page.getByRole('checkbox', { name: 'order.paid' }).uncheck()
    await page.getByRole('button', { name: 'Save' }).click()
    const notice = alertWith(page, 'shown only now: whsec_')
    await notice.waitFor()
    const secret = /whsec_[A-Za-z0-9+/=]+/.exec((await notice.textContent()) ?? '')?.[0]
    await page.waitForURL(/#\/webhooks\/\d+$/)
    const id = Number(/\/webhooks\/(\d+)$/.exec(page.url())?.[1])
    const row = await shop.app.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    expect({ url: row.url, events: JSON.parse(row.events) as unknown, secret }).toEqual({ url, events: ['order.created'], secret: row.secret })
    // Shown once: the webhook's page, read again, has no secret anywhere.
    await page.reload()
    await page.getByText('Nothing has been sent to this webhook yet.').waitFor()
    expect(await page.content()).not.toContain(row.secret)

    // An order: the dispatcher delivers order.created to the receiver, signed with that secret.
    const { orderId } = await placeOrder(1)
    const [first] = await receiver.waitFor(1)
    const event = new Webhook(row.secret).verify(first!.body, first!.headers as Record<string, string>) as { type: string; data: { id: number } }
    expect(event).toMatchObject({ type: 'order.created', data: { id: orderId } })
    await page.reload()
    const deliveries = page.getByRole('table', { name: 'Deliveries' })
    await deliveries.getByRole('cell', { name: 'delivered' }).waitFor()
    // Sent again on request: the same delivery (its id and body), which the receiver can recognise.
    await deliveries.getByRole('button', { name: 'Retry the order.created delivery' }).click()
    await alertWith(page, 'Delivery queued to be sent again now').waitFor()
    const [, second] = await receiver.waitFor(2)
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id'])
    expect(second!.body).toBe(first!.body)
    await expect
      .poll(async () => (await shop.app.db.selectFrom('outbox').select(['status', 'attempts']).where('webhook_id', '=', id).execute()).map((r) => r.status))
      .toEqual(['delivered'])
    await context.close()
  })

  it('says so when the API cannot be reached', async () => {
    const { context, page } = await openPage(browser, shop)
    await signIn(page)
    await page.getByRole('menuitem', { name: 'Categories' }).waitFor()
    await page.route(
      (url) => url.pathname.startsWith('/categories'),
      (route) => route.abort('connectionrefused'),
    )
    await go(page, '/categories')
    await alertWith(page, 'The shop API cannot be reached').first().waitFor()
    await context.close()
  })

  it('lists 100 products on one page', async () => {
    const { page } = admin
    await makeProducts(
      shop.app,
      Array.from({ length: 100 }, (_, i) => ({ name: `Bulk item ${String(i).padStart(3, '0')}` })),
    )
    await go(page, '/categories')
    await page.getByRole('menuitem', { name: 'Products' }).waitFor()
    await go(page, '/products?perPage=100&page=1&sort=createdAt&order=DESC')
    await page.locator('tbody tr').nth(99).waitFor()
    expect(await page.locator('tbody tr').count()).toBe(100)
  })

  it('the overview charts the orders placed, with at most 3 API calls', async (context) => {
    if (!shop.app.hasRoute({ method: 'GET', url: '/admin/api/stats' })) return context.skip('GET /admin/api/stats is not in this build yet')
    const { page } = admin
    const stats = (await api('GET', '/admin/api/stats?days=30', await makeUser(shop.app, 'admin'))).body
    expect(stats.totals.orders).toBeGreaterThan(0)
    const calls: string[] = []
    const count = (request: { url: () => string }) => {
      const path = new URL(request.url()).pathname
      if (!path.startsWith('/admin/') || path.startsWith('/admin/api/')) calls.push(path)
    }
    page.on('request', count)
    await go(page, '/')
    await page.reload()
    const chart = page.getByTestId('orders-chart')
    await chart.waitFor()
    expect(await chart.getAttribute('aria-label')).toContain(`${stats.totals.orders} orders`)
    const bars = await chart.locator('rect').evaluateAll((rects) => rects.reduce((sum, rect) => sum + Number(rect.getAttribute('data-orders')), 0))
    expect(bars).toBe(stats.totals.orders)
    await page.getByText('Orders to ship').waitFor()
    page.off('request', count)
    expect(calls.filter((path) => !path.startsWith('/uploads/'))).toEqual(['/admin/api/stats'])
  })

  it('every page passes axe (WCAG 2.1 AA) at 390 px and 1440 px; screenshots for the docs (slow: axe over the sign-in and 12 pages, at two widths)', async () => {
    // A few products with real images on top of the list, for the screenshots.
    const owner = await makeUser(shop.app, 'admin')
    const kitchen = await makeCategory(shop.app, 'Kitchen')
    const colours: Array<[string, [number, number, number], [number, number, number]]> = [
      ['Teapot', [30, 79, 145], [140, 180, 230]],
      ['Espresso cups', [138, 75, 0], [240, 200, 140]],
      ['Screenshot mug', [40, 120, 60], [170, 220, 180]],
    ]
    let product = { id: 0 }
    for (const [name, top, bottom] of colours) {
      product = await createProductViaApi(
        shop.app,
        owner,
        { name, price: '12.90', stock: name === 'Screenshot mug' ? '2' : '25', categoryId: String(kitchen.id) },
        [{ filename: `${name.toLowerCase().replace(/ /g, '-')}.png`, type: 'image/png', data: renderPng(64, 64, top, bottom) }],
      )
    }
    const { orderId } = await placeOrder(1)
    // Two shipping methods for their page, deleted at the end: while one is active, every order needs an address and a method.
    const shipping: number[] = []
    for (const [name, price, countries, freeOver, active] of [
      ['Standard', 4.9, ['ES', 'PT'], 50, true],
      ['Express', 9.5, [], null, false],
    ] as const) {
      const method = await api('POST', '/shipping-methods', owner, { name, price, countries, freeOver, active })
      expect(method.status).toBe(201)
      shipping.push(method.body.id)
    }
    const pages: Array<[string, string]> = [
      ['overview', '/'],
      ['products', '/products'],
      ['product-create', '/products/create'],
      ['product-edit', `/products/${product.id}`],
      ['categories', '/categories'],
      ['orders', '/orders'],
      ['order', `/orders/${orderId}/show`],
      ['users', '/users'],
      ['user-create', '/users/create'],
      ['webhook-create', '/webhooks/create'],
      ['shipping-methods', '/shipping-methods'],
      ['shipping-method-create', '/shipping-methods/create'],
    ]
    const problems: string[] = []
    for (const viewport of [DESKTOP, PHONE]) {
      const { context, page } = await openPage(browser, shop, viewport)
      await page.goto('/admin/')
      await page.getByLabel('Email').waitFor()
      problems.push(...(await seriousViolations(page)).map((violation) => `sign-in @${viewport.width}: ${violation}`))
      if (viewport === DESKTOP) await screenshot(page, 'sign-in')
      await signIn(page)
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
      for (const [name, hash] of pages) {
        await go(page, hash)
        await page.locator('main, [role=main]').first().waitFor()
        await page
          .locator('.MuiLinearProgress-root, .MuiCircularProgress-root')
          .first()
          .waitFor({ state: 'detached', timeout: 5_000 })
          .catch(() => {})
        problems.push(...(await seriousViolations(page)).map((violation) => `${name} @${viewport.width}: ${violation}`))
        if (viewport === DESKTOP) await screenshot(page, name)
        // On a phone the lists are lists of items, not tables wider than the screen.
        if (viewport === PHONE && name === 'products') {
          await page.getByRole('link', { name: /Screenshot mug/ }).waitFor()
          expect(await page.locator('main table').count()).toBe(0)
        }
      }
      await context.close()
    }
    for (const id of shipping)
      expect((await shop.app.inject({ method: 'DELETE', url: `/shipping-methods/${id}`, headers: bearer(owner) })).statusCode).toBe(200)
    expect(problems).toEqual([])
  }, 240_000)
})
