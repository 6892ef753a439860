import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { type AfterSaleOrder, paidOrder, shipAll } from '../helpers/after-sale.js'
import { DESKTOP, hasChromium, openPage, PHONE, screenshot, signIn, useShopAndBrowser, violations } from '../helpers/browser.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'

// The Returns and Withdrawals pages: a customer's return approved and received (without a refund) from its page, one
// rejected with a reason; a withdrawal confirmed through the public API, read on its page and made into a return;
// axe at 1440 px and 390 px, and nothing sticking out of a phone's width.
describe.skipIf(!hasChromium)('returns and withdrawals on the dashboard', () => {
  const used = useShopAndBrowser()
  let customer: TestUser
  let returned: AfterSaleOrder
  let withdrawn: AfterSaleOrder
  let toApprove: number
  let toReject: number
  let withdrawalId: number

  const patient = { timeout: 10_000 }
  const sticksOut = (target: Page): Promise<string[]> =>
    target.evaluate(() => {
      const width = document.documentElement.clientWidth
      return document.documentElement.scrollWidth > width ? [`scrollWidth ${document.documentElement.scrollWidth}`] : []
    })
  const settled = async (target: Page) =>
    target
      .locator('.MuiLinearProgress-root, .MuiCircularProgress-root')
      .first()
      .waitFor({ state: 'detached', timeout: 5_000 })
      .catch(() => {})

  beforeAll(async () => {
    const { app } = used.shop
    customer = await makeUser(app, 'customer', 'Ana Cliente')
    returned = await paidOrder(app, { userId: customer.id, email: customer.email }, [{ name: 'Jarra azul', quantity: 2 }])
    await shipAll(app, returned, 1)
    const ask = async (quantity: number, reason: string) => {
      const res = await app.inject({
        method: 'POST',
        url: `/orders/${returned.id}/returns`,
        headers: bearer(customer),
        payload: { items: [{ orderItemId: returned.lines[0]!.id, quantity, reason }] },
      })
      expect(res.statusCode).toBe(201)
      return (res.json() as { id: number }).id
    }
    toApprove = await ask(1, 'Llegó rota')
    toReject = await ask(1, 'No me gusta')

    withdrawn = await paidOrder(app, { guestEmail: 'lola@example.test' }, [{ name: 'Lámpara', quantity: 1 }])
    await shipAll(app, withdrawn, 2)
    const confirm = await app.inject({
      method: 'POST',
      url: '/withdrawals/confirm',
      payload: { orderId: withdrawn.id, email: 'lola@example.test', name: 'Lola Invitada' },
      headers: { 'user-agent': 'Navegador de prueba' },
    })
    expect(confirm.statusCode).toBe(202)
    withdrawalId = (confirm.json() as { id: number }).id
  })

  it('on a desktop: approve and receive one return, reject another with a reason; make a return of a withdrawal', async () => {
    const { context, page } = await openPage(used.browser, used.shop, DESKTOP)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()

    await page.goto('/admin/#/returns')
    const rows = page.getByRole('table', { name: 'Returns' }).locator('tbody tr')
    await expect.poll(() => rows.count(), patient).toBe(2)
    await settled(page)
    expect(await violations(page)).toEqual([])
    await page.getByRole('combobox', { name: 'Status' }).click()
    await page.getByRole('option', { name: 'Requested' }).click()
    await expect.poll(() => rows.count(), patient).toBe(2)

    // Approve, then receive without refunding.
    await page.goto(`/admin/#/returns/${toApprove}/show`)
    await page.getByRole('table', { name: 'Returned lines' }).getByText('Jarra azul').waitFor()
    await page.getByRole('table', { name: 'Returned lines' }).getByRole('cell', { name: 'Llegó rota' }).waitFor()
    await settled(page)
    expect(await violations(page)).toEqual([])
    await page.getByRole('button', { name: 'Approve' }).click()
    await page.getByRole('button', { name: 'Mark as received' }).waitFor()
    await page.getByRole('button', { name: 'Mark as received' }).click()
    const dialog = page.getByRole('dialog', { name: `Receive return #${toApprove}?` })
    await dialog.waitFor()
    // Once its fade-in is over: half-transparent text fails the contrast rule.
    await expect.poll(() => dialog.evaluate((element) => getComputedStyle(element.closest('.MuiDialog-container') ?? element).opacity), patient).toBe('1')
    expect(await violations(page)).toEqual([])
    await dialog.getByRole('checkbox', { name: 'Refund the received units to the customer' }).uncheck()
    await dialog.getByRole('button', { name: 'Receive' }).click()
    await expect
      .poll(async () => (await used.shop.app.inject({ url: `/returns/${toApprove}`, headers: bearer(await owner()) })).json().status, patient)
      .toBe('received')
    await page.getByRole('table', { name: 'Returned lines' }).getByRole('cell', { name: '1' }).nth(1).waitFor()

    // Reject with a reason.
    await page.goto(`/admin/#/returns/${toReject}/show`)
    await page.getByRole('button', { name: 'Reject' }).click()
    const reject = page.getByRole('dialog', { name: `Reject return #${toReject}?` })
    await reject.getByRole('textbox', { name: 'Reason' }).fill('Fuera de plazo')
    await reject.getByRole('button', { name: 'Reject return' }).click()
    await page.getByText('Rejected: Fuera de plazo').waitFor()
    await screenshot(page, 'returns-desktop')

    // The withdrawal: its statement and evidence, then "Make a return", which opens the new return.
    await page.goto('/admin/#/withdrawals')
    const withdrawals = page.getByRole('table', { name: 'Withdrawals' }).locator('tbody tr')
    await expect.poll(() => withdrawals.count(), patient).toBe(1)
    expect(await withdrawals.first().textContent()).toContain('Lola Invitada <lola@example.test>')
    await settled(page)
    expect(await violations(page)).toEqual([])
    await withdrawals.first().click()
    await page.waitForURL(new RegExp(`#/withdrawals/${withdrawalId}/show`))
    await page.getByText(/^Por la presente, Lola Invitada \(lola@example.test\) comunica que desiste/).waitFor()
    await page.getByText(/Navegador de prueba/).waitFor()
    await settled(page)
    expect(await violations(page)).toEqual([])
    await screenshot(page, 'withdrawal-desktop')
    await page.getByRole('button', { name: 'Make a return' }).click()
    await page.waitForURL(/#\/returns\/\d+\/show/, patient)
    await page.getByRole('link', { name: `withdrawal #${withdrawalId}` }).waitFor()
    await page.getByRole('button', { name: 'Mark as received' }).waitFor()
    await context.close()
  })

  it('on a phone (390 px): the lists and the pages fit, and pass axe', async () => {
    const { context, page } = await openPage(used.browser, used.shop, PHONE)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    for (const path of ['/admin/#/returns', `/admin/#/returns/${toApprove}/show`, '/admin/#/withdrawals', `/admin/#/withdrawals/${withdrawalId}/show`]) {
      await page.goto(path)
      await page
        .locator('main')
        .getByText(/Return #|Withdrawal #|Order #/)
        .first()
        .waitFor(patient)
      await settled(page)
      expect(await violations(page), path).toEqual([])
      expect(await sticksOut(page), path).toEqual([])
    }
    await screenshot(page, 'returns-phone')
    await context.close()
  })

  /** A staff token for the API checks beside the browser. */
  let staff: TestUser | undefined
  async function owner(): Promise<TestUser> {
    staff ??= await makeUser(used.shop.app, 'admin')
    return staff
  }
})
