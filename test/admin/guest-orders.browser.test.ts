import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { DESKTOP, hasChromium, openPage, PHONE, screenshot, signIn, useShopAndBrowser, violations, sticksOut } from '../helpers/browser.js'

interface OrderAnswer {
  id: number
  guest: boolean
  email: string | null
  subtotal: number
  discountTotal: number
  shippingTotal: number
  taxTotal: number
  total: number
  discount: { code: string; type: string; value: number | null } | null
  taxLines: { name: string; taxClass: string; rate: number; base: number; amount: number }[]
  items: { sku: string | null; variantTitle: string | null; quantity: number; price: number; discount: number; tax: number; total: number }[]
}

// Guest orders on the Orders pages: a guest order (placed with a cart token) and an account order with a discount code
// and a tax rate, both placed through the API; the list's Guest and e-mail filters, "Guest" and the e-mail where the
// customer is shown, the order's breakdown (subtotal, the code's discount, shipping, taxes by tax line, total; per
// line SKU, variant, discount, tax and total) as the API answered it, and axe at 1440 px and 390 px.
describe.skipIf(!hasChromium)('guest orders and the order breakdown on the Orders pages', () => {
  const used = useShopAndBrowser()
  // The cart keeps the e-mail in lower case.
  const guestEmail = 'lola.guest@example.test'
  let owner: TestUser
  let ana: TestUser
  let guestOrder: OrderAnswer
  let accountOrder: OrderAnswer

  // The list reads again after a filter's debounce; on a busy machine that takes more than expect.poll's 1 s.
  const patient = { timeout: 10_000 }
  /** An amount as the page writes it (en-US: 1,234.50). */
  const shown = (amount: number) => amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })
  const settled = async (target: Page) =>
    target
      .locator('.MuiLinearProgress-root, .MuiCircularProgress-root')
      .first()
      .waitFor({ state: 'detached', timeout: 5_000 })
      .catch(() => {})

  beforeAll(async () => {
    const { app } = used.shop
    owner = await makeUser(app, 'admin')
    ana = await makeUser(app, 'customer', 'Ana Account')
    const asOwner = (method: 'POST' | 'PATCH', url: string, payload: object) => app.inject({ method, url, headers: bearer(owner), payload })
    expect((await asOwner('POST', '/tax-rates', { country: 'ES', taxClass: 'standard', rate: 21 })).statusCode).toBe(201)
    expect((await asOwner('POST', '/discount-codes', { code: 'GUESTTEST10', type: 'percent', value: 10 })).statusCode).toBe(201)
    // A shirt of one variant, size M, with its SKU: the lines carry both.
    const shirt = await makeProduct(app, { name: 'Linen shirt', priceCents: 1999, stock: 10 })
    expect((await asOwner('POST', `/products/${shirt.id}/options`, { name: 'Size', defaultValue: 'M' })).statusCode).toBe(201)
    expect((await asOwner('PATCH', `/products/${shirt.id}`, { sku: 'SHIRT-M' })).statusCode).toBe(200)

    // The guest: a cart token, a line, the e-mail, the order.
    const cart = await app.inject({ method: 'POST', url: '/carts' })
    expect(cart.statusCode).toBe(201)
    const token = { 'x-cart-token': (cart.json() as { cartToken: string }).cartToken }
    expect(token['x-cart-token']).toMatch(/^ct_/)
    expect((await app.inject({ method: 'POST', url: '/cart/add', headers: token, payload: { productId: shirt.id, quantity: 1 } })).statusCode).toBe(201)
    expect((await app.inject({ method: 'PATCH', url: '/cart', headers: token, payload: { email: 'Lola.Guest@example.test' } })).statusCode).toBe(200)
    const guestPlaced = await app.inject({ method: 'POST', url: '/orders', headers: token })
    expect(guestPlaced.statusCode).toBe(201)
    guestOrder = guestPlaced.json()
    expect(guestOrder).toMatchObject({ guest: true, email: guestEmail })

    // The account order: two shirts, the code, 21 % tax included in the price.
    expect((await app.inject({ method: 'POST', url: '/cart/add', headers: bearer(ana), payload: { productId: shirt.id, quantity: 2 } })).statusCode).toBe(201)
    expect((await app.inject({ method: 'POST', url: '/cart/discount', headers: bearer(ana), payload: { code: 'guesttest10' } })).statusCode).toBe(200)
    const accountPlaced = await app.inject({ method: 'POST', url: '/orders', headers: bearer(ana) })
    expect(accountPlaced.statusCode).toBe(201)
    accountOrder = accountPlaced.json()
    expect(accountOrder).toMatchObject({ guest: false, discount: { code: 'GUESTTEST10', type: 'percent', value: 10 } })
    expect(accountOrder.discountTotal).toBeGreaterThan(0)
    expect(accountOrder.taxLines).toHaveLength(1)
    expect(accountOrder.items[0]).toMatchObject({ sku: 'SHIRT-M', variantTitle: 'M', quantity: 2 })
  })

  it('on a desktop: the Guest filter lists the guest order only, with "Guest" and its e-mail; the e-mail filter finds it; the pages show the guest and the breakdown', async () => {
    const { context, page } = await openPage(used.browser, used.shop, DESKTOP)
    const listCalls: string[] = []
    page.on('request', (request) => {
      const url = new URL(request.url())
      if (url.pathname === '/orders') listCalls.push(url.search)
    })
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto('/admin/#/orders')
    const rows = page.getByRole('table', { name: 'Orders' }).locator('tbody tr')
    await expect.poll(() => rows.count(), patient).toBe(2)

    await page.getByRole('combobox', { name: 'Guest' }).click()
    await page.getByRole('option', { name: 'Guests' }).click()
    await expect.poll(() => rows.count(), patient).toBe(1)
    const guestRow = await rows.first().textContent()
    expect(guestRow).toContain(`#${guestOrder.id}`)
    expect(guestRow).toContain('Guest')
    expect(guestRow).toContain(guestEmail)
    expect(listCalls.at(-1)).toContain('guest=true')
    await settled(page)
    expect(await violations(page)).toEqual([])

    await page.getByRole('combobox', { name: 'Guest' }).click()
    await page.getByRole('option', { name: 'Accounts' }).click()
    await expect.poll(async () => (await rows.allTextContents()).join('|'), patient).toContain(`#${accountOrder.id}`)
    expect(await rows.count()).toBe(1)
    expect(await rows.first().textContent()).toContain(`Ana Account <${ana.email}>`)

    // The e-mail filter, in other case, with every order again: the guest's only.
    await page.getByRole('combobox', { name: 'Guest' }).click()
    await page.getByRole('option').filter({ hasText: /^All$/ }).click()
    await expect.poll(() => rows.count(), patient).toBe(2)
    await page.getByRole('textbox', { name: 'E-mail' }).fill('LOLA.guest@example.test')
    await expect.poll(() => rows.count(), patient).toBe(1)
    expect(await rows.first().textContent()).toContain(`#${guestOrder.id}`)
    expect(listCalls.at(-1)).toContain(`email=${encodeURIComponent('LOLA.guest@example.test')}`)

    // The guest order's page: "Guest" and the e-mail instead of a customer.
    await rows.first().click()
    await page.waitForURL(new RegExp(`#/orders/${guestOrder.id}/show`))
    const customerLine = page.getByText(/^Customer:/)
    await customerLine.waitFor()
    expect(await customerLine.textContent()).toBe(`Customer: Guest${guestEmail} (ordered without an account)`)
    await settled(page)
    expect(await violations(page)).toEqual([])

    // The account order's page: the breakdown, each amount as the API answered it.
    await page.goto(`/admin/#/orders/${accountOrder.id}/show`)
    const totals = page.getByRole('table', { name: 'Order totals' })
    await totals.waitFor()
    const amountOf = async (label: string | RegExp) => (await totals.getByRole('row', { name: label }).locator('td').textContent())?.trim()
    expect(await amountOf(/^Subtotal/)).toBe(shown(accountOrder.subtotal))
    expect(await amountOf(/^Discount \(GUESTTEST10, 10% off\)/)).toBe(`−${shown(accountOrder.discountTotal)}`)
    expect(await amountOf(/^Shipping/)).toBe(shown(accountOrder.shippingTotal))
    const [taxLine] = accountOrder.taxLines
    expect(await amountOf(`Tax included: ${taxLine!.name} (standard, 21%) on ${shown(taxLine!.base)}`)).toBe(shown(taxLine!.amount))
    expect(await amountOf(/^Total/)).toBe(shown(accountOrder.total))
    expect(await totals.getByRole('row').count()).toBe(5)

    const line = accountOrder.items[0]!
    const cells = await page.getByRole('table', { name: 'Order lines' }).locator('tbody tr').first().locator('td').allTextContents()
    expect(cells).toEqual([
      'Linen shirtM · SKU SHIRT-M',
      '2',
      shown(line.price),
      shown(line.price * 2),
      `−${shown(line.discount)}`,
      `${shown(line.tax)} (21%)`,
      shown(line.total),
    ])
    expect(await page.getByText(`Customer: Ana Account <${ana.email}>`).count()).toBe(1)
    await settled(page)
    await screenshot(page, 'order-breakdown')
    expect(await violations(page)).toEqual([])
    await context.close()
  })

  it('on a phone: the guest order reads "Guest" and its e-mail, and the list and both orders’ pages pass axe and fit 390 px', async () => {
    const { context, page } = await openPage(used.browser, used.shop, PHONE)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto(`/admin/#/orders?filter=${encodeURIComponent(JSON.stringify({ guest: 'true' }))}`)
    const guestItem = page.getByRole('link', { name: new RegExp(`#${guestOrder.id}\\b`) })
    await guestItem.waitFor()
    expect(await guestItem.textContent()).toContain(`Guest${guestEmail}`)
    expect(await page.getByRole('link', { name: new RegExp(`#${accountOrder.id}\\b`) }).count()).toBe(0)
    await settled(page)
    expect(await violations(page)).toEqual([])
    expect(await sticksOut(page)).toEqual([])

    for (const order of [guestOrder, accountOrder]) {
      await page.goto(`/admin/#/orders/${order.id}/show`)
      await page.getByRole('table', { name: 'Order totals' }).waitFor()
      await settled(page)
      expect(await violations(page)).toEqual([])
      expect(await sticksOut(page)).toEqual([])
    }
    await context.close()
  })
})
