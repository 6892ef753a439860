import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { makeUser } from '../helpers/factories.js'
import { DESKTOP, hasChromium, openPage, PHONE, signIn, useShopAndBrowser } from '../helpers/browser.js'

/**
 * The Users page pages through GET /auth/users with its X-Total-Count, as the other lists do: the total is known
 * from the first page. (Before, the route sent none, and the dashboard asked for one row more than a page to
 * know whether there was a next one: "1-25 of more than 25" until the last page.)
 */
describe.skipIf(!hasChromium)('the Users page’s paging', () => {
  const env = useShopAndBrowser()

  /** The pagination's "1-3 of 3", as shown. */
  const range = (page: Page) => page.locator('.MuiTablePagination-displayedRows')
  const next = (page: Page) => page.getByRole('button', { name: /next page/i })
  /** Whether a next page is offered: a desktop shows no page buttons for one page, a phone a disabled arrow. */
  const nextOffered = async (page: Page) => (await next(page).count()) > 0 && (await next(page).isEnabled())

  async function openUsers(viewport: typeof DESKTOP): Promise<{ page: Page; close: () => Promise<void> }> {
    const { context, page } = await openPage(env.browser, env.shop, viewport)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto('/admin/#/users')
    return { page, close: () => context.close() }
  }

  it('says "1-3 of 3" for 3 users, with no next page, on a desktop and on a phone', async () => {
    await makeUser(env.shop.app, 'customer', 'Second User')
    await makeUser(env.shop.app, 'customer', 'Third User')
    for (const viewport of [DESKTOP, PHONE]) {
      const { page, close } = await openUsers(viewport)
      await page.getByText('Third User').waitFor()
      await expect.poll(() => range(page).textContent()).toBe('1-3 of 3')
      expect(await nextOffered(page), `next page at ${viewport.width} px`).toBe(false)
      await close()
    }
  })

  it('goes to the next page and back on a phone and on a desktop, with the total from the first page', async () => {
    for (let i = 0; i < 25; i += 1) await makeUser(env.shop.app, 'customer', `Paged User ${String(i).padStart(2, '0')}`)
    // 28 users: 25 on the first page, 3 on the second.
    for (const viewport of [PHONE, DESKTOP]) {
      const { page, close } = await openUsers(viewport)
      await page.getByText('Paged User 21').waitFor()
      await expect.poll(() => range(page).textContent()).toBe('1-25 of 28')
      expect(await nextOffered(page), `next page at ${viewport.width} px`).toBe(true)
      await next(page).click()
      await page.getByText('Paged User 24').waitFor()
      await expect.poll(() => range(page).textContent()).toBe('26-28 of 28')
      expect(page.url()).toContain('page=2')
      expect(await nextOffered(page), `next page at ${viewport.width} px`).toBe(false)
      await page.getByRole('button', { name: /previous page/i }).click()
      await page.getByText('Paged User 21').waitFor()
      await expect.poll(() => range(page).textContent()).toBe('1-25 of 28')
      await close()
    }
  })
})
