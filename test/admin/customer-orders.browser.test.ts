import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { DESKTOP, hasChromium, launchBrowser, openPage, PHONE, type Shop, signIn, startShop } from '../helpers/browser.js'

// A customer's orders: the Users page links each user to the orders list filtered by them (GET /orders?userId=).
describe.skipIf(!hasChromium)('a customer’s orders, from the Users page', () => {
  let shop: Shop
  let browser: Browser
  let ana: TestUser
  let bo: TestUser
  const orders: Record<string, number[]> = { ana: [], bo: [] }

  async function order(customer: TestUser): Promise<number> {
    const product = await makeProduct(shop.app, { name: `Mug ${Math.random().toString(36).slice(2, 7)}`, priceCents: 900, stock: 5 })
    const add = await shop.app.inject({ method: 'POST', url: '/cart/add', headers: bearer(customer), payload: { productId: product.id, quantity: 1 } })
    expect(add.statusCode).toBe(201)
    const placed = await shop.app.inject({ method: 'POST', url: '/orders', headers: bearer(customer) })
    expect(placed.statusCode).toBe(201)
    return (placed.json() as { id: number }).id
  }

  beforeAll(async () => {
    ;[shop, browser] = await Promise.all([startShop(), launchBrowser()])
    ana = await makeUser(shop.app, 'customer', 'Ana Buyer')
    bo = await makeUser(shop.app, 'customer', 'Bo Buyer')
    for (let i = 0; i < 2; i++) orders.ana!.push(await order(ana))
    orders.bo!.push(await order(bo))
  })
  afterAll(async () => {
    await browser?.close()
    await shop?.close()
  })

  it('on a desktop: the row’s "Orders" lists that customer’s orders only, and "Every customer" lists them all again (slow: a sign-in and four pages in a new browser context)', async () => {
    const { context, page } = await openPage(browser, shop, DESKTOP)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto('/admin/#/users')
    await page
      .getByRole('row', { name: /Ana Buyer/ })
      .getByRole('link', { name: `Orders of ${ana.email}` })
      .click()
    await page.waitForURL(/#\/orders\?/)
    await page.getByText(`Customer: Ana Buyer <${ana.email}>`).waitFor()
    const rows = page.getByRole('table', { name: 'Orders' }).locator('tbody tr')
    await expect.poll(() => rows.count()).toBe(2)
    expect(await rows.allTextContents()).toEqual([expect.stringContaining(`#${orders.ana![1]}`), expect.stringContaining(`#${orders.ana![0]}`)])
    expect(await page.locator('.MuiTablePagination-displayedRows').textContent()).toBe('1-2 of 2')

    await page.getByRole('button', { name: 'Every customer' }).click()
    await expect.poll(() => rows.count()).toBe(3)
    expect(page.url()).not.toContain('userId')
    await context.close()
  })

  it('on a phone: the user’s page links to their orders', async () => {
    const { context, page } = await openPage(browser, shop, PHONE)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto(`/admin/#/users/${bo.id}`)
    await page.getByRole('link', { name: `Orders of ${bo.email}` }).click()
    await page.getByText(`Customer: Bo Buyer <${bo.email}>`).waitFor()
    await page.getByRole('link', { name: new RegExp(`#${orders.bo![0]}\\b`) }).waitFor()
    expect(await page.getByRole('link', { name: new RegExp(`#(${orders.ana!.join('|')})\\b`) }).count()).toBe(0)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    await context.close()
  })
})
