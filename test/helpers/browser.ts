import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AxeBuilder } from '@axe-core/playwright'
import type { FastifyInstance } from 'fastify'
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core'
import { buildApp } from '../../src/app.js'
import type { Config } from '../../src/config.js'
import { catalogCacheOn, openTestDatabase, testConfig } from './app.js'
import { afterAll, beforeAll, expect } from 'vitest'

/**
 * The dashboard's browser tests: a real service on a real port serving the built dashboard at /admin (plugins/admin-ui.ts), and a headless
 * Chromium driven by playwright-core. Without Chromium (a laptop) the tests skip, and say why.
 */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const hasChromium = existsSync(chromiumPath)
if (!hasChromium) console.warn(`Dashboard browser tests skipped: no Chromium at ${chromiumPath} (install it, or set CHROMIUM_PATH).`)

const root = join(import.meta.dirname, '..', '..')
export const adminDist = join(root, 'admin', 'dist')
/**
 * Screenshots go to docs/admin/ with ADMIN_SCREENSHOTS=1 (to refresh the docs' pictures), elsewhere to a temporary
 * folder, so that running the tests leaves the working tree as it was.
 */
export const screenshotDir = process.env.ADMIN_SCREENSHOTS === '1' ? join(root, 'docs', 'admin') : join(tmpdir(), 'shop-admin-screenshots')

export const ADMIN = { email: 'owner@shop.test', password: 'owner-password-1', name: 'Shop Owner' }

/** Builds admin/dist once when it is missing (a fresh clone that skipped the install's build). */
export function ensureAdminBuilt(): void {
  if (existsSync(join(adminDist, 'index.html'))) return
  const result = spawnSync(process.execPath, [join(root, 'scripts', 'build-admin.mjs'), '--strict'], { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`The dashboard could not be built: ${result.stdout}${result.stderr}`)
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

export interface Shop {
  app: FastifyInstance
  config: Config
  url: string
  close: () => Promise<void>
}

/** The whole service on a fresh database, listening on 127.0.0.1, with the first admin from ADMIN_EMAIL. */
export async function startShop(env: Record<string, string> = {}): Promise<Shop> {
  ensureAdminBuilt()
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const config = testConfig({
    PUBLIC_URL: url,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    ADMIN_NAME: ADMIN.name,
    AUTH_RATE_LIMIT_MAX: '1000',
    ...env,
  })
  const { handle, drop } = await openTestDatabase()
  const app = await buildApp(config, { database: handle, logger: false, catalogCache: catalogCacheOn })
  await app.listen({ port, host: '127.0.0.1' })
  return {
    app,
    config,
    url,
    close: async () => {
      await app.close()
      await drop()
    },
  }
}

const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** One browser per test file. Playwright starts it with a new, empty user data directory of its own. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, timeout: 30_000 })
}

export const DESKTOP = { width: 1440, height: 900 }
export const PHONE = { width: 390, height: 844 }

/** A fresh context (no session) and its page; `baseURL` is the shop. */
export async function openPage(browser: Browser, shop: Shop, viewport = DESKTOP): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ baseURL: shop.url, viewport, locale: 'en-US', timezoneId: 'UTC' })
  // 30 s: on a slower 2-core VM, with the other test projects running beside the browser's, an element of a page
  // once took past 10 s to appear (catalog-editor's subcategory test, 1 run in 2 there; never alone), and the landing
  // CI's machine runs the suite 2.7 times slower than this project's VM.
  context.setDefaultTimeout(30_000)
  const page = await context.newPage()
  return { context, page }
}

/** Signs in through the form; resolves once the dashboard's menu is there. */
export async function signIn(page: Page, email = ADMIN.email, password = ADMIN.password): Promise<void> {
  if (!page.url().includes('/admin')) await page.goto('/admin/')
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

/**
 * Scrolls `target` into view, again if a re-render replaced its element meanwhile (Playwright answers "Element is not
 * attached to the DOM" then; a CI run met it on a product page still loading).
 */
export async function scrollIntoView(target: Locator): Promise<void> {
  const scrolled = () =>
    target.scrollIntoViewIfNeeded({ timeout: 5_000 }).then(
      () => true,
      () => false,
    )
  await expect.poll(scrolled, { timeout: 30_000 }).toBe(true)
}

/**
 * Waits until no animation or transition is running on the page (a notice fading in or out): axe reads colours as
 * drawn, and a half-transparent notice reads as text of too low a contrast.
 */
export async function animationsDone(page: Page): Promise<void> {
  await page.waitForFunction(() => document.getAnimations().every((animation) => animation.playState !== 'running'), undefined, { timeout: 10_000 })
}

/** axe-core (WCAG 2.0/2.1 A and AA) on the page as it stands: every violation, whatever its impact. */
export async function violations(page: Page): Promise<string[]> {
  await animationsDone(page)
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze()
  return result.violations.map(
    (violation) => `${violation.id} (${violation.impact}): ${violation.help} — ${violation.nodes.map((node) => node.html.slice(0, 160)).join(', ')}`,
  )
}

/** The elements that stick out of the viewport's width (none when the page fits), named. */
export function sticksOut(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth
    const wide = (element: Element) => element.getBoundingClientRect().right > width + 0.5
    const named = [...document.querySelectorAll('body *')]
      .filter((element) => wide(element) && ![...element.children].some(wide))
      .slice(0, 8)
      .map((element) => `${element.tagName.toLowerCase()}.${[...element.classList].slice(0, 3).join('.')} ${element.textContent?.slice(0, 40)}`)
    return document.documentElement.scrollWidth > width ? [`scrollWidth ${document.documentElement.scrollWidth}`, ...named] : []
  })
}

/** axe-core on the page as it stands (WCAG 2.0/2.1 A and AA): the serious and critical violations, described. */
export async function seriousViolations(page: Page): Promise<string[]> {
  await animationsDone(page)
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze()
  return result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help} — ${violation.nodes.map((node) => `${node.target.join(' ')} ${node.html.slice(0, 160)}`).join(', ')}`,
    )
}

/** A screenshot of the page as it stands (1440 px in the tests), into screenshotDir. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true })
  await page.screenshot({ path: join(screenshotDir, `${name}.png`), fullPage: false })
}

/** A shop and a browser for a file or a describe: started before its tests, closed after; the fields fill in at start. */
export function useShopAndBrowser(env: Record<string, string> = {}): { shop: Shop; browser: Browser } {
  const used = {} as { shop: Shop; browser: Browser }
  beforeAll(async () => {
    ;[used.shop, used.browser] = await Promise.all([startShop(env), launchBrowser()])
  })
  afterAll(async () => {
    await used.browser?.close()
    await used.shop?.close()
  })
  return used
}
