import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { makeProduct } from '../helpers/catalog.js'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { fillCart } from '../helpers/shop.js'
import { DESKTOP, hasChromium, openPage, PHONE, screenshot, signIn, useShopAndBrowser, violations, sticksOut } from '../helpers/browser.js'

// Shipments and the timeline on an order's page: a paid order of 3 lamps and 2 clips, placed through the API; the
// ship form (a refused tracking URL shown beside its field, then 2 lamps with carrier and tracking), the shipment
// listed with its lines, the order shipped and partly shipped, the timeline's entries and a note, a delivery; the
// list's Shipping filter; axe at 1440 px and 390 px, and nothing wider than a phone.
describe.skipIf(!hasChromium)('shipments and the timeline on the order page', () => {
  const used = useShopAndBrowser()
  let owner: TestUser
  let orderId: number
  let otherId: number

  const patient = { timeout: 10_000 }
  const settled = async (target: Page) =>
    target
      .locator('.MuiLinearProgress-root, .MuiCircularProgress-root')
      .first()
      .waitFor({ state: 'detached', timeout: 5_000 })
      .catch(() => {})

  /** The notification, once it has finished fading in (axe reads a half-faded one's colours as too pale). */
  const notified = async (target: Page, text: string) => {
    const message = target.locator('.MuiSnackbarContent-root').filter({ hasText: text })
    await message.waitFor(patient)
    await expect.poll(() => message.evaluate((element) => getComputedStyle(element.closest('.MuiSnackbarContent-root') ?? element).opacity), patient).toBe('1')
  }

  /** A paid order of 3 lamps and 2 clips for a new customer. */
  async function paidOrder(): Promise<number> {
    const { app } = used.shop
    const customer = await makeUser(app, 'customer', 'Ana')
    const lamp = await makeProduct(app, { name: 'Lamp', stock: 20, priceCents: 1000 })
    const clip = await makeProduct(app, { name: 'Clip', stock: 20, priceCents: 200 })
    await fillCart(app, customer.id, [
      { productId: lamp.id, quantity: 3 },
      { productId: clip.id, quantity: 2 },
    ])
    const placed = await app.inject({ method: 'POST', url: '/orders', headers: bearer(customer) })
    expect(placed.statusCode).toBe(201)
    const id = (placed.json() as { id: number }).id
    expect((await app.inject({ method: 'PATCH', url: `/orders/${id}/status`, headers: bearer(owner), payload: { status: 'paid' } })).statusCode).toBe(200)
    return id
  }

  beforeAll(async () => {
    owner = await makeUser(used.shop.app, 'admin')
    orderId = await paidOrder()
    otherId = await paidOrder()
  })

  it('on a desktop: ships 2 lamps with tracking, lists the shipment, shows the timeline, takes a note and a delivery', async () => {
    const { context, page } = await openPage(used.browser, used.shop, DESKTOP)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.goto(`/admin/#/orders/${orderId}/show`)
    const shipments = page.getByRole('region', { name: 'Shipments' })
    await shipments.getByText('No shipment recorded.').waitFor()
    await page.getByRole('list', { name: 'Timeline' }).waitFor()
    await settled(page)
    expect(await violations(page)).toEqual([])

    await page.getByRole('spinbutton', { name: 'Units of Lamp to ship' }).fill('2')
    await page.getByRole('spinbutton', { name: 'Units of Clip to ship' }).fill('0')
    await page.getByRole('textbox', { name: 'Carrier' }).fill('Correos')
    await page.getByRole('textbox', { name: 'Tracking number' }).fill('PK123')
    // A URL the API refuses: its message beside the field, nothing shipped.
    await page.getByRole('textbox', { name: 'Tracking URL' }).fill('correos.es/PK123')
    await page.getByRole('button', { name: 'Ship', exact: true }).click()
    await expect.poll(() => page.getByText('trackingUrl must be an absolute http or https URL').count(), patient).toBeGreaterThan(0)
    expect(await shipments.getByText('No shipment recorded.').count()).toBe(1)

    await page.getByRole('textbox', { name: 'Tracking URL' }).fill('https://correos.es/t/PK123')
    await page.getByRole('button', { name: 'Ship', exact: true }).click()
    const listed = page.getByRole('list', { name: 'Shipments' })
    await listed.waitFor(patient)
    const text = await listed.textContent()
    expect(text).toContain('2 × Lamp')
    expect(text).toContain('Correos · tracking PK123')
    expect(await listed.getByRole('link', { name: /Track shipment/ }).getAttribute('href')).toBe('https://correos.es/t/PK123')
    await expect.poll(async () => shipments.getByText('Partly shipped').count(), patient).toBe(1)
    // The rest is still to ship: 1 lamp and 2 clips.
    expect(await page.getByRole('spinbutton', { name: 'Units of Lamp to ship' }).inputValue()).toBe('1')

    const timeline = page.getByRole('list', { name: 'Timeline' })
    await expect.poll(async () => (await timeline.textContent()) ?? '', patient).toContain('Status paid → shipped')
    expect(await timeline.textContent()).toContain('sent with Correos: 2 × Lamp')

    await page.getByRole('textbox', { name: 'Note' }).fill('Llamar antes de entregar')
    await page.getByRole('button', { name: 'Add note' }).click()
    await expect.poll(async () => (await timeline.textContent()) ?? '', patient).toContain('Llamar antes de entregar')

    await page.getByRole('button', { name: /Record delivery of shipment #\d+/ }).click()
    await expect.poll(async () => (await listed.textContent()) ?? '', patient).toContain('Delivered')
    await notified(page, 'marked delivered')
    await expect.poll(async () => (await timeline.textContent()) ?? '', patient).toMatch(/Shipment #\d+ delivered/)
    await settled(page)
    await screenshot(page, 'order-shipments')
    expect(await violations(page)).toEqual([])

    // The list's Shipping filter: the order partly shipped, the other not at all.
    await page.goto('/admin/#/orders')
    const rows = page.getByRole('table', { name: 'Orders' }).locator('tbody tr')
    await expect.poll(() => rows.count(), patient).toBeGreaterThan(1)
    await page.getByRole('combobox', { name: 'Shipping' }).click()
    await page.getByRole('option', { name: 'Partly shipped' }).click()
    await expect.poll(() => rows.count(), patient).toBe(1)
    expect(await rows.first().textContent()).toContain(`#${orderId}`)
    await context.close()
  })

  it('on a phone: the order page with its ship form and timeline passes axe and fits 390 px', async () => {
    const { context, page } = await openPage(used.browser, used.shop, PHONE)
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    for (const id of [otherId, orderId]) {
      await page.goto(`/admin/#/orders/${id}/show`)
      await page.getByRole('list', { name: 'Timeline' }).waitFor(patient)
      await settled(page)
      expect(await violations(page)).toEqual([])
      expect(await sticksOut(page)).toEqual([])
    }
    await context.close()
  })
})
