import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { DESKTOP, hasChromium, openPage, PHONE, screenshot, signIn, sticksOut, useShopAndBrowser, violations } from '../helpers/browser.js'

interface Key {
  id: number
  name: string
  staffRole: string
  prefix: string
  revokedAt: string | null
  lastUsedAt: string | null
}

// The API keys page: a key made through the form, its secret shown once in a dialog (copied with the button, then
// gone from the page), working as a bearer against the API; rotated (a new secret, shown once; the old one refused)
// and revoked after a confirmation (401 at once). axe at 1440 and 390 px. Every change is checked through the API.
describe.skipIf(!hasChromium)('the API keys page', () => {
  const used = useShopAndBrowser()
  let owner: TestUser
  const patient = { timeout: 10_000 }

  const keys = async (): Promise<Key[]> => {
    const response = await used.shop.app.inject({ url: '/api-keys?limit=1000', headers: bearer(owner) })
    expect(response.statusCode).toBe(200)
    return response.json()
  }
  const named = async (name: string) => (await keys()).find((key) => key.name === name)
  /** What the API answers the secret on a route of the fulfillment role (orders:read). */
  const statusWith = async (secret: string) =>
    (await used.shop.app.inject({ url: '/exports/orders.csv', headers: { authorization: `Bearer ${secret}` } })).statusCode
  const settled = async (target: Page) =>
    target
      .locator('.MuiLinearProgress-root, .MuiCircularProgress-root')
      .first()
      .waitFor({ state: 'detached', timeout: 5_000 })
      .catch(() => {})
  /** The secret the dialog shows, once it is open. */
  const shownSecret = async (page: Page): Promise<string> => {
    const dialog = page.getByRole('dialog', { name: /^Secret of / })
    await dialog.waitFor(patient)
    await dialog.getByText('it will not be shown again').waitFor()
    return dialog.getByRole('textbox', { name: 'Secret' }).inputValue()
  }

  beforeAll(async () => {
    owner = await makeUser(used.shop.app, 'admin')
  })

  it('makes a key, shows its secret once, which works until the key is revoked', async () => {
    const { context, page } = await openPage(used.browser, used.shop, DESKTOP)
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: used.shop.url })
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.getByRole('menuitem', { name: 'API keys' }).click()
    await page.waitForURL(/#\/api-keys$/)
    await page.getByRole('link', { name: 'Create' }).click()
    await page.getByRole('textbox', { name: /^Name/ }).fill('Warehouse')
    await page.getByRole('combobox', { name: /^Role/ }).click()
    await page.getByRole('option', { name: 'Fulfillment' }).click()
    await page.getByRole('button', { name: 'Save' }).click()

    const secret = await shownSecret(page)
    expect(secret).toMatch(/^sk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/)
    const stored = await named('Warehouse')
    expect(stored).toMatchObject({ staffRole: 'fulfillment', prefix: secret.slice(0, 15), revokedAt: null })
    await settled(page)
    expect(await violations(page)).toEqual([])
    await screenshot(page, 'api-key-secret')

    await page.getByRole('dialog').getByRole('button', { name: 'Copy' }).click()
    await page.getByRole('dialog').getByText('Copied to the clipboard.').waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret)

    // It works as a bearer against the API.
    expect(await statusWith(secret)).toBe(200)

    // Done: back to the list; the secret is nowhere on the page any more.
    await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click()
    await page.waitForURL(/#\/api-keys$/)
    const row = page.getByRole('row', { name: /Warehouse/ })
    await row.waitFor(patient)
    expect(await row.textContent()).toContain(secret.slice(0, 15))
    expect(await row.textContent()).toContain('Active')
    expect(await page.content()).not.toContain(secret.slice(16))
    await settled(page)
    expect(await violations(page)).toEqual([])

    // Revoke, after a confirmation: 401 at once; the row stays, revoked.
    await row.getByRole('button', { name: 'Revoke Warehouse' }).click()
    await page.getByRole('dialog', { name: 'Revoke Warehouse?' }).getByRole('button', { name: 'Revoke' }).click()
    await expect.poll(async () => (await named('Warehouse'))?.revokedAt, patient).not.toBeNull()
    expect(await statusWith(secret)).toBe(401)
    await expect.poll(async () => (await row.textContent()) ?? '', patient).toContain('Revoked')
    expect(await row.getByRole('button', { name: 'Rotate Warehouse' }).count()).toBe(0)
    await context.close()
  })

  it('rotates a key: the new secret shown once, the old one refused at once', async () => {
    const created = await used.shop.app.inject({
      method: 'POST',
      url: '/api-keys',
      headers: bearer(owner),
      payload: { name: 'ERP', staffRole: 'fulfillment' },
    })
    const old = (created.json() as { secret: string }).secret
    expect(await statusWith(old)).toBe(200)

    const { context, page } = await openPage(used.browser, used.shop, DESKTOP)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto('/admin/#/api-keys')
    const row = page.getByRole('row', { name: /ERP/ })
    await row.getByRole('button', { name: 'Rotate ERP' }).click()
    const confirm = page.getByRole('dialog', { name: 'Rotate ERP?' })
    await confirm.getByText('the current secret stops working at once').waitFor()
    await confirm.getByRole('button', { name: 'Rotate' }).click()

    const renewed = await shownSecret(page)
    expect(renewed).not.toBe(old)
    expect(await statusWith(old)).toBe(401)
    expect(await statusWith(renewed)).toBe(200)
    expect((await named('ERP'))?.prefix).toBe(renewed.slice(0, 15))
    await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click()
    await page.getByRole('dialog').waitFor({ state: 'detached' })
    await expect.poll(async () => (await row.textContent()) ?? '', patient).toContain(renewed.slice(0, 15))
    expect(await page.content()).not.toContain(renewed.slice(16))
    await context.close()
  })

  it('on a phone: the list, the form and the secret dialog fit 390 px and pass axe', async () => {
    const { context, page } = await openPage(used.browser, used.shop, PHONE)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto('/admin/#/api-keys')
    const list = page.getByRole('list', { name: 'API keys' })
    await list.getByText('Warehouse').waitFor(patient)
    await settled(page)
    expect(await violations(page)).toEqual([])
    expect(await sticksOut(page)).toEqual([])

    await page.goto('/admin/#/api-keys/create')
    await page.getByRole('textbox', { name: /^Name/ }).fill('Phone key')
    await page.getByRole('combobox', { name: /^Role/ }).click()
    await page.getByRole('option', { name: 'Support' }).click()
    await settled(page)
    expect(await violations(page)).toEqual([])
    expect(await sticksOut(page)).toEqual([])
    await page.getByRole('button', { name: 'Save' }).click()
    const secret = await shownSecret(page)
    expect((await named('Phone key'))?.prefix).toBe(secret.slice(0, 15))
    expect(await violations(page)).toEqual([])
    expect(await sticksOut(page)).toEqual([])
    await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click()
    await list.getByText('Phone key').waitFor(patient)
    await context.close()
  })
})
