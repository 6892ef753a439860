import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/modules/users/users.service.js'
import { paidOrder } from '../helpers/after-sale.js'
import { DESKTOP, hasChromium, openPage, PHONE, signIn, useShopAndBrowser, violations } from '../helpers/browser.js'

// The dashboard by staff role: the menu, pages and buttons of what the role may do (GET /auth/me's permissions),
// and the owners' Staff page, where an admin's staff role is changed.

describe.skipIf(!hasChromium)('the dashboard by staff role', () => {
  const env = useShopAndBrowser()
  const password = 'staff-password-1'
  const accounts = { catalog: 'cat@shop.test', fulfillment: 'ful@shop.test', support: 'sue@shop.test' } as const
  let orderId = 0
  let sueId = 0

  beforeAll(async () => {
    for (const [staffRole, email] of Object.entries(accounts) as Array<[keyof typeof accounts, string]>) {
      const user = await createUser(env.shop.app.db, { name: `The ${staffRole} admin`, email, password, role: 'admin', staffRole }, null)
      if (staffRole === 'support') sueId = user.id
    }
    const customer = await createUser(env.shop.app.db, { name: 'Buyer', email: 'buyer@shop.test', password, role: 'customer' }, null)
    orderId = (await paidOrder(env.shop.app, { userId: customer.id, email: 'buyer@shop.test' }, [{ name: 'Lamp', quantity: 1 }])).id
  })

  async function signedIn(email: string, viewport = DESKTOP): Promise<{ page: Page; close: () => Promise<void> }> {
    const { context, page } = await openPage(env.browser, env.shop, viewport)
    await signIn(page, email, password)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    return { page, close: () => context.close() }
  }
  const menu = (page: Page) => page.getByRole('menu').or(page.locator('.RaMenu-open, .RaSidebar-fixed')).first()

  it('a catalog admin sees the catalog, no Orders in the menu, no order page and no refund button', async () => {
    const { page, close } = await signedIn(accounts.catalog)
    await expect.poll(() => menu(page).getByText('Products', { exact: true }).count()).toBe(1)
    expect(await menu(page).getByText('Orders', { exact: true }).count()).toBe(0)
    expect(await menu(page).getByText('Staff', { exact: true }).count()).toBe(0)
    expect(await menu(page).getByText('Discount codes', { exact: true }).count()).toBe(0)
    await page.goto(`/admin/#/orders/${orderId}/show`)
    await page.locator('main, [role=main]').first().waitFor()
    expect(await page.getByRole('button', { name: 'Preview refund' }).count()).toBe(0)
    // The CSV page offers the products' export and the import, not the orders' or the customers'.
    await page.goto('/admin/#/csv')
    await page.getByRole('button', { name: 'Products CSV' }).waitFor()
    expect(await page.getByRole('button', { name: 'Orders CSV' }).count()).toBe(0)
    await close()
  })

  it('a fulfillment admin ships an order but is offered no refund and no status move', async () => {
    const { page, close } = await signedIn(accounts.fulfillment)
    await page.goto(`/admin/#/orders/${orderId}/show`)
    await page.getByRole('button', { name: 'Ship' }).waitFor()
    expect(await page.getByRole('button', { name: 'Preview refund' }).count()).toBe(0)
    expect(await page.getByRole('button', { name: /cancel/i }).count()).toBe(0)
    await close()
  })

  it('the owner changes an admin’s staff role on the Staff page; the API’s refusals are shown as it says them', async () => {
    const owner = await openPage(env.browser, env.shop, DESKTOP)
    await signIn(owner.page)
    await owner.page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await owner.page.goto('/admin/#/staff')
    await owner.page.getByText(accounts.support).waitFor()
    await owner.page.goto(`/admin/#/staff/${sueId}`)
    await owner.page.getByLabel('Staff role').click()
    await owner.page.getByRole('option', { name: /^Catalog/ }).click()
    await owner.page.getByRole('button', { name: 'Save' }).click()
    // Back on the list once the browser has the answer (the edit form shows the e-mail too, so wait for the list's
    // URL): a redirect arriving after the next goto would replace the create page.
    await expect.poll(() => owner.page.url()).toMatch(/#\/staff(\?.*)?$/)
    await owner.page.getByText(accounts.support).waitFor()
    await expect
      .poll(async () => (await env.shop.app.db.selectFrom('users').select('staff_role').where('id', '=', sueId).executeTakeFirstOrThrow()).staff_role)
      .toBe('catalog')
    // A new admin with a taken e-mail: the API's 409, as it says it.
    await owner.page.goto('/admin/#/staff/create')
    await owner.page.getByRole('textbox', { name: /^Name/ }).fill('Twice')
    await owner.page.getByLabel('Email').fill(accounts.catalog)
    await owner.page.getByRole('textbox', { name: /^Password/ }).fill(password)
    await owner.page.getByRole('button', { name: 'Save' }).click()
    await owner.page.getByText('El email ya está en uso').first().waitFor()
    await owner.context.close()
  })

  it('passes axe (WCAG 2.1 AA) on the Staff pages and a catalog admin’s menu, at 1440 px and 390 px', async () => {
    const problems: string[] = []
    for (const viewport of [DESKTOP, PHONE]) {
      const owner = await openPage(env.browser, env.shop, viewport)
      await signIn(owner.page)
      await owner.page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
      for (const [name, hash, ready] of [
        ['staff list', '/staff', accounts.fulfillment],
        ['staff role', `/staff/${sueId}`, 'Staff role'],
        ['new admin', '/staff/create', 'Staff role'],
      ] as const) {
        await owner.page.goto(`/admin/#${hash}`)
        await owner.page.getByText(ready).first().waitFor()
        problems.push(...(await violations(owner.page)).map((violation) => `${name} @${viewport.width}: ${violation}`))
      }
      await owner.context.close()
      const { page, close } = await signedIn(accounts.catalog, viewport)
      problems.push(...(await violations(page)).map((violation) => `catalog overview @${viewport.width}: ${violation}`))
      await close()
    }
    expect(problems).toEqual([])
  })
})
