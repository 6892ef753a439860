import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hasChromium, launchBrowser, openPage, PHONE, type Shop, signIn, startShop } from '../helpers/browser.js'
import { bearer, makeUser } from '../helpers/factories.js'

/** The elements wider than the page, named: what makes a phone scroll sideways. */
async function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth
    const wide = (element: Element) => element.getBoundingClientRect().right > width + 0.5
    // The innermost ones: those with no child as wide.
    return [...document.querySelectorAll('body *')]
      .filter((element) => wide(element) && ![...element.children].some(wide))
      .slice(0, 8)
      .map((element) => {
        const box = element.getBoundingClientRect()
        return `${element.tagName.toLowerCase()}.${[...element.classList].slice(0, 3).join('.')} (${Math.round(box.left)}–${Math.round(box.right)} px)`
      })
  })
}

/** Whether the page scrolls sideways at its width: the page's scrollable width against the viewport's. */
const scrollWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth)

// Pages that must fit a phone (390 px) without scrolling sideways.
describe.skipIf(!hasChromium)('the dashboard at phone width (390 px)', () => {
  let shop: Shop
  let browser: Browser

  beforeAll(async () => {
    ;[shop, browser] = await Promise.all([startShop({ WEBHOOKS_ALLOW_PRIVATE: 'true' }), launchBrowser()])
  })
  afterAll(async () => {
    await browser?.close()
    await shop?.close()
  })

  it('shows a webhook’s page, its deliveries included, within 390 px', async () => {
    const admin = await makeUser(shop.app, 'admin')
    const created = await shop.app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: bearer(admin),
      payload: {
        url: 'http://127.0.0.1:9/a-rather-long-path/for-the-shop/webhooks/receiver',
        events: ['order.created', 'stock.low'],
        description: 'Warehouse',
      },
    })
    expect(created.statusCode).toBe(201)
    const webhook = created.json() as { id: number }
    // A delivery that failed, so that the deliveries' table has a row (and its Retry button).
    const now = new Date().toISOString()
    await shop.app.db
      .insertInto('outbox')
      .values({
        id: '0f8fad5b-d9cb-469f-a165-70867728950e',
        webhook_id: webhook.id,
        channel: 'webhook',
        event: 'order.created',
        payload: '{}',
        status: 'failed',
        attempts: 8,
        next_attempt_at: now,
        locked_until: null,
        last_status_code: null,
        last_error: 'connect ECONNREFUSED 127.0.0.1:9 (the receiver was not listening when the shop called it)',
        created_at: now,
        delivered_at: null,
      })
      .execute()

    const { context, page } = await openPage(browser, shop, PHONE)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto(`/admin/#/webhooks/${webhook.id}`)
    await page.getByRole('textbox', { name: /^URL/ }).waitFor()
    await page.getByRole('table', { name: 'Deliveries' }).getByRole('button', { name: /Retry/ }).waitFor()
    expect(await scrollWidth(page), (await overflowing(page)).join('\n')).toBeLessThanOrEqual(PHONE.width)
    await context.close()
  })
})
