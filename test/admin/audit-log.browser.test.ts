import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { DESKTOP, hasChromium, openPage, PHONE, signIn, sticksOut, useShopAndBrowser, violations } from '../helpers/browser.js'

// The Audit log page: entries made through the API listed newest first, filtered by action and actor, one expanded to
// its before and after; on a phone, cards with the change behind a disclosure; axe at 1440 px and 390 px.
describe.skipIf(!hasChromium)('the Audit log page', () => {
  const used = useShopAndBrowser()
  let staff: TestUser

  async function open(viewport: typeof DESKTOP): Promise<{ page: Page; close: () => Promise<void> }> {
    const { context, page } = await openPage(used.browser, used.shop, viewport)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto('/admin/#/audit-log')
    return { page, close: () => context.close() }
  }

  beforeAll(async () => {
    staff = await makeUser(used.shop.app, 'admin', 'Lucía Staff')
    const product = await makeProduct(used.shop.app, { name: 'Taza azul' })
    const changed = await used.shop.app.inject({ method: 'PATCH', url: `/products/${product.id}`, headers: bearer(staff), payload: { name: 'Taza roja' } })
    expect(changed.statusCode).toBe(200)
    const created = await used.shop.app.inject({ method: 'POST', url: '/categories', headers: bearer(staff), payload: { name: 'Vajilla' } })
    expect(created.statusCode).toBe(201)
  })

  it('lists the entries newest first, filters by action, and shows a change’s before and after (1440 px)', async () => {
    const { page, close } = await open(DESKTOP)
    try {
      const rows = page.getByRole('row', { name: /Lucía Staff/ })
      await rows.first().waitFor()
      expect(await rows.count()).toBe(2)
      await expect.poll(async () => (await rows.first().textContent()) ?? '').toContain('category.create')
      expect(await violations(page)).toEqual([])

      await page.getByRole('textbox', { name: 'Action' }).fill('product.update')
      await page.getByRole('row', { name: /category\.create/ }).waitFor({ state: 'detached' })
      const update = page.getByRole('row', { name: /product\.update/ })
      await update.click()
      await page.getByLabel('Before', { exact: true }).waitFor()
      expect(await page.getByLabel('Before', { exact: true }).textContent()).toContain('"name": "Taza azul"')
      expect(await page.getByLabel('After', { exact: true }).textContent()).toContain('"name": "Taza roja"')
      expect(await violations(page)).toEqual([])
    } finally {
      await close()
    }
  })

  it('shows cards with the change behind a disclosure on a phone (390 px), nothing sticking out', async () => {
    const { page, close } = await open(PHONE)
    try {
      const card = page.getByRole('listitem').filter({ hasText: 'product.update' })
      await card.waitFor()
      await card.getByText('Before and after').click()
      expect(await card.getByLabel('After', { exact: true }).textContent()).toContain('"name": "Taza roja"')
      expect(await sticksOut(page)).toEqual([])
      expect(await violations(page)).toEqual([])
    } finally {
      await close()
    }
  })
})
