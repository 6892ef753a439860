import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { hasChromium, openPage, signIn, useShopAndBrowser } from '../helpers/browser.js'

/** The API's paths (not the dashboard's own files under /admin/, which are public). */
const isApiCall = (path: string) => !path.startsWith('/admin/') || path.startsWith('/admin/api/')

/**
 * Records what the page asks of the API: every answer 401, and every call that left without a token. The sign-in
 * itself (POST /auth/login) is the one call that has no token to send.
 */
function recordApiCalls(page: Page): { unauthorized: string[]; withoutToken: string[]; calls: string[] } {
  const record = { unauthorized: [] as string[], withoutToken: [] as string[], calls: [] as string[] }
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname
    if (!isApiCall(path)) return
    record.calls.push(`${request.method()} ${path}`)
    if (path !== '/auth/login' && !request.headers()['authorization']) record.withoutToken.push(`${request.method()} ${path}`)
  })
  page.on('response', (response) => {
    const path = new URL(response.url()).pathname
    if (isApiCall(path) && response.status() === 401) record.unauthorized.push(`${response.request().method()} ${path}`)
  })
  return record
}

/** Holds POST /auth/login's answer back for `ms`: a slower sign-in, as on a busy service. */
async function delayLogin(page: Page, ms: number): Promise<void> {
  await page.route(
    (url) => url.pathname === '/auth/login',
    async (route) => {
      await new Promise((resolve) => setTimeout(resolve, ms))
      await route.continue()
    },
  )
}

describe.skipIf(!hasChromium)('signing in to the dashboard', () => {
  const env = useShopAndBrowser()

  it('sends no call without the token, and gets no 401, on 5 sign-ins in a row from the overview’s address (slow: five sign-ins, each in a new browser context)', async () => {
    // Every other sign-in answers half a second late.
    const delays = [0, 500, 0, 500, 0]
    const rounds: Array<{ unauthorized: string[]; withoutToken: string[] }> = []
    for (const delay of delays) {
      const { context, page } = await openPage(env.browser, env.shop)
      const record = recordApiCalls(page)
      if (delay > 0) await delayLogin(page, delay)
      await page.goto('/admin/')
      await signIn(page)
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
      await page.getByTestId('orders-chart').waitFor()
      // Still signed in, on the overview, with its one call answered.
      expect(page.url()).toMatch(/#\/$/)
      expect(await page.evaluate(() => localStorage.getItem('shop-admin.session'))).not.toBeNull()
      expect(record.calls).toContain('GET /admin/api/stats')
      rounds.push({ unauthorized: record.unauthorized, withoutToken: record.withoutToken })
      await context.close()
    }
    expect(rounds).toEqual(delays.map(() => ({ unauthorized: [], withoutToken: [] })))
  })

  it.each(['/orders', '/users'])('sends no call without the token from a link to #%s, and comes back to it after sign-in', async (hash) => {
    const { context, page } = await openPage(env.browser, env.shop)
    const record = recordApiCalls(page)
    await page.goto(`/admin/#${hash}`)
    await page.waitForURL(/#\/login/)
    await signIn(page)
    await page.waitForURL(new RegExp(`#${hash}`))
    await page.locator('main, [role=main]').first().waitFor()
    await expect.poll(() => record.calls.some((call) => call.startsWith(`GET ${hash === '/users' ? '/auth/users' : hash}`))).toBe(true)
    expect({ unauthorized: record.unauthorized, withoutToken: record.withoutToken }).toEqual({ unauthorized: [], withoutToken: [] })
    await context.close()
  })
})
