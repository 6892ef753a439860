import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { bearer, makeUser, type TestUser } from '../helpers/factories.js'
import { makeProduct, PNG, storedImages } from '../helpers/catalog.js'
import { DESKTOP, hasChromium, openPage, PHONE, screenshot, scrollIntoView, seriousViolations, signIn, useShopAndBrowser } from '../helpers/browser.js'

interface Image {
  id: number
  url: string
  alt: string
  position: number
}
interface Product {
  id: number
  name: string
  description: string | null
  tags: string[]
  status: string
  imageUrl: string | null
  taxClass: string
  images: Image[]
  variants: Array<{ sku: string | null; compareAtPrice: number | null }>
}

// A product's images on its edit page: several uploaded at once, alt text, order (keyboard buttons), deletion and
// the API's refusal beside the button; and the form's tax class, SKU and compare-at price. Checked through the API.
describe.skipIf(!hasChromium)('the product images editor', () => {
  const used = useShopAndBrowser()
  let owner: TestUser
  let page: Page
  let productId = 0

  const productOf = async (id: number): Promise<Product> => {
    const response = await used.shop.app.inject({ url: `/products/${id}`, headers: bearer(owner) })
    expect(response.statusCode).toBe(200)
    return response.json()
  }
  const go = async (hash: string) => {
    await page.goto(`/admin/#${hash}`)
    await page.locator('main, [role=main]').first().waitFor()
  }
  const images = () => page.getByRole('list', { name: 'Images' })
  const png = (name: string) => ({ name, mimeType: 'image/png', buffer: Buffer.from(PNG) })

  beforeAll(async () => {
    owner = await makeUser(used.shop.app, 'admin')
    page = (await openPage(used.browser, used.shop)).page
    await signIn(page)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
  })

  it('uploads three images in one request, sets an alt text, moves one with the keyboard and deletes one', async () => {
    productId = (await makeProduct(used.shop.app, { name: 'Lamp' })).id
    const seeded = (await productOf(productId)).images[0]!
    await go(`/products/${productId}`)
    await page.getByRole('heading', { name: 'Images (1)' }).waitFor()

    const uploads: string[] = []
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === `/products/${productId}/images`) uploads.push(request.method())
    })
    // Eleven files: the API's 422 beside the input, and nothing added.
    const input = page.getByLabel('Add images')
    await input.setInputFiles(Array.from({ length: 11 }, (_, index) => png(`${index}.png`)))
    const tooMany = 'images must contain no more than 10 elements'
    await page.getByRole('alert').filter({ hasText: tooMany }).waitFor()
    expect(await page.locator(`[id="${(await input.getAttribute('aria-describedby'))!.split(' ')[0]}"]`).textContent()).toBe(tooMany)
    expect((await productOf(productId)).images).toHaveLength(1)

    await input.setInputFiles([png('a.png'), png('b.png'), png('c.png')])
    await page.getByRole('heading', { name: 'Images (4)' }).waitFor()
    expect(uploads).toEqual(['POST', 'POST'])
    expect(await page.getByRole('alert').filter({ hasText: tooMany }).count()).toBe(0)
    const rows = await used.shop.app.db
      .selectFrom('product_images')
      .select(['id', 'position', 'image_key'])
      .where('product_id', '=', productId)
      .orderBy('position')
      .execute()
    expect(rows.map((row) => row.position)).toEqual([0, 1, 2, 3])
    expect(rows[0]!.id).toBe(seeded.id)
    expect(storedImages(used.shop.config)).toEqual(expect.arrayContaining(rows.slice(1).map((row) => row.image_key)))
    const [, a, b, c] = rows.map((row) => row.id)

    // The alt text is saved when the field is left.
    await page.getByLabel('Alt text of image 2').fill('A brass desk lamp')
    await page.getByLabel('Alt text of image 3').focus()
    await expect.poll(async () => (await productOf(productId)).images.find((image) => image.id === a)?.alt).toBe('A brass desk lamp')

    // Image 4 moved up with the keyboard: one PUT, and the page shows the answer's order; the focus stays on the button.
    const orders: string[] = []
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === `/products/${productId}/images/order`) orders.push(request.method())
    })
    await page.getByRole('button', { name: 'Move image 4 up' }).focus()
    await page.keyboard.press('Enter')
    await expect.poll(async () => (await productOf(productId)).images.map((image) => image.id)).toEqual([seeded.id, a, c, b])
    // Polled: the browser's report of the request may reach the test after the server has committed it (a CI run).
    await expect.poll(() => orders).toEqual(['PUT'])
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Move image 3 up')
    await page.keyboard.press('Enter')
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Move image 2 up')
    await page.keyboard.press('Enter')
    await expect.poll(async () => (await productOf(productId)).images.map((image) => image.id)).toEqual([c, seeded.id, a, b])
    // At the top, Move up is disabled: the focus is on Move down.
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Move image 1 down')
    await expect.poll(() => orders).toEqual(['PUT', 'PUT', 'PUT'])
    await expect.poll(() => images().getByRole('listitem').first().getAttribute('aria-label')).toBe('Image 1 (main image)')
    expect(await images().getByRole('listitem').first().locator('img').getAttribute('src')).toBe((await productOf(productId)).imageUrl)
    expect(await page.getByLabel('Alt text of image 3').inputValue()).toBe('A brass desk lamp')

    // Deleted after confirmation: the row goes, the others close up.
    await page.getByRole('button', { name: 'Delete image 4' }).click()
    await page.getByRole('button', { name: 'Confirm' }).click()
    await page.getByRole('heading', { name: 'Images (3)' }).waitFor()
    expect((await productOf(productId)).images.map((image) => [image.id, image.position])).toEqual([
      [c, 0],
      [seeded.id, 1],
      [a, 2],
    ])
  })

  it('puts an image in another place by drag and drop: one PUT, and the page shows the order the API answered', async () => {
    const dragged = (await makeProduct(used.shop.app, { name: 'Dragged lamp' })).id
    await go(`/products/${dragged}`)
    await page.getByRole('heading', { name: 'Images (1)' }).waitFor()
    await page.getByLabel('Add images').setInputFiles([png('d.png'), png('e.png')])
    await page.getByRole('heading', { name: 'Images (3)' }).waitFor()
    const [first, second, third] = (await productOf(dragged)).images.map((image) => image.id)
    const orders: string[] = []
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === `/products/${dragged}/images/order`) orders.push(request.method())
    })
    // The third image dropped on the first: it becomes the main image, the others move down one place.
    await images().getByRole('listitem').nth(2).dragTo(images().getByRole('listitem').nth(0))
    await expect.poll(async () => (await productOf(dragged)).images.map((image) => image.id)).toEqual([third, first, second])
    await expect.poll(() => orders).toEqual(['PUT'])
    await expect.poll(() => images().getByRole('listitem').first().locator('img').getAttribute('src')).toBe((await productOf(dragged)).imageUrl)
    // An image dropped on itself moves nothing, and asks nothing: the next real move's PUT is the second one recorded
    // (the browser reports requests in the order they are sent, so a PUT of the first drop would come before it).
    await images().getByRole('listitem').nth(1).dragTo(images().getByRole('listitem').nth(1))
    expect((await productOf(dragged)).images.map((image) => image.id)).toEqual([third, first, second])
    await images().getByRole('listitem').nth(2).dragTo(images().getByRole('listitem').nth(0))
    await expect.poll(async () => (await productOf(dragged)).images.map((image) => image.id)).toEqual([second, third, first])
    await expect.poll(() => orders.length).toBeGreaterThanOrEqual(2)
    expect(orders).toEqual(['PUT', 'PUT'])
  })

  it('shows the 409 of deleting the last image of an active product beside its button, and nothing changes', async () => {
    const lone = (await makeProduct(used.shop.app, { name: 'Lone lamp' })).id
    await go(`/products/${lone}`)
    await page.getByRole('heading', { name: 'Images (1)' }).waitFor()
    const remove = page.getByRole('button', { name: 'Delete image 1' })
    await remove.click()
    await page.getByRole('button', { name: 'Confirm' }).click()
    const message = 'Un producto sin imágenes solo puede estar en borrador'
    await page.getByRole('alert').filter({ hasText: message }).waitFor()
    const described = (await remove.getAttribute('aria-describedby')) ?? ''
    expect(await page.locator(`[id="${described}"]`).textContent()).toBe(message)
    expect((await productOf(lone)).images).toHaveLength(1)
    await page.getByRole('heading', { name: 'Images (1)' }).waitFor()
  })

  it('edits the tax class, SKU and compare-at price of a product of one variant', async () => {
    await go(`/products/${productId}`)
    // The page first shows the product as cached at its first visit (one image), then the fresh record: wait for it,
    // so the tax class read below is the product's own (what is typed meanwhile is kept: the next test).
    const images = (await productOf(productId)).images.length
    await page.getByRole('heading', { name: `Images (${images})` }).waitFor()
    await expect.poll(() => page.getByLabel('Tax class').inputValue()).toBe('standard')
    await page.getByLabel('Tax class').fill('reduced')
    await page.getByLabel('SKU').fill('LAMP-1')
    await page.getByLabel('Compare-at price').fill('19.5')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await expect.poll(async () => (await productOf(productId)).taxClass).toBe('reduced')
    expect((await productOf(productId)).variants).toMatchObject([{ sku: 'LAMP-1', compareAtPrice: 19.5 }])
    await expect.poll(() => page.getByLabel('SKU').inputValue()).toBe('LAMP-1')
  })

  it('keeps what the admin typed while the page fetches the product, and is clean once it is saved', async () => {
    const name = () => page.getByRole('textbox', { name: 'Name', exact: true })
    const id = (await makeProduct(used.shop.app, { name: 'Kettle' })).id
    await go(`/products/${id}`)
    await expect.poll(() => name().inputValue()).toBe('Kettle')
    // Changed elsewhere after the visit: the page shows the cached product first, then this one, held back 1.5 s.
    const changed = await used.shop.app.inject({
      method: 'PATCH',
      url: `/products/${id}`,
      headers: bearer(owner),
      payload: { description: 'Changed meanwhile' },
    })
    expect(changed.statusCode).toBe(200)
    const isProduct = (url: URL) => url.pathname === `/products/${id}`
    await page.route(isProduct, async (route) => {
      if (route.request().method() === 'GET') await new Promise((resolve) => setTimeout(resolve, 1500))
      await route.continue()
    })
    try {
      await page.goto('/admin/#/products')
      await go(`/products/${id}`)
      await expect.poll(() => name().inputValue()).toBe('Kettle')
      expect(await page.getByLabel('Description').inputValue()).toBe('')
      await name().fill('Copper kettle')
      // The fresh product has come: its description is shown, the typed name kept and still to be saved.
      await expect.poll(() => page.getByLabel('Description').inputValue()).toBe('Changed meanwhile')
      expect(await name().inputValue()).toBe('Copper kettle')
      // Save is enabled again once the edit has been compared with the fresh product (a render after it is shown).
      const save = page.getByRole('button', { name: 'Save', exact: true })
      await expect.poll(() => save.isEnabled()).toBe(true)
      // Tags as typed: the API stores them trimmed, as a list, which the form shows once saved.
      await page.getByLabel('Tags').fill(' kitchen,  copper ')
      await save.click()
      await expect.poll(() => productOf(id)).toMatchObject({ name: 'Copper kettle', description: 'Changed meanwhile', tags: ['kitchen', 'copper'] })
      // Saved: once the browser has the answer (Save is disabled while the save is in flight too, so it proves
      // nothing before), the form holds the product as stored, and Save waits for the next change.
      await expect.poll(() => page.getByLabel('Tags').inputValue()).toBe('kitchen, copper')
      await expect.poll(() => save.isDisabled()).toBe(true)
      expect(await name().inputValue()).toBe('Copper kettle')
    } finally {
      await page.unroute(isProduct)
    }
  })

  it('passes axe (WCAG 2.1 AA) at 1440 px and 390 px, and fits a phone', async () => {
    const problems: string[] = []
    for (const viewport of [DESKTOP, PHONE]) {
      const { context, page: viewed } = viewport === DESKTOP ? { context: undefined, page } : await openPage(used.browser, used.shop, PHONE)
      if (context) {
        await signIn(viewed)
        await viewed.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
      }
      await viewed.goto(`/admin/#/products/${productId}`)
      // The editor's last field first: the page may still re-render the heading (its element replaced) until then.
      await viewed.getByLabel('Alt text of image 3').waitFor()
      await scrollIntoView(viewed.getByRole('heading', { name: 'Images (3)' }))
      problems.push(...(await seriousViolations(viewed)).map((violation) => `@${viewport.width}: ${violation}`))
      if (viewport === DESKTOP) await screenshot(viewed, 'product-images')
      else {
        const width = await viewed.evaluate(() => document.documentElement.scrollWidth)
        if (width > PHONE.width) problems.push(`@390: the page is ${width} px wide`)
      }
      await context?.close()
    }
    expect(problems).toEqual([])
  }, 240_000)
})
