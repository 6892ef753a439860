import type { Locator, Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { DESKTOP, hasChromium, openPage, PHONE, signIn, useShopAndBrowser, violations } from '../helpers/browser.js'

interface TaxClass {
  id: number
  code: string
  name: string
}
interface TaxRate {
  id: number
  country: string
  region: string | null
  taxClass: string
  rate: number
  name: string
}

// The Tax rates and Tax classes pages: rates created, filtered by country and class, changed and deleted; a
// duplicate rate's 409 beside the region; classes created (a duplicate code's 409 beside the code), renamed, and one
// in use kept; axe at 1440 px and 390 px. Every change is checked through the API.
describe.skipIf(!hasChromium)('the Tax rates and Tax classes pages', () => {
  const used = useShopAndBrowser()
  let owner: TestUser
  let page: Page

  const read = async <T>(url: string): Promise<T> => {
    const response = await used.shop.app.inject({ url, headers: bearer(owner) })
    expect(response.statusCode).toBe(200)
    return response.json()
  }
  const rates = () => read<TaxRate[]>('/tax-rates')
  const classes = () => read<TaxClass[]>('/tax-classes')
  const go = async (target: Page, hash: string) => {
    const url = `/admin/#${hash}`
    // Loaded afresh, as a bookmark opens it.
    await target.goto(url)
    await target.reload()
    await target.locator('main, [role=main]').first().waitFor()
  }
  const besideField = async (input: Locator): Promise<string> => {
    const ids = (await input.getAttribute('aria-describedby'))?.split(/\s+/).filter(Boolean) ?? []
    if (ids.length === 0) return ''
    return (
      await input
        .page()
        .locator(ids.map((id) => `[id="${id}"]`).join(', '))
        .allTextContents()
    ).join(' ')
  }
  const settled = async (target: Page) =>
    target
      .locator('.MuiLinearProgress-root, .MuiCircularProgress-root')
      .first()
      .waitFor({ state: 'detached', timeout: 5_000 })
      .catch(() => {})
  /** Fills the rate form: the country picked by name, the class by its name. */
  async function fillRate(target: Page, rate: { country: string; countryOption: string; region?: string; taxClass?: string; rate: string }) {
    // The form's own field (a list's filter of the same name may still be on its way out).
    await target.getByRole('spinbutton', { name: /^Rate/ }).waitFor()
    await target.locator('form').getByRole('combobox', { name: 'Country' }).fill(rate.country)
    await target.getByRole('option', { name: rate.countryOption }).click()
    if (rate.region !== undefined) await target.getByRole('textbox', { name: 'Region' }).fill(rate.region)
    if (rate.taxClass !== undefined) {
      await target.getByRole('combobox', { name: /^Tax class/ }).click()
      await target.getByRole('option', { name: rate.taxClass }).click()
    }
    await target.getByRole('spinbutton', { name: /^Rate/ }).fill(rate.rate)
  }

  beforeAll(async () => {
    owner = await makeUser(used.shop.app, 'admin')
    page = (await openPage(used.browser, used.shop, DESKTOP)).page
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
  })

  it('creates a tax class, shows a duplicate code’s 409 beside the code, renames it, and keeps one in use', async () => {
    await page.getByRole('menuitem', { name: 'Tax classes' }).click()
    await page.waitForURL(/#\/tax-classes$/)
    await page.getByRole('row', { name: /standard/ }).waitFor()
    await page.getByRole('link', { name: 'Create' }).click()
    await page.getByRole('textbox', { name: /^Code/ }).fill('luxury')
    await page.getByRole('textbox', { name: /^Name/ }).fill('Lujo')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('row', { name: /luxury/ }).waitFor()
    expect((await classes()).find((taxClass) => taxClass.code === 'luxury')).toMatchObject({ name: 'Lujo' })

    await go(page, '/tax-classes/create')
    await page.getByRole('textbox', { name: /^Code/ }).fill('luxury')
    await page.getByRole('textbox', { name: /^Name/ }).fill('Otra')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.locator('form').getByText('La clase de impuesto ya existe').waitFor()
    expect(await besideField(page.getByRole('textbox', { name: /^Code/ }))).toContain('La clase de impuesto ya existe')
    expect((await classes()).filter((taxClass) => taxClass.code === 'luxury')).toHaveLength(1)
    expect(await violations(page)).toEqual([])

    const luxury = (await classes()).find((taxClass) => taxClass.code === 'luxury')!
    await go(page, `/tax-classes/${luxury.id}`)
    await page.getByText('A class keeps its code').waitFor()
    expect(await page.getByRole('textbox', { name: /^Code/ }).count()).toBe(0)
    await page.getByRole('textbox', { name: /^Name/ }).fill('Lujo alto')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/#\/tax-classes$/)
    await expect.poll(async () => (await classes()).find((taxClass) => taxClass.code === 'luxury')?.name).toBe('Lujo alto')

    // standard is always in use: the API's 409 as a notice, the class kept.
    await page
      .getByRole('row', { name: /standard/ })
      .getByRole('button', { name: 'Delete' })
      .click()
    await page.getByRole('button', { name: 'Confirm' }).click()
    await page.getByRole('alert').filter({ hasText: 'La clase de impuesto está en uso' }).waitFor()
    expect((await classes()).map((taxClass) => taxClass.code)).toContain('standard')
    expect(await violations(page)).toEqual([])
    await page.keyboard.press('Escape')
  })

  it('creates rates, shows a duplicate’s 409 beside the region, filters by country and class, edits and deletes one', async () => {
    await page.getByRole('menuitem', { name: 'Tax rates' }).click()
    await page.waitForURL(/#\/tax-rates$/)
    // The rates list itself (its Country filter), not the classes list on its way out with a Create link of its own.
    await page.getByRole('combobox', { name: 'Country' }).waitFor()
    await page.getByRole('link', { name: 'Create' }).click()
    await page.waitForURL(/#\/tax-rates\/create$/)
    // standard is the class a new rate starts with.
    await fillRate(page, { country: 'Spa', countryOption: 'Spain (ES)', rate: '21' })
    await page.getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/#\/tax-rates$/)
    await expect.poll(async () => (await rates()).length).toBe(1)
    expect((await rates())[0]).toMatchObject({ country: 'ES', region: null, taxClass: 'standard', rate: 21, name: 'IVA 21%' })

    // Create again from the list: the form starts empty.
    await page.getByRole('link', { name: 'Create' }).click()
    await page.waitForURL(/#\/tax-rates\/create$/)
    expect(await page.getByRole('spinbutton', { name: /^Rate/ }).inputValue()).toBe('')
    await fillRate(page, { country: 'Spa', countryOption: 'Spain (ES)', region: 'Canarias', rate: '7' })
    await page.getByRole('textbox', { name: 'Name' }).fill('IGIC 7%')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/#\/tax-rates$/)
    await go(page, '/tax-rates/create')
    await fillRate(page, { country: 'Fra', countryOption: 'France (FR)', taxClass: 'Reducido (reduced)', rate: '5.5' })
    await page.getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/#\/tax-rates$/)
    await expect.poll(async () => (await rates()).length).toBe(3)

    // The same country, region and class again: the API's 409 beside the region.
    await go(page, '/tax-rates/create')
    await fillRate(page, { country: 'Spa', countryOption: 'Spain (ES)', region: 'canarias', rate: '3' })
    await page.getByRole('button', { name: 'Save' }).click()
    await page.locator('form').getByText('Ya existe un tipo para ese país, región y clase').waitFor()
    expect(await besideField(page.getByRole('textbox', { name: 'Region' }))).toContain('Ya existe un tipo para ese país, región y clase')
    expect(await rates()).toHaveLength(3)
    expect(await violations(page)).toEqual([])

    // Filters: by country, then by class.
    await go(page, '/tax-rates')
    const table = page.getByRole('table', { name: 'Tax rates' })
    await expect.poll(() => table.getByRole('row').count()).toBe(4)
    await page.getByRole('combobox', { name: 'Country' }).fill('Fra')
    await page.getByRole('option', { name: 'France (FR)' }).click()
    await expect.poll(() => table.getByRole('row').count()).toBe(2)
    expect(await table.getByRole('row').nth(1).textContent()).toContain('5.5%')
    await page.getByRole('combobox', { name: 'Country' }).fill('Spa')
    await page.getByRole('option', { name: 'Spain (ES)' }).click()
    await expect.poll(() => table.getByRole('row').count()).toBe(3)
    await page.getByRole('combobox', { name: 'Tax class' }).click()
    await page.getByRole('option', { name: 'Reducido (reduced)' }).click()
    await expect.poll(() => table.getByRole('row').count()).toBe(0)
    await page.getByRole('combobox', { name: 'Tax class' }).click()
    await page.getByRole('option', { name: 'General (standard)' }).click()
    await expect.poll(() => table.getByRole('row').count()).toBe(3)
    expect(await violations(page)).toEqual([])

    // Edit the peninsula's rate: its default name follows the rate.
    await table.getByRole('row', { name: /Whole country/ }).click()
    await page.waitForURL(/#\/tax-rates\/\d+$/)
    await expect.poll(() => page.getByRole('spinbutton', { name: /^Rate/ }).inputValue()).toBe('21')
    await page.getByRole('spinbutton', { name: /^Rate/ }).fill('10')
    await page.getByRole('textbox', { name: 'Name' }).fill('')
    await page.getByRole('button', { name: 'Save' }).click()
    // Back on the list, which puts the filters chosen above into its address: with or without them, it is the list.
    await page.waitForURL(/#\/tax-rates(\?.*)?$/)
    await expect.poll(async () => (await rates()).find((rate) => rate.country === 'ES' && rate.region === null)?.rate).toBe(10)
    expect((await rates()).find((rate) => rate.country === 'ES' && rate.region === null)).toMatchObject({ name: 'IVA 10%', taxClass: 'standard' })

    // Delete Canarias after confirmation.
    await table
      .getByRole('row', { name: /Canarias/ })
      .getByRole('button', { name: 'Delete' })
      .click()
    await page.getByRole('button', { name: 'Confirm' }).click()
    await expect.poll(async () => (await rates()).map((rate) => rate.region ?? rate.country).sort()).toEqual(['ES', 'FR'])
  })

  it('fits a phone, with no axe violation on the lists and the forms', async () => {
    const { context, page: phone } = await openPage(used.browser, used.shop, PHONE)
    await signIn(phone)
    await phone.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    for (const [hash, ready] of [
      ['/tax-rates', phone.getByRole('link', { name: /France/ })],
      ['/tax-rates/create', phone.getByRole('spinbutton', { name: /^Rate/ })],
      ['/tax-classes', phone.getByRole('link', { name: /Lujo alto/ })],
      ['/tax-classes/create', phone.getByRole('textbox', { name: /^Code/ })],
    ] as const) {
      await go(phone, hash)
      await ready.waitFor()
      await settled(phone)
      expect(await violations(phone), hash).toEqual([])
      expect(await phone.evaluate(() => document.documentElement.scrollWidth), hash).toBeLessThanOrEqual(PHONE.width)
    }
    await context.close()
  })
})
