import { readFileSync } from 'node:fs'
import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { makeProduct } from '../helpers/catalog.js'
import { ADMIN, DESKTOP, hasChromium, openPage, PHONE, screenshot, seriousViolations, signIn, useShopAndBrowser } from '../helpers/browser.js'

// The CSV page: each export downloaded (the file's first line checked), a file imported after its dry run (the
// report's counts and row errors shown, Apply only once the check passed), and axe at 1440 px and 390 px. Every
// change is checked in the database.
describe.skipIf(!hasChromium)('the CSV page', () => {
  const used = useShopAndBrowser()
  let page: Page

  const openCsv = async (target: Page) => {
    await target.getByRole('menuitem', { name: 'CSV' }).click()
    await target.waitForURL(/#\/csv$/)
    await target.getByRole('heading', { name: 'Import products' }).waitFor()
  }
  const chooseFile = async (target: Page, name: string, text: string) => {
    await target.getByLabel('CSV file').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(`\uFEFF${text}`, 'utf8') })
  }

  beforeAll(async () => {
    await makeProduct(used.shop.app, { name: 'Taza de cerámica', priceCents: 1290 })
    page = (await openPage(used.browser, used.shop, DESKTOP)).page
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await openCsv(page)
  })

  it('downloads each export as a CSV file with its header row', async () => {
    for (const [label, header] of [
      ['Products CSV', 'product_id,slug,name'],
      ['Orders CSV', 'order_id,created_at,status'],
      ['Customers CSV', 'id,name,email'],
    ] as const) {
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: label }).click()])
      expect(download.suggestedFilename()).toMatch(/^(products|orders|customers)-\d{4}-\d{2}-\d{2}\.csv$/)
      const text = readFileSync((await download.path())!, 'utf8')
      expect(text.startsWith(`\uFEFF${header}`), label).toBe(true)
    }
    // The last download's notice fades out by itself: axe in the next test reads the page without it (a notice half
    // faded in or out reads as low contrast).
    await page.locator('.MuiSnackbar-root').waitFor({ state: 'detached', timeout: 15_000 })
  })

  it('checks a file first, shows the row errors, and applies a valid one only after its dry run', async () => {
    await chooseFile(page, 'bad.csv', 'name,slug,price\r\nBuena,buena,5\r\nMala,mala,-1\r\n')
    await expect.poll(() => page.getByRole('button', { name: 'Apply import' }).isDisabled()).toBe(true)
    await page.getByRole('button', { name: 'Check file (dry run)' }).click()
    await page.getByText('Dry run: the file has errors. Nothing was written.').waitFor()
    const errors = page.getByRole('table', { name: 'Row errors' })
    await expect.poll(() => errors.getByRole('row').nth(1).textContent()).toBe('3priceprice must not be less than 0')
    expect(await page.getByRole('button', { name: 'Apply import' }).isDisabled()).toBe(true)
    expect(await seriousViolations(page)).toEqual([])
    await screenshot(page, 'csv-import-errors')

    await chooseFile(page, 'good.csv', 'name,slug,price,stock\r\nVela aromática,vela-aromatica,8.50,12\r\n')
    await page.getByRole('button', { name: 'Check file (dry run)' }).click()
    await page.getByText('Dry run: the file is valid. Nothing was written yet.').waitFor()
    await page.getByText(/1 rows: 1 products and 1 variants to create/).waitFor()
    expect(await used.shop.app.db.selectFrom('products').select('id').where('slug', '=', 'vela-aromatica').executeTakeFirst()).toBeUndefined()
    await page.getByRole('button', { name: 'Apply import' }).click()
    await page.getByText('Import applied.').waitFor()
    expect(
      await used.shop.app.db.selectFrom('products').select(['name', 'price_cents', 'stock', 'status']).where('slug', '=', 'vela-aromatica').executeTakeFirst(),
    ).toEqual({
      name: 'Vela aromática',
      price_cents: 850,
      stock: 12,
      status: 'draft',
    })
  })

  it('on a phone: the same page, usable and without serious axe violations', async () => {
    const phone = (await openPage(used.browser, used.shop, PHONE)).page
    await signIn(phone, ADMIN.email, ADMIN.password)
    await phone.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await phone.goto('/admin/#/csv')
    await phone.getByRole('heading', { name: 'Import products' }).waitFor()
    await chooseFile(phone, 'bad.csv', 'name,price,colour\r\nA,1,red\r\n')
    await phone.getByRole('button', { name: 'Check file (dry run)' }).click()
    await phone.getByText('Columna desconocida: colour').waitFor()
    expect(await seriousViolations(phone)).toEqual([])
    await screenshot(phone, 'csv-phone')
  })
})
