import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { makeProduct, type TestProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { DESKTOP, hasChromium, openPage, PHONE, screenshot, signIn, useShopAndBrowser, violations, sticksOut } from '../helpers/browser.js'
import { stockOf } from '../helpers/shop.js'

// Refunds by line on the order's page: a paid order of 2 mugs (21 % tax included); the form asks the API for a
// preview and shows its amount before the refund is confirmed; a refused preview says the API's message; the
// refund made shows in the list of refunds and the payment; axe at 1440 px and 390 px, and the page fits a phone.
describe.skipIf(!hasChromium)('refunds by line on the order page', () => {
  const used = useShopAndBrowser()
  let owner: TestUser
  let mug: TestProduct
  let orderId: number
  let lineName: string

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
    const buyer = await makeUser(app, 'customer', 'Rita Refund')
    expect(
      (await app.inject({ method: 'POST', url: '/tax-rates', headers: bearer(owner), payload: { country: 'ES', taxClass: 'standard', rate: 21 } })).statusCode,
    ).toBe(201)
    mug = await makeProduct(app, { name: 'Stoneware mug', priceCents: 1999, stock: 10 })
    lineName = 'Stoneware mug'
    expect((await app.inject({ method: 'POST', url: '/cart/add', headers: bearer(buyer), payload: { productId: mug.id, quantity: 2 } })).statusCode).toBe(201)
    const placed = await app.inject({ method: 'POST', url: '/orders', headers: bearer(buyer) })
    expect(placed.statusCode).toBe(201)
    orderId = placed.json().id
    expect((await app.inject({ method: 'PATCH', url: `/orders/${orderId}/status`, headers: bearer(owner), payload: { status: 'paid' } })).statusCode).toBe(200)
  })

  it('on a desktop: preview shows the amount before confirming; a refused preview shows the API’s message; the refund is listed', async () => {
    const { context, page } = await openPage(used.browser, used.shop, DESKTOP)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto(`/admin/#/orders/${orderId}/show`)
    const units = page.getByRole('spinbutton', { name: `Units to refund: ${lineName}` })
    await units.waitFor()
    expect(await page.getByText('No refunds yet.').count()).toBe(1)
    // Nothing to refund until a preview: the button waits for one.
    expect(await page.getByRole('button', { name: /^Refund/ }).isDisabled()).toBe(true)

    await units.fill('3')
    await page.getByRole('button', { name: 'Preview refund' }).click()
    const refused = page.getByRole('alert').filter({ hasText: 'Cantidad superior' })
    await refused.waitFor()
    expect(await refused.textContent()).toContain(`Cantidad superior a la reembolsable para el artículo`)

    await units.fill('1')
    await page.getByRole('checkbox', { name: 'Put back in stock' }).check()
    await page.getByRole('button', { name: 'Preview refund' }).click()
    const preview = page.getByRole('status', { name: 'Refund preview' })
    await preview.waitFor()
    // One mug of 19.99 with 21 % included: 19.99, tax 3.47.
    expect(await preview.textContent()).toBe(`Refund of ${shown(19.99)} EUR (tax ${shown(3.47)}). Refundable now: ${shown(39.98)}.`)
    await settled(page)
    expect(await violations(page)).toEqual([])
    await screenshot(page, 'order-refund-preview')

    await page.getByRole('button', { name: `Refund ${shown(19.99)}` }).click()
    const dialog = page.getByRole('dialog')
    await dialog.waitFor()
    expect(await dialog.textContent()).toContain(`Refund ${shown(19.99)} EUR?`)
    await dialog.getByRole('button', { name: 'Refund' }).click()

    const made = page.getByRole('table', { name: 'Refunds made' }).locator('tbody tr')
    await expect.poll(() => made.count(), { timeout: 10_000 }).toBe(1)
    const cells = await made.first().locator('td').allTextContents()
    expect(cells.slice(1)).toEqual([shown(19.99), `1 × ${lineName} (restocked)`, shown(0), '', 'Shop Owner'])
    expect(await page.getByText(`Refunded ${shown(19.99)} of ${shown(39.98)} EUR (payment partially refunded).`).count()).toBe(1)
    expect(await stockOf(used.shop.app, mug.id)).toBe(9)
    const order = (await used.shop.app.inject({ url: `/orders/${orderId}`, headers: bearer(owner) })).json()
    expect(order.refunds).toHaveLength(1)
    expect(order.payment).toMatchObject({ status: 'partially_refunded', refundedAmount: 19.99 })
    await settled(page)
    expect(await violations(page)).toEqual([])
    await context.close()
  })

  it('on a phone: the refund form and the refunds pass axe and fit 390 px', async () => {
    const { context, page } = await openPage(used.browser, used.shop, PHONE)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto(`/admin/#/orders/${orderId}/show`)
    await page.getByRole('spinbutton', { name: `Units to refund: ${lineName}` }).fill('1')
    await page.getByRole('button', { name: 'Preview refund' }).click()
    await page.getByRole('status', { name: 'Refund preview' }).waitFor()
    await settled(page)
    expect(await violations(page)).toEqual([])
    expect(await sticksOut(page)).toEqual([])
    await context.close()
  })
})
