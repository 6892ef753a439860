import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { DESKTOP, hasChromium, launchBrowser, openPage, PHONE, type Shop, signIn, startShop } from '../helpers/browser.js'

interface Method {
  id: number
  name: string
  price: number
  countries: string[]
  freeOver: number | null
  active: boolean
}

// The Shipping methods page: list, create, edit (name, price, countries, free-shipping threshold), activate and
// deactivate, each checked through the API (GET /shipping-methods?all=true).
describe.skipIf(!hasChromium)('the Shipping methods page', () => {
  let shop: Shop
  let browser: Browser
  let owner: TestUser

  const methods = async (): Promise<Method[]> => {
    const response = await shop.app.inject({ url: '/shipping-methods?all=true', headers: bearer(owner) })
    expect(response.statusCode).toBe(200)
    return response.json()
  }
  const named = async (name: string) => (await methods()).find((method) => method.name === name)

  async function signedIn(viewport: typeof DESKTOP): Promise<{ page: Page; close: () => Promise<void> }> {
    const { context, page } = await openPage(browser, shop, viewport)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    return { page, close: () => context.close() }
  }

  /** Picks a country in the form's countries field by typing part of its name. */
  async function pickCountry(page: Page, typed: string, option: string): Promise<void> {
    await page.getByRole('combobox', { name: 'Countries' }).fill(typed)
    await page.getByRole('option', { name: option }).click()
  }

  beforeAll(async () => {
    ;[shop, browser] = await Promise.all([startShop(), launchBrowser()])
    owner = await makeUser(shop.app, 'admin')
  })
  afterAll(async () => {
    await browser?.close()
    await shop?.close()
  })

  it('creates a method, edits its countries and free-shipping threshold, and deactivates it', async () => {
    const { page, close } = await signedIn(DESKTOP)
    await page.getByRole('menuitem', { name: 'Shipping methods' }).click()
    await page.waitForURL(/#\/shipping-methods$/)
    await page.getByRole('link', { name: 'Create' }).click()
    await page.getByRole('textbox', { name: /^Name/ }).fill('Courier')
    await page.getByLabel('Price').fill('6.5')
    await pickCountry(page, 'Spa', 'Spain (ES)')
    await pickCountry(page, 'Portu', 'Portugal (PT)')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('row', { name: /Courier/ }).waitFor()
    const created = await named('Courier')
    expect(created).toMatchObject({ price: 6.5, countries: ['ES', 'PT'], freeOver: null, active: true })
    const row = page.getByRole('row', { name: /Courier/ })
    expect(await row.textContent()).toContain('Spain, Portugal')

    // Countries: Portugal out, France in; free from 50.
    await row.getByRole('link', { name: 'Edit' }).click()
    await page.waitForURL(new RegExp(`#/shipping-methods/${created!.id}$`))
    await page.getByRole('button', { name: 'Portugal (PT)' }).focus()
    await page.keyboard.press('Backspace')
    await pickCountry(page, 'Fra', 'France (FR)')
    await page.getByLabel('Free shipping from').fill('50')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/#\/shipping-methods$/)
    await expect.poll(async () => (await named('Courier'))?.freeOver).toBe(50)
    expect(await named('Courier')).toMatchObject({ countries: ['ES', 'FR'], price: 6.5, active: true })
    await page
      .getByRole('row', { name: /Courier/ })
      .getByText('Free from 50.00')
      .waitFor()

    // Off from the list, then on again.
    await page
      .getByRole('row', { name: /Courier/ })
      .getByRole('button', { name: 'Deactivate' })
      .click()
    await expect.poll(async () => (await named('Courier'))?.active).toBe(false)
    await page
      .getByRole('row', { name: /Courier/ })
      .getByText('Inactive')
      .waitFor()
    // Customers no longer see it; admins still do.
    const forCustomers = await shop.app.inject({ url: '/shipping-methods' })
    expect((forCustomers.json() as Method[]).map((method) => method.name)).not.toContain('Courier')
    await page
      .getByRole('row', { name: /Courier/ })
      .getByRole('button', { name: 'Activate' })
      .click()
    await expect.poll(async () => (await named('Courier'))?.active).toBe(true)
    await close()
  })

  it('shows the API’s message beside the field, and fits a phone', async () => {
    const { page, close } = await signedIn(PHONE)
    await page.goto('/admin/#/shipping-methods/create')
    await page.getByRole('textbox', { name: /^Name/ }).fill('x'.repeat(101))
    await page.getByLabel('Price').fill('3')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.locator('form').getByText('name must be shorter than or equal to 100 characters').waitFor()
    expect(await named('x'.repeat(101))).toBeUndefined()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)

    await page.getByRole('textbox', { name: /^Name/ }).fill('Pickup point')
    // On a phone the notice of the refusal lies over the Save button until it is closed (Escape) or times out.
    await page.keyboard.press('Escape')
    await page.getByRole('alert').filter({ hasText: 'name must be shorter' }).waitFor({ state: 'detached' })
    await page.getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/#\/shipping-methods$/)
    await page.getByRole('link', { name: /Pickup point/ }).waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    expect(await named('Pickup point')).toMatchObject({ price: 3, countries: [], freeOver: null, active: true })
    await close()
  })
})
