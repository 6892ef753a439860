// The scenarios. Each measures the service against its yardstick in the same run (the
// baseline server, the same work without the storm, or the same SQL without HTTP) and says, per
// target of issue 5, whether it is met.
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'kysely'
import { connectDatabase } from '../src/db/connect.js'
import type { DirectCheckoutSpec } from './direct-checkout.js'
import { alternate, measure, pairedRatio, type Summary, summarize } from './measure.js'
import { type RunningServer, rssMiB, runChild, startBaseline, startService } from './processes.js'
import { recordResponses, sendRequest } from './recording.js'
import { ADMIN_EMAIL, createFreshDatabase, dropDatabase, importFacetsBench, type SeededShop, seedShop } from './seed.js'
import type { DbKind, DirectCheckoutResult, LoadSpec, RequestSpec, Sample } from './types.js'
import { startSmtpFake } from '../test/fakes/smtp-server.js'
import { intentEvent, signedHeaders, startStripeFake, webhookSecret } from '../test/fakes/stripe-fake.js'
import { startWebhookReceiver } from '../test/fakes/webhook-receiver.js'

export const SCENARIOS = [
  'catalog-list',
  'catalog-item',
  'catalog-filter',
  'catalog-facets',
  'cart-view',
  'checkout',
  'checkout-shipping',
  'checkout-eu',
  'webhook',
  'after-sale',
  'outbox',
  'login-storm',
  'upload',
  'admin-write',
  'csv',
] as const
export type ScenarioName = (typeof SCENARIOS)[number]

export interface Settings {
  quick: boolean
  /** Length of one measured window. */
  seconds: number
  warmupSeconds: number
  /** Windows per contender (at least 3). */
  rounds: number
  /** Concurrent connections of the read scenarios. */
  connections: number
  uploadsPerRound: number
}

/** A running service on a seeded database. */
export interface Shop {
  kind: DbKind
  databaseUrl: string
  service: RunningServer
  seeded: SeededShop
  scratchDir: string
}

/** One line of the results table. */
export interface Row {
  scenario: ScenarioName
  server: string
  summary: Summary
  /** The comparison with the yardstick, in words ("0.74× req/s, 1.6× p99"). */
  versus: string
}

export interface TargetCheck {
  scenario: ScenarioName
  target: string
  measured: string
  met: boolean
}

export interface ScenarioResult {
  name: ScenarioName
  rows: Row[]
  targets: TargetCheck[]
  notes: string[]
  samples: Record<string, Sample[]>
  /** Figures other scenarios compare with (catalog-item's rate). */
  figures?: Record<string, number>
}

const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a')

/** Logs the customers in over HTTP, as a client would, a few at a time. */
export async function logIn(origin: string, emails: readonly string[], password: string): Promise<string[]> {
  const tokens: string[] = new Array(emails.length)
  let next = 0
  const worker = async () => {
    for (let i = next++; i < emails.length; i = next++) {
      const response = await sendRequest(origin, {
        method: 'POST',
        path: '/auth/login',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: emails[i], password }),
      })
      if (response.status !== 200) throw new Error(`login of ${emails[i]}: ${response.status} ${response.body.toString()}`)
      tokens[i] = (JSON.parse(response.body.toString()) as { token: string }).token
    }
  }
  await Promise.all(Array.from({ length: 4 }, worker))
  return tokens
}

/** Up to `count` distinct ids, spread over the whole range. */
function spreadIds(ids: readonly number[], count: number): number[] {
  if (ids.length <= count) return [...ids]
  const step = ids.length / count
  return Array.from({ length: count }, (_, i) => ids[Math.floor(i * step)] as number)
}

function versusBaseline(service: Summary, baseline: Summary): string {
  return `${fixed(service.rps / baseline.rps)}× req/s, ${fixed(service.p99 / baseline.p99, 1)}× p99`
}

function checkNoErrors(label: string, summary: Summary, notes: string[]): void {
  if (summary.non2xx > 0 || summary.errors > 0) {
    notes.push(`${label}: ${summary.non2xx} non-2xx responses and ${summary.errors} connection errors out of ${summary.requests}`)
  }
}

/**
 * The service against a baseline answering the service's own recorded bytes, alternately.
 * `rpsGoal`/`p99Goal` are issue 5's targets (ratio to the baseline), when the scenario has them.
 */
async function againstBaseline(
  name: ScenarioName,
  shop: Shop,
  settings: Settings,
  requests: RequestSpec[],
  goals: { rps?: number; p99?: number } = {},
  /** Also measure a bare Fastify answering the same bytes: the framework's own ceiling. */
  withBareFastify = false,
): Promise<ScenarioResult> {
  const recordings = await recordResponses(shop.service.origin, requests)
  const baseline = await startBaseline(recordings, shop.scratchDir)
  const bareFastify = withBareFastify ? await startBaseline(recordings, shop.scratchDir, 'fastify') : undefined
  const load = { connections: settings.connections, requests }
  try {
    const [serviceSamples = [], baselineSamples = [], fastifySamples = []] = await alternate(
      [
        { run: (seconds: number) => measure(shop.service, { ...load, durationSeconds: seconds }) },
        { run: (seconds: number) => measure(baseline, { ...load, durationSeconds: seconds }) },
        ...(bareFastify ? [{ run: (seconds: number) => measure(bareFastify, { ...load, durationSeconds: seconds }) }] : []),
      ],
      settings.rounds,
      settings.seconds,
      settings.warmupSeconds,
    )
    const service = summarize(serviceSamples)
    const base = summarize(baselineSamples)
    const notes: string[] = []
    checkNoErrors(`${name} service`, service, notes)
    checkNoErrors(`${name} baseline`, base, notes)
    const targets: TargetCheck[] = []
    if (goals.rps !== undefined) {
      const ratio = service.rps / base.rps
      targets.push({ scenario: name, target: `req/s ≥ ${goals.rps} × baseline`, measured: `${fixed(ratio)}×`, met: ratio >= goals.rps })
    }
    if (goals.p99 !== undefined) {
      const ratio = service.p99 / base.p99
      targets.push({ scenario: name, target: `p99 ≤ ${goals.p99} × baseline`, measured: `${fixed(ratio)}×`, met: ratio <= goals.p99 })
    }
    return {
      name,
      rows: [
        { scenario: name, server: 'service', summary: service, versus: versusBaseline(service, base) },
        { scenario: name, server: 'baseline', summary: base, versus: '1.00× (yardstick)' },
        ...(bareFastify
          ? [
              {
                scenario: name,
                server: 'bare Fastify, same bytes',
                summary: summarize(fastifySamples),
                versus: versusBaseline(summarize(fastifySamples), base),
              },
            ]
          : []),
      ],
      targets,
      notes,
      samples: { service: serviceSamples, baseline: baselineSamples, ...(bareFastify ? { bareFastify: fastifySamples } : {}) },
      figures: { serviceRps: service.rps, serviceP99: service.p99 },
    }
  } finally {
    await baseline.stop()
    await bareFastify?.stop()
  }
}

function itemRequests(shop: Shop): RequestSpec[] {
  return spreadIds(shop.seeded.catalogProductIds, 1000).map((id) => ({ method: 'GET', path: `/products/${id}` }))
}

export function catalogList(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  return againstBaseline('catalog-list', shop, settings, [{ method: 'GET', path: '/products?limit=100' }], { rps: 0.7, p99: 2 })
}

export async function catalogItem(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const result = await againstBaseline('catalog-item', shop, settings, itemRequests(shop), { rps: 0.7, p99: 2 }, true)
  const coherence = await checkCacheCoherence(shop)
  result.targets.push(...coherence.targets)
  result.notes.push(...coherence.notes)
  return result
}

export async function cartView(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const tokens = await logIn(shop.service.origin, shop.seeded.cartCustomerEmails, shop.seeded.password)
  const requests = tokens.map((token) => ({ method: 'GET', path: '/cart', headers: { authorization: `Bearer ${token}` } }))
  return againstBaseline('cart-view', shop, settings, requests)
}

/**
 * `requests` on the service, the same on a baseline answering their recorded bytes, and catalog-item on the same
 * shop, in turn (requests, baseline, item, requests, baseline, item …): the three summaries and their samples, with
 * any errors noted.
 */
async function againstBaselineAndItem(label: string, shop: Shop, settings: Settings, requests: RequestSpec[], notes: string[]) {
  const items = itemRequests(shop)
  const recordings = await recordResponses(shop.service.origin, requests)
  const baseline = await startBaseline(recordings, shop.scratchDir)
  const load = (server: RunningServer, specs: RequestSpec[]) => (seconds: number) =>
    measure(server, { connections: settings.connections, requests: specs, durationSeconds: seconds })
  try {
    const [serviceSamples = [], baselineSamples = [], itemSamples = []] = await alternate(
      [{ run: load(shop.service, requests) }, { run: load(baseline, requests) }, { run: load(shop.service, items) }],
      settings.rounds,
      settings.seconds,
      settings.warmupSeconds,
    )
    const service = summarize(serviceSamples)
    const item = summarize(itemSamples)
    checkNoErrors(`${label} service`, service, notes)
    checkNoErrors(`catalog-item (${label}'s shop) service`, item, notes)
    return { service, base: summarize(baselineSamples), item, samples: { service: serviceSamples, baseline: baselineSamples, item: itemSamples } }
  } finally {
    await baseline.stop()
  }
}

/** The filter on the large shop, against its baseline and against catalog-item on the same shop, in turn. */
export async function catalogFilter(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'catalog-filter'
  const requests = shop.seeded.categoryIds.map((id) => ({
    method: 'GET',
    path: `/products?categoryId=${id}&sort=price_asc&limit=20`,
  }))
  const notes: string[] = []
  const { service: filter, base, item, samples } = await againstBaselineAndItem(name, shop, settings, requests, notes)
  const ratio = filter.rps / item.rps
  const products = shop.seeded.productIds.length.toLocaleString('en-US')
  return {
    name,
    rows: [
      { scenario: name, server: 'service', summary: filter, versus: `${versusBaseline(filter, base)}; ${fixed(ratio)}× catalog-item` },
      { scenario: name, server: 'baseline', summary: base, versus: '1.00× (yardstick)' },
      { scenario: name, server: `service, catalog-item on ${products}`, summary: item, versus: 'yardstick of the filter' },
    ],
    targets: [{ scenario: name, target: `req/s ≥ 0.5 × catalog-item (${products} products)`, measured: `${fixed(ratio)}×`, met: ratio >= 0.5 }],
    notes,
    samples,
  }
}

/** Sequential requests going round `paths` after 10 of warm-up: their latency (ms), as a Summary of one window. */
async function sequential(server: RunningServer, paths: readonly string[], n: number): Promise<Summary> {
  const get = async (path: string) => {
    const res = await fetch(`${server.origin}${path}`)
    const body = await res.text()
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${body.slice(0, 200)}`)
  }
  for (let i = 0; i < 10; i += 1) await get(paths[i % paths.length]!)
  const times: number[] = []
  const started = performance.now()
  for (let i = 0; i < n; i += 1) {
    const t0 = performance.now()
    await get(paths[i % paths.length]!)
    times.push(performance.now() - t0)
  }
  const seconds = (performance.now() - started) / 1000
  times.sort((a, b) => a - b)
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!
  return { rounds: 1, rps: n / seconds, p50: at(0.5), p99: at(0.99), bytesPerResponse: 0, peakRssMiB: rssMiB(server.pid), requests: n, non2xx: 0, errors: 0 }
}

/**
 * Issue 20's figures on its own shop (100,000 products, 20 % with three options and 24–100 variants; `seedVariantsShop`):
 * - cached, `GET /products/facets` with the target filter (a root category with its descendants, a colour, a price
 *   range, in stock) against its baseline and against catalog-item on the same shop, in turn: req/s ≥ 0.5 ×
 *   catalog-item;
 * - uncached (a second service on the same database with its read cache off), the list and the facets with the
 *   target filter, one request at a time: p99 ≤ 25 ms and ≤ 50 ms.
 */
export async function catalogFacets(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'catalog-facets'
  const { targetFilter } = await importFacetsBench()
  const facets = targetFilter('/products/facets').map((path) => ({ method: 'GET', path }))
  const notes: string[] = []
  const { service: cached, base, item, samples } = await againstBaselineAndItem(name, shop, settings, facets, notes)
  // Started once the cached windows are over, so that no second instance runs beside them.
  const uncached = await startService({
    databaseUrl: shop.databaseUrl,
    dataDir: join(shop.scratchDir, 'data-uncached'),
    uploadDir: join(shop.scratchDir, 'uploads-uncached'),
    jwtSecret: randomBytes(48).toString('base64url'),
    env: { CATALOG_CACHE_MAX_BYTES: '0' },
  })
  try {
    const n = settings.quick ? 100 : 300
    const list = await sequential(uncached, targetFilter('/products'), n)
    const facetsUncached = await sequential(uncached, targetFilter('/products/facets'), n)
    const ratio = cached.rps / item.rps
    const products = shop.seeded.catalogProductIds.length.toLocaleString('en-US')
    notes.push(`catalog-facets: ${products} products; the uncached rows are ${n} requests one at a time to a second service with CATALOG_CACHE_MAX_BYTES=0`)
    return {
      name,
      rows: [
        { scenario: name, server: 'service, facets, cached', summary: cached, versus: `${versusBaseline(cached, base)}; ${fixed(ratio)}× catalog-item` },
        { scenario: name, server: 'baseline', summary: base, versus: '1.00× (yardstick)' },
        { scenario: name, server: `service, catalog-item on ${products}`, summary: item, versus: 'yardstick of the facets' },
        { scenario: name, server: 'uncached list, one at a time', summary: list, versus: `p99 ${fixed(list.p99, 1)} ms` },
        { scenario: name, server: 'uncached facets, one at a time', summary: facetsUncached, versus: `p99 ${fixed(facetsUncached.p99, 1)} ms` },
      ],
      targets: [
        { scenario: name, target: `cached facets req/s ≥ 0.5 × catalog-item (${products} products)`, measured: `${fixed(ratio)}×`, met: ratio >= 0.5 },
        { scenario: name, target: 'uncached filtered list p99 ≤ 25 ms', measured: `${fixed(list.p99, 1)} ms`, met: list.p99 <= 25 },
        { scenario: name, target: 'uncached facets p99 ≤ 50 ms', measured: `${fixed(facetsUncached.p99, 1)} ms`, met: facetsUncached.p99 <= 50 },
      ],
      notes,
      samples,
    }
  } finally {
    await uncached.stop()
  }
}

/** catalog-item alone, then catalog-item while 16 connections log in without pause, alternately. */
export async function loginStorm(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'login-storm'
  const items = itemRequests(shop)
  const logins: RequestSpec[] = shop.seeded.cartCustomerEmails.map((email) => ({
    method: 'POST',
    path: '/auth/login',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: shop.seeded.password }),
  }))
  const stormSamples: Sample[] = []
  const withStorm = async (seconds: number): Promise<Sample> => {
    // The storm starts first and ends last, so the whole catalog window runs inside it.
    const storm = measure(shop.service, { connections: 16, requests: logins, durationSeconds: seconds + 1.5 })
    await new Promise((resolve) => setTimeout(resolve, 700))
    const sample = await measure(shop.service, { connections: settings.connections, requests: items, durationSeconds: seconds })
    stormSamples.push(await storm)
    return sample
  }
  const [calmSamples = [], stormySamples = []] = await alternate(
    [{ run: (seconds) => measure(shop.service, { connections: settings.connections, requests: items, durationSeconds: seconds }) }, { run: withStorm }],
    settings.rounds,
    settings.seconds,
    settings.warmupSeconds,
  )
  const calm = summarize(calmSamples)
  const stormy = summarize(stormySamples)
  const storm = summarize(stormSamples.slice(1)) // the first storm was the warm-up
  const notes: string[] = []
  checkNoErrors('login-storm catalog-item', stormy, notes)
  checkNoErrors('login-storm logins', storm, notes)
  const ratio = stormy.p99 / calm.p99
  return {
    name,
    rows: [
      { scenario: name, server: 'service, catalog-item, no storm', summary: calm, versus: 'yardstick' },
      {
        scenario: name,
        server: 'service, catalog-item, during storm',
        summary: stormy,
        versus: `${fixed(ratio, 1)}× p99, ${fixed(stormy.rps / calm.rps)}× req/s`,
      },
      { scenario: name, server: 'service, the 16 logins', summary: storm, versus: '' },
    ],
    targets: [{ scenario: name, target: 'catalog-item p99 during storm ≤ 3 × without', measured: `${fixed(ratio, 2)}×`, met: ratio <= 3 }],
    notes,
    samples: { calm: calmSamples, stormy: stormySamples, storm: stormSamples },
  }
}

interface CheckoutLedger {
  orders: number
  orderUnits: number
  stock: number
  badTotals: number
  negativeStock: number
}

async function readLedger(databaseUrl: string): Promise<CheckoutLedger> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    const orders = await db
      .selectFrom('orders')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    const units = await db
      .selectFrom('order_items')
      .select((eb) => eb.fn.sum<number>('quantity').as('n'))
      .executeTakeFirstOrThrow()
    const stock = await db
      .selectFrom('products')
      .select((eb) => eb.fn.sum<number>('stock').as('n'))
      .executeTakeFirstOrThrow()
    const negative = await db
      .selectFrom('products')
      .where('stock', '<', 0)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    // Orders whose total is not the sum of their lines, less the discount, plus shipping (and plus the tax when
    // prices exclude it).
    const totals = await db
      .selectFrom('orders')
      .leftJoin('order_items', 'order_items.order_id', 'orders.id')
      .groupBy([
        'orders.id',
        'orders.total_cents',
        'orders.shipping_cents',
        'orders.discount_total_cents',
        'orders.tax_total_cents',
        'orders.prices_include_tax',
      ])
      .having(
        sql<boolean>`coalesce(sum(order_items.price_cents * order_items.quantity), 0) <> orders.total_cents
          - coalesce(orders.shipping_cents, 0) + coalesce(orders.discount_total_cents, 0)
          - (case when orders.prices_include_tax = 0 then coalesce(orders.tax_total_cents, 0) else 0 end)`,
      )
      .select('orders.id')
      .execute()
    return {
      orders: Number(orders.n),
      orderUnits: Number(units.n ?? 0),
      stock: Number(stock.n ?? 0),
      badTotals: totals.length,
      negativeStock: Number(negative.n),
    }
  } finally {
    await db.destroy()
  }
}

/** Empties the customers' carts, and forgets the choices kept on them (a code applied just before a window closed). */
async function clearCarts(databaseUrl: string, userIds: number[]): Promise<void> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    await db.deleteFrom('cart_items').where('user_id', 'in', userIds).execute()
    await db
      .updateTable('carts')
      .set({ email: null, shipping_address_id: null, shipping_address: null, shipping_method_id: null, note: null, discount_code: null })
      .where('user_id', 'in', userIds)
      .execute()
  } finally {
    await db.destroy()
  }
}

async function userIdsOf(databaseUrl: string, emails: string[]): Promise<number[]> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    const rows = await db.selectFrom('users').select(['id', 'email']).where('email', 'in', emails).execute()
    const byEmail = new Map(rows.map((r) => [r.email, r.id]))
    return emails.map((email) => byEmail.get(email) as number)
  } finally {
    await db.destroy()
  }
}

/**
 * 32 customers, each looping add-to-cart then POST /orders, against the same two service calls
 * driven directly (no HTTP, no auth) with the same concurrency, alternately. Afterwards the
 * books must balance: stock sold = units ordered, orders = successful checkouts, totals = lines.
 */
export async function checkout(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'checkout'
  const emails = shop.seeded.checkoutCustomerEmails
  const tokens = await logIn(shop.service.origin, emails, shop.seeded.password)
  const userIds = await userIdsOf(shop.databaseUrl, emails)
  const productIds = shop.seeded.productIds
  const before = await readLedger(shop.databaseUrl)

  const directSamples: Sample[] = []
  let httpOrders = 0
  let httpWindows = 0
  let directOrders = 0
  let directFailures = 0
  const overHttp = async (seconds: number): Promise<Sample> => {
    await clearCarts(shop.databaseUrl, userIds)
    const sample = await measure(shop.service, {
      connections: tokens.length,
      requests: [],
      durationSeconds: seconds,
      checkout: { tokens, productIds },
    })
    httpOrders += sample.orders ?? 0
    httpWindows += 1
    return sample
  }
  const direct = async (seconds: number): Promise<Sample> => {
    await clearCarts(shop.databaseUrl, userIds)
    const result = await runChild<DirectCheckoutSpec, DirectCheckoutResult>('direct-checkout.ts', {
      databaseUrl: shop.databaseUrl,
      userIds,
      productIds,
      seconds,
    })
    directOrders += result.orders
    directFailures += result.failures
    const sample: Sample = {
      requests: result.orders,
      seconds: result.seconds,
      rps: result.ordersPerSecond,
      p50: Number.NaN,
      p99: Number.NaN,
      bytesPerResponse: Number.NaN,
      statuses: {},
      non2xx: 0,
      errors: result.failures,
      timeouts: 0,
      orders: result.orders,
      ordersPerSecond: result.ordersPerSecond,
      peakRssMiB: Number.NaN,
    }
    directSamples.push(sample)
    return sample
  }
  const [httpSamples = [], directRounds = []] = await alternate([{ run: overHttp }, { run: direct }], settings.rounds, settings.seconds, settings.warmupSeconds)
  await clearCarts(shop.databaseUrl, userIds)
  const after = await readLedger(shop.databaseUrl)

  const http = summarize(httpSamples)
  const sql = summarize(directRounds)
  const ratio = (http.ordersPerSecond ?? 0) / (sql.ordersPerSecond ?? Number.NaN)
  const notes: string[] = []
  const newOrders = after.orders - before.orders
  const unitsSold = before.stock - after.stock
  const newUnits = after.orderUnits - before.orderUnits
  // A window ends with up to one order per connection in flight: written, its 201 never read.
  const unread = newOrders - httpOrders - directOrders
  const balanced = unread >= 0 && unread <= tokens.length * httpWindows && unitsSold === newUnits && after.badTotals === 0 && after.negativeStock === 0
  notes.push(
    `checkout books ${balanced ? 'balance' : 'DO NOT balance'}: ${unitsSold} units left stock and ${newUnits} units were ordered; ` +
      `${newOrders} new orders = ${httpOrders} HTTP 201s + ${directOrders} direct + ${unread} in flight when a window closed (at most ${tokens.length} per window); ` +
      `${after.badTotals} orders whose total ≠ Σ lines; ${after.negativeStock} products below 0 stock`,
  )
  if (directFailures > 0) notes.push(`checkout direct: ${directFailures} failed loops`)
  checkNoErrors('checkout service', http, notes)
  return {
    name,
    rows: [
      { scenario: name, server: 'service (HTTP)', summary: http, versus: `${fixed(http.ordersPerSecond ?? Number.NaN, 0)} orders/s = ${fixed(ratio)}× direct` },
      { scenario: name, server: 'same service calls, no HTTP', summary: sql, versus: `${fixed(sql.ordersPerSecond ?? Number.NaN, 0)} orders/s (yardstick)` },
    ],
    targets: [
      { scenario: name, target: 'orders/s ≥ 0.5 × direct SQL', measured: `${fixed(ratio)}×`, met: ratio >= 0.5 },
      { scenario: name, target: 'stock and orders add up', measured: balanced ? 'yes' : 'no', met: balanced },
    ],
    notes,
    samples: { service: httpSamples, direct: directRounds },
  }
}

/** A multipart product create with an image of exactly 5 MiB (the largest the API accepts). */
function writeUploadBody(scratchDir: string, categoryId: number | undefined): { file: string; boundary: string } {
  const boundary = `----bench${randomBytes(8).toString('hex')}`
  const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
  const image = randomBytes(5 * 1024 * 1024)
  // A JPEG signature, in case the host looks at the bytes.
  image.set([0xff, 0xd8, 0xff, 0xe0], 0)
  const head =
    field('name', 'Bench upload') +
    field('description', 'Uploaded by the benchmark') +
    field('price', '19.99') +
    field('stock', '5') +
    (categoryId !== undefined ? field('categoryId', String(categoryId)) : '') +
    `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="photo.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`
  const file = join(scratchDir, 'upload-body.bin')
  writeFileSync(file, Buffer.concat([Buffer.from(head), image, Buffer.from(`\r\n--${boundary}--\r\n`)]))
  return { file, boundary }
}

/** 10 concurrent 5 MiB product creates; the service's peak memory over its idle memory. */
export async function upload(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'upload'
  const [token] = await logIn(shop.service.origin, [shop.seeded.adminEmail], shop.seeded.password)
  const { file, boundary } = writeUploadBody(shop.scratchDir, shop.seeded.categoryIds[0])
  const spec: Omit<LoadSpec, 'url'> = {
    connections: 10,
    amount: settings.uploadsPerRound,
    bodyFile: file,
    requests: [
      {
        method: 'POST',
        path: '/products',
        headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      },
    ],
  }
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const idle = rssMiB(shop.service.pid)
  const samples: Sample[] = []
  for (let round = 0; round < settings.rounds; round++) samples.push(await measure(shop.service, spec))
  const summary = summarize(samples)
  const growth = summary.peakRssMiB - idle
  const notes: string[] = []
  checkNoErrors('upload service', summary, notes)
  const created = samples.reduce((sum, s) => sum + (s.statuses['201'] ?? 0), 0)
  notes.push(`upload: idle RSS ${fixed(idle, 0)} MiB before the first upload; ${created} products created with 5 MiB images`)
  return {
    name,
    rows: [{ scenario: name, server: 'service', summary, versus: `peak ${fixed(growth, 0)} MiB above idle (${fixed(idle, 0)} MiB)` }],
    targets: [{ scenario: name, target: 'peak memory ≤ idle + 150 MB', measured: `+${fixed(growth * 1.048576, 0)} MB`, met: growth * 1.048576 <= 150 }],
    notes,
    samples: { service: samples },
    figures: { idleRssMiB: idle },
  }
}

/**
 * The cache's promise, checked on two running instances of the service on one database: a write
 * shows on the very next read of the instance that made it, and on the other instance soon after
 * (the delay is measured from the write's response to the first read on the other instance that
 * shows it, reading every 2 ms).
 */
export async function checkCacheCoherence(shop: Shop, writes = 20): Promise<{ targets: TargetCheck[]; notes: string[] }> {
  const other = await startService({
    databaseUrl: shop.databaseUrl,
    dataDir: join(shop.scratchDir, 'data-second-instance'),
    uploadDir: join(shop.scratchDir, 'uploads-second-instance'),
    jwtSecret: randomBytes(48).toString('base64url'),
  })
  try {
    const [token] = await logIn(shop.service.origin, [shop.seeded.adminEmail], shop.seeded.password)
    const id = shop.seeded.productIds[0] as number
    const path = `/products/${id}`
    const nameAt = async (origin: string) => (JSON.parse((await sendRequest(origin, { method: 'GET', path })).body.toString()) as { name: string }).name
    let sameInstanceStale = 0
    const delays: number[] = []
    for (let i = 0; i < writes; i++) {
      // Both instances have the product in their caches (if they cache).
      await nameAt(shop.service.origin)
      await nameAt(other.origin)
      await nameAt(other.origin)
      const name = `Coherence check ${i} ${randomBytes(3).toString('hex')}`
      const update = await sendRequest(shop.service.origin, {
        method: 'PUT',
        path,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      })
      if (update.status !== 200) throw new Error(`PUT ${path}: ${update.status} ${update.body.toString()}`)
      const written = performance.now()
      if ((await nameAt(shop.service.origin)) !== name) sameInstanceStale += 1
      for (;;) {
        if ((await nameAt(other.origin)) === name) break
        if (performance.now() - written > 10_000) break
        await new Promise((resolve) => setTimeout(resolve, 2))
      }
      delays.push(performance.now() - written)
    }
    delays.sort((a, b) => a - b)
    const worst = delays[delays.length - 1] ?? Number.NaN
    const middle = delays[Math.floor(delays.length / 2)] ?? Number.NaN
    return {
      targets: [
        {
          scenario: 'catalog-item',
          target: 'cache: the writing instance shows a write on its next read',
          measured: `${writes - sameInstanceStale}/${writes}`,
          met: sameInstanceStale === 0,
        },
        { scenario: 'catalog-item', target: 'cache: another instance shows it within 100 ms', measured: `max ${fixed(worst, 1)} ms`, met: worst <= 100 },
      ],
      notes: [
        `cache coherence, two instances on one ${shop.kind === 'postgres' ? 'PostgreSQL' : 'SQLite'} database, ${writes} writes: ` +
          `the other instance showed each write after ${fixed(middle, 1)} ms (median), ${fixed(worst, 1)} ms (max)`,
      ],
    }
  } finally {
    await other.stop()
  }
}

/**
 * The plain checkout against the checkout with shipping, alternately, over HTTP with the same 32 customers: each
 * loops add-to-cart then POST /orders, with `{shippingAddressId, shippingMethodId}` in the shipping windows. One
 * shipping method (free over nothing, every country) is switched on for the shipping windows and off for the plain
 * ones (a shop with an active method requires an address), and removed at the end.
 */
export async function checkoutShipping(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'checkout-shipping'
  const emails = shop.seeded.checkoutCustomerEmails
  const tokens = await logIn(shop.service.origin, emails, shop.seeded.password)
  const userIds = await userIdsOf(shop.databaseUrl, emails)
  const productIds = shop.seeded.productIds
  const before = await readLedger(shop.databaseUrl)

  const { db } = connectDatabase(shop.databaseUrl, { poolSize: 1 })
  const now = new Date().toISOString()
  let methodId: number
  const orderBodies: string[] = []
  try {
    methodId = (
      await db
        .insertInto('shipping_methods')
        .values({ name: 'Bench post', price_cents: 490, countries: '[]', free_over_cents: null, active: 0, created_at: now, updated_at: now })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id
    for (const userId of userIds) {
      const address = await db
        .insertInto('addresses')
        .values({
          user_id: userId,
          full_name: 'Bench Customer',
          line1: 'Calle Mayor 1',
          line2: null,
          city: 'Madrid',
          region: null,
          postal_code: '28013',
          country: 'ES',
          phone: null,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
      orderBodies.push(JSON.stringify({ shippingAddressId: address.id, shippingMethodId: methodId }))
    }
  } finally {
    await db.destroy()
  }
  const setActive = async (active: 0 | 1) => {
    const handle = connectDatabase(shop.databaseUrl, { poolSize: 1 })
    try {
      await handle.db.updateTable('shipping_methods').set({ active }).where('id', '=', methodId).execute()
    } finally {
      await handle.db.destroy()
    }
  }

  let httpOrders = 0
  let httpWindows = 0
  const window = (shipping: boolean) => async (seconds: number) => {
    await clearCarts(shop.databaseUrl, userIds)
    await setActive(shipping ? 1 : 0)
    const sample = await measure(shop.service, {
      connections: tokens.length,
      requests: [],
      durationSeconds: seconds,
      checkout: { tokens, productIds, ...(shipping ? { orderBodies } : {}) },
    })
    httpOrders += sample.orders ?? 0
    httpWindows += 1
    return sample
  }
  const [plainSamples = [], shippingSamples = []] = await alternate(
    [{ run: window(false) }, { run: window(true) }],
    settings.rounds,
    settings.seconds,
    settings.warmupSeconds,
  )
  await clearCarts(shop.databaseUrl, userIds)
  const cleanup = connectDatabase(shop.databaseUrl, { poolSize: 1 })
  let shippedOrders: number
  try {
    const row = await cleanup.db
      .selectFrom('orders')
      .where('shipping_method', 'is not', null)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    shippedOrders = Number(row.n)
    // The method goes, so later scenarios see a shop without shipping; the orders keep their snapshots.
    await cleanup.db.deleteFrom('shipping_methods').where('id', '=', methodId).execute()
    await cleanup.db.deleteFrom('addresses').where('user_id', 'in', userIds).execute()
  } finally {
    await cleanup.db.destroy()
  }
  const after = await readLedger(shop.databaseUrl)

  const plain = summarize(plainSamples)
  const shipped = summarize(shippingSamples)
  const ratio = (shipped.ordersPerSecond ?? 0) / (plain.ordersPerSecond ?? Number.NaN)
  const newOrders = after.orders - before.orders
  const unitsSold = before.stock - after.stock
  const newUnits = after.orderUnits - before.orderUnits
  const unread = newOrders - httpOrders
  const balanced = unread >= 0 && unread <= tokens.length * httpWindows && unitsSold === newUnits && after.badTotals === 0 && after.negativeStock === 0
  const notes = [
    `checkout-shipping books ${balanced ? 'balance' : 'DO NOT balance'}: ${unitsSold} units left stock and ${newUnits} were ordered; ` +
      `${newOrders} new orders (${shippedOrders} with shipping in the database) = ${httpOrders} HTTP 201s + ${unread} in flight; ` +
      `${after.badTotals} orders whose total ≠ Σ lines + shipping`,
  ]
  checkNoErrors('plain checkout', plain, notes)
  checkNoErrors('checkout with shipping', shipped, notes)
  return {
    name,
    rows: [
      {
        scenario: name,
        server: 'plain checkout (add, view cart, order)',
        summary: plain,
        versus: `${fixed(plain.ordersPerSecond ?? Number.NaN, 0)} orders/s (yardstick)`,
      },
      {
        scenario: name,
        server: 'checkout with address + method',
        summary: shipped,
        versus: `${fixed(shipped.ordersPerSecond ?? Number.NaN, 0)} orders/s = ${fixed(ratio)}× plain`,
      },
    ],
    targets: [
      { scenario: name, target: 'orders/s ≥ 0.8 × plain checkout', measured: `${fixed(ratio)}×`, met: ratio >= 0.8 },
      { scenario: name, target: 'stock and orders add up', measured: balanced ? 'yes' : 'no', met: balanced },
    ],
    notes,
    samples: { plain: plainSamples, shipping: shippingSamples },
  }
}

/** What checkout-eu's orders show after the run: those of its EU windows, the code's uses, taxes in the plain ones. */
interface EuBooks {
  /** New orders holding a discount (the EU windows'). */
  discounted: number
  /** Of those, the ones taxed in ES, with a discount above 0, an address and a method. */
  complete: number
  /** New orders without a discount that carry tax or shipping (should be none: the plain windows'). */
  plainWithExtras: number
  redemptions: number
}

async function readEuBooks(databaseUrl: string, afterOrderId: number, codeId: number): Promise<EuBooks> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    const count = (row: { n: number | string | bigint }) => Number(row.n)
    const discounted = await db
      .selectFrom('orders')
      .where('id', '>', afterOrderId)
      .where('discount', 'is not', null)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    const complete = await db
      .selectFrom('orders')
      .where('id', '>', afterOrderId)
      .where('discount', 'is not', null)
      .where('discount_total_cents', '>', 0)
      .where('tax_country', '=', 'ES')
      .where('tax_total_cents', '>', 0)
      .where('shipping_address', 'is not', null)
      .where('shipping_method', 'is not', null)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    const plainWithExtras = await db
      .selectFrom('orders')
      .where('id', '>', afterOrderId)
      .where('discount', 'is', null)
      .where((eb) => eb.or([eb('tax_total_cents', '>', 0), eb('shipping_method', 'is not', null)]))
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    // The orders holding a use of the code: its redemptions.
    const redemptions = await db
      .selectFrom('orders')
      .where('discount_code_id', '=', codeId)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    return {
      discounted: count(discounted),
      complete: count(complete),
      plainWithExtras: count(plainWithExtras),
      redemptions: count(redemptions),
    }
  } finally {
    await db.destroy()
  }
}

async function lastOrderId(databaseUrl: string): Promise<number> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    const row = await db
      .selectFrom('orders')
      .select((eb) => eb.fn.max('id').as('id'))
      .executeTakeFirst()
    return Number(row?.id ?? 0)
  } finally {
    await db.destroy()
  }
}

/**
 * checkout-eu: checkout-shipping's 32 customers and loop on a shop that charges Spanish VAT and takes a discount
 * code, against plain checkout, alternately. Set up as an admin would, over the API: an ES `standard` rate of 21 %
 * (`POST /tax-rates`), a shipping method to ES of tax class `standard`, a 10 % code with no usage limit and no
 * per-customer limit (so every order redeems it: one more use on the code's row per order), and an ES address in
 * each customer's book. The EU windows loop add-to-cart, `POST /cart/discount {code}` (an order clears the cart's
 * code; its answer is the cart view) and `POST /orders {shippingAddressId, shippingMethodId}`. The plain windows
 * loop add-to-cart, `GET /cart` and `POST /orders` on a shop without a rate or an active method: in both, the
 * shopper sees the cart once before ordering, so the two loops differ only by what VAT, shipping and a code cost.
 * Everything is removed at the end (the code, which holds redemptions, is switched off).
 */
export async function checkoutEu(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'checkout-eu'
  const origin = shop.service.origin
  const emails = shop.seeded.checkoutCustomerEmails
  const tokens = await logIn(origin, emails, shop.seeded.password)
  const [adminToken = ''] = await logIn(origin, [ADMIN_EMAIL], shop.seeded.password)
  const userIds = await userIdsOf(shop.databaseUrl, emails)
  const productIds = shop.seeded.productIds
  const before = await readLedger(shop.databaseUrl)
  const firstNewOrder = await lastOrderId(shop.databaseUrl)

  const call = async (token: string, method: string, path: string, body?: object): Promise<{ id?: number }> => {
    const response = await sendRequest(origin, {
      method,
      path,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
    if (response.status < 200 || response.status > 299) throw new Error(`${method} ${path}: ${response.status} ${response.body.toString().slice(0, 200)}`)
    return JSON.parse(response.body.toString()) as { id?: number }
  }
  const idOf = (answer: { id?: number }, what: string): number => {
    if (typeof answer.id !== 'number') throw new Error(`${what} answered no id`)
    return answer.id
  }

  const code = 'BENCH-EU-10'
  let codeId: number | undefined
  let methodId: number | undefined
  let rateId: number | undefined
  const addressIds: number[] = []
  let failed = false
  // The rate exists in the EU windows only: without an address, SHOP_COUNTRY (ES) would tax the plain orders too.
  const setEu = async (on: boolean) => {
    if (methodId !== undefined) await call(adminToken, 'PATCH', `/shipping-methods/${methodId}`, { active: on })
    if (on && rateId === undefined)
      rateId = idOf(await call(adminToken, 'POST', '/tax-rates', { country: 'ES', taxClass: 'standard', rate: 21 }), 'POST /tax-rates')
    if (!on && rateId !== undefined) {
      await call(adminToken, 'DELETE', `/tax-rates/${rateId}`)
      rateId = undefined
    }
  }
  try {
    codeId = idOf(await call(adminToken, 'POST', '/discount-codes', { code, type: 'percent', value: 10 }), 'POST /discount-codes')
    methodId = idOf(
      await call(adminToken, 'POST', '/shipping-methods', { name: 'Bench envío', price: 4.9, countries: ['ES'], taxClass: 'standard', active: false }),
      'POST /shipping-methods',
    )
    for (const token of tokens) {
      const address = { fullName: 'Bench Customer', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' }
      addressIds.push(idOf(await call(token, 'POST', '/addresses', address), 'POST /addresses'))
    }
    const orderBodies = addressIds.map((shippingAddressId) => JSON.stringify({ shippingAddressId, shippingMethodId: methodId }))

    let httpOrders = 0
    let httpWindows = 0
    const window = (eu: boolean) => async (seconds: number) => {
      // The last window's loops stop with a request in flight each, which the service still completes: a code applied
      // after the carts were cleared would reach a plain order (seen once in 2,635 orders). Its answer comes well
      // within a second.
      await new Promise((resolve) => setTimeout(resolve, 1000))
      await clearCarts(shop.databaseUrl, userIds)
      await setEu(eu)
      const sample = await measure(shop.service, {
        connections: tokens.length,
        requests: [],
        durationSeconds: seconds,
        checkout: { tokens, productIds, ...(eu ? { orderBodies, discountCode: code } : { viewCart: true }) },
      })
      httpOrders += sample.orders ?? 0
      httpWindows += 1
      return sample
    }
    // Two rounds more than the other scenarios: a round's ratio moves by about ±5 % on the 2-core VMs, and the target
    // is read off the median of the rounds' ratios (pairedRatio). Counterbalanced: the loop run against itself read
    // its second window 2 % lower on average (24 rounds), so each loop goes first in every other round.
    const rounds = settings.rounds + 2
    const [plainSamples = [], euSamples = []] = await alternate(
      [{ run: window(false) }, { run: window(true) }],
      rounds,
      settings.seconds,
      settings.warmupSeconds,
      { counterbalanced: true },
    )
    await clearCarts(shop.databaseUrl, userIds)
    const after = await readLedger(shop.databaseUrl)
    const books = await readEuBooks(shop.databaseUrl, firstNewOrder, codeId)
    // The code's count of uses as the admin reads it.
    const { usageCount } = (await call(adminToken, 'GET', `/discount-codes/${codeId}`)) as { usageCount?: number }

    const plain = summarize(plainSamples)
    const eu = summarize(euSamples)
    const { ratio, rounds: ratios } = pairedRatio(plainSamples, euSamples, (sample) => sample.ordersPerSecond)
    const newOrders = after.orders - before.orders
    const unitsSold = before.stock - after.stock
    const newUnits = after.orderUnits - before.orderUnits
    const unread = newOrders - httpOrders
    const balanced = unread >= 0 && unread <= tokens.length * httpWindows && unitsSold === newUnits && after.badTotals === 0 && after.negativeStock === 0
    const counted =
      books.discounted > 0 &&
      books.complete === books.discounted &&
      books.redemptions === books.discounted &&
      usageCount === books.discounted &&
      books.plainWithExtras === 0
    const notes = [
      `checkout-eu books ${balanced ? 'balance' : 'DO NOT balance'}: ${unitsSold} units left stock and ${newUnits} were ordered; ` +
        `${newOrders} new orders = ${httpOrders} HTTP 201s + ${unread} in flight; ${after.badTotals} orders whose total ≠ Σ lines − discount + shipping`,
      `checkout-eu code: ${books.discounted} orders with the code, ${books.complete} of them discounted, taxed in ES and shipped; ` +
        `${books.redemptions} redemptions, usageCount ${usageCount}; ${books.plainWithExtras} plain orders with tax or shipping`,
      `checkout-eu rounds (EU window's orders/s over the plain window's, the plain window first in the odd rounds): ${ratios.map((r) => fixed(r)).join(', ')}`,
    ]
    checkNoErrors('plain checkout', plain, notes)
    checkNoErrors('checkout with VAT, shipping and a code', eu, notes)
    return {
      name,
      rows: [
        {
          scenario: name,
          server: 'plain checkout (add, view cart, order)',
          summary: plain,
          versus: `${fixed(plain.ordersPerSecond ?? Number.NaN, 0)} orders/s (yardstick)`,
        },
        {
          scenario: name,
          server: 'ES address + method, 21 % VAT, 10 % code',
          summary: eu,
          versus: `${fixed(eu.ordersPerSecond ?? Number.NaN, 0)} orders/s; ${fixed(ratio)}× plain (median of the rounds' ratios)`,
        },
      ],
      targets: [
        { scenario: name, target: 'orders/s ≥ 0.85 × plain checkout', measured: `${fixed(ratio)}×`, met: ratio >= 0.85 },
        { scenario: name, target: 'stock and orders add up', measured: balanced ? 'yes' : 'no', met: balanced },
        { scenario: name, target: 'each EU order taxed, discounted and its use counted once', measured: counted ? 'yes' : 'no', met: counted },
      ],
      notes,
      samples: { plain: plainSamples, eu: euSamples },
    }
  } catch (error) {
    failed = true
    throw error
  } finally {
    // Later scenarios see the shop as it was: no rate, no method, no usable code, no addresses. A failure here
    // does not hide the one that ended the scenario.
    const cleanUp = async () => {
      await clearCarts(shop.databaseUrl, userIds)
      await setEu(false)
      if (methodId !== undefined) await call(adminToken, 'DELETE', `/shipping-methods/${methodId}`)
      if (codeId !== undefined) await call(adminToken, 'PATCH', `/discount-codes/${codeId}`, { active: false })
      for (const [i, id] of addressIds.entries()) await call(tokens[i] as string, 'DELETE', `/addresses/${id}`)
    }
    await cleanUp().catch((error: unknown) => {
      if (!failed) throw error
    })
  }
}

/**
 * Stripe's webhook: a second service on the same database, with Stripe pointed at the tests' Stripe fake, takes
 * real orders (each customer loops add-to-cart, POST /orders, POST /orders/:id/payment, which creates the intent at
 * the fake), then receives one signed `payment_intent.succeeded` per order (signed as Stripe signs, with the SDK's
 * generateTestHeaderString, so the real signature check runs), each delivered once, 32 at a time. Each event
 * does the whole job: signature, event id recorded, payment row locked, order and payment moved to `paid`.
 */
export async function webhook(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'webhook'
  const perWindow = settings.quick ? 800 : 3000
  const warmup = Math.max(settings.connections, Math.round(perWindow / 4))
  const fake = await startStripeFake()
  const service = await startService({
    databaseUrl: shop.databaseUrl,
    dataDir: join(shop.scratchDir, 'data-webhook'),
    uploadDir: join(shop.scratchDir, 'uploads-webhook'),
    jwtSecret: randomBytes(48).toString('base64url'),
    // No expiry while the bench runs: every order stays payable.
    env: { STRIPE_SECRET_KEY: 'sk_test_bench', STRIPE_WEBHOOK_SECRET: webhookSecret, STRIPE_API_URL: fake.url, ORDER_PAYMENT_TTL: '0' },
  })
  try {
    const emails = shop.seeded.checkoutCustomerEmails
    const tokens = await logIn(service.origin, emails, shop.seeded.password)
    const userIds = await userIdsOf(shop.databaseUrl, emails)
    await clearCarts(shop.databaseUrl, userIds)
    const prepared = Date.now()
    const orderIds = await placePayableOrders(service.origin, tokens, shop.seeded.productIds, warmup + perWindow * settings.rounds)
    const preparedSeconds = (Date.now() - prepared) / 1000
    const intents = await intentsOf(shop.databaseUrl, orderIds)
    const eventsBefore = await countRows(shop.databaseUrl, 'payment_events')

    let next = 0
    // Signed just before each window (Stripe's tolerance is 5 minutes), for orders not paid yet.
    const window = async (count: number) => {
      const requests: RequestSpec[] = orderIds.slice(next, next + count).map((orderId) => {
        const intent = fake.succeed(intents.get(orderId) as string)
        const payload = JSON.stringify(intentEvent('payment_intent.succeeded', intent))
        return { method: 'POST', path: '/payments/stripe/webhook', headers: signedHeaders(payload), body: payload }
      })
      next += count
      return measure(service, { connections: settings.connections, requests, amount: requests.length, partitioned: true })
    }
    await window(warmup)
    const samples: Sample[] = []
    for (let round = 0; round < settings.rounds; round++) samples.push(await window(perWindow))

    const paid = await paidAmong(shop.databaseUrl, orderIds)
    const events = (await countRows(shop.databaseUrl, 'payment_events')) - eventsBefore
    const summary = summarize(samples)
    const books = paid === orderIds.length && events === orderIds.length
    const notes = [
      `webhook: ${orderIds.length} orders placed and given an intent over HTTP in ${fixed(preparedSeconds, 1)} s; ` +
        `${events} events recorded and ${paid} of those orders paid (one event each, ${perWindow} per window after ${warmup} to warm up)`,
    ]
    checkNoErrors('webhook', summary, notes)
    const targets: TargetCheck[] = [{ scenario: name, target: 'each signed event pays its order once', measured: books ? 'yes' : 'no', met: books }]
    if (shop.kind === 'sqlite') {
      targets.unshift({ scenario: name, target: 'webhook ≥ 500 events/s (SQLite)', measured: `${fixed(summary.rps, 0)} events/s`, met: summary.rps >= 500 })
    }
    return {
      name,
      rows: [{ scenario: name, server: 'signed payment_intent.succeeded, one per pending order', summary, versus: `${fixed(summary.rps, 0)} events/s` }],
      targets,
      notes,
      samples: { webhook: samples },
    }
  } finally {
    await service.stop()
    await fake.close()
  }
}

/** `count` orders, each with its intent (POST /orders/:id/payment), placed by the customers in parallel. */
async function placePayableOrders(origin: string, tokens: string[], productIds: number[], count: number): Promise<number[]> {
  const orderIds: number[] = []
  const call = async (token: string, method: string, path: string, body?: object) => {
    const response = await sendRequest(origin, {
      method,
      path,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
    if (response.status < 200 || response.status > 299) throw new Error(`${method} ${path}: ${response.status} ${response.body.toString().slice(0, 200)}`)
    return JSON.parse(response.body.toString()) as { id?: number }
  }
  const customer = async (token: string) => {
    while (orderIds.length < count) {
      const productId = productIds[Math.floor(Math.random() * productIds.length)] as number
      await call(token, 'POST', '/cart/add', { productId, quantity: 1 })
      const order = await call(token, 'POST', '/orders')
      if (typeof order.id !== 'number') throw new Error('POST /orders answered no id')
      await call(token, 'POST', `/orders/${order.id}/payment`)
      orderIds.push(order.id)
    }
  }
  await Promise.all(tokens.map(customer))
  return orderIds.slice(0, count)
}

async function intentsOf(databaseUrl: string, orderIds: number[]): Promise<Map<number, string>> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    const intents = new Map<number, string>()
    for (let i = 0; i < orderIds.length; i += 500) {
      const rows = await db
        .selectFrom('payments')
        .select(['order_id', 'intent_id'])
        .where('order_id', 'in', orderIds.slice(i, i + 500))
        .execute()
      for (const row of rows) if (row.intent_id !== null) intents.set(row.order_id, row.intent_id)
    }
    return intents
  } finally {
    await db.destroy()
  }
}

async function paidAmong(databaseUrl: string, orderIds: number[]): Promise<number> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    let paid = 0
    for (let i = 0; i < orderIds.length; i += 500) {
      const row = await db
        .selectFrom('orders')
        .innerJoin('payments', 'payments.order_id', 'orders.id')
        .where('orders.id', 'in', orderIds.slice(i, i + 500))
        .where('orders.status', '=', 'paid')
        .where('payments.status', '=', 'paid')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
      paid += Number(row.n)
    }
    return paid
  } finally {
    await db.destroy()
  }
}

/** Rows of a table; of the outbox, `pending` counts only those still to be delivered. */
async function countRows(databaseUrl: string, table: 'payment_events' | 'orders' | 'outbox', only?: 'pending'): Promise<number> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    const row = await db
      .selectFrom(table)
      .$if(only === 'pending', (qb) => qb.where(sql.ref('status'), '=', 'pending'))
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    return Number(row.n)
  } finally {
    await db.destroy()
  }
}

/**
 * The outbox: two services, each on a fresh shop of its own, both sending e-mail to an SMTP server in this process.
 * The plain one sends each order's "received" e-mail; the busy one also notifies ADMIN_NOTIFY_EMAIL and has 3
 * webhooks on `order.created` (a receiver in this process): 2 e-mails and 3 webhook deliveries per order. The same
 * checkout loop runs against each, alternately; before each window the other service's outbox is empty, so its
 * deliveries never run in this one's window. Measured: orders/s of each (target: busy ≥ 0.9 × plain), deliveries
 * per second while the orders come in, what was still pending when a window closed, and how fast that drained.
 */
export async function outbox(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'outbox'
  const smtp = await startSmtpFake()
  const receiver = await startWebhookReceiver()
  const plan = { products: 200, categories: 4, cartCustomers: 0, cartLines: 0, checkoutCustomers: 32 }
  const started: { url: string; service: RunningServer }[] = []
  try {
    const open = async (label: 'plain' | 'busy', env: Record<string, string>) => {
      const url = await createFreshDatabase(shop.kind, `outbox_${label}`, shop.scratchDir)
      const seeded = await seedShop(url, plan)
      const service = await startService({
        databaseUrl: url,
        dataDir: join(shop.scratchDir, `data-outbox-${label}`),
        uploadDir: join(shop.scratchDir, `uploads-outbox-${label}`),
        jwtSecret: randomBytes(48).toString('base64url'),
        env: { SMTP_URL: smtp.url, ...env },
      })
      started.push({ url, service })
      const tokens = await logIn(service.origin, seeded.checkoutCustomerEmails, seeded.password)
      const userIds = await userIdsOf(url, seeded.checkoutCustomerEmails)
      return { url, service, seeded, tokens, userIds }
    }
    const plain = await open('plain', {})
    const busy = await open('busy', { ADMIN_NOTIFY_EMAIL: 'ops@shop.test', WEBHOOKS_ALLOW_PRIVATE: 'true' })
    const [adminToken] = await logIn(busy.service.origin, [ADMIN_EMAIL], busy.seeded.password)
    for (let i = 0; i < 3; i++) {
      const response = await sendRequest(busy.service.origin, {
        method: 'POST',
        path: '/webhooks',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `${receiver.url}/hook-${i}`, events: ['order.created'] }),
      })
      if (response.status !== 201) throw new Error(`webhook ${i}: ${response.status} ${response.body.toString()}`)
    }

    const drained: { pending: number; seconds: number }[] = []
    const delivered = () => smtp.received.length + receiver.received.length
    let duringWindows = 0
    let busySeconds = 0
    const window = (side: typeof plain, other: typeof plain) => async (seconds: number) => {
      await waitForEmptyOutbox(other.url)
      await clearCarts(side.url, side.userIds)
      const before = delivered()
      const sample = await measure(side.service, {
        connections: side.tokens.length,
        requests: [],
        durationSeconds: seconds,
        checkout: { tokens: side.tokens, productIds: side.seeded.productIds },
      })
      if (side === busy) {
        duringWindows += delivered() - before
        busySeconds += sample.seconds
        const pending = await countRows(side.url, 'outbox', 'pending')
        const drainStarted = Date.now()
        await waitForEmptyOutbox(side.url)
        drained.push({ pending, seconds: (Date.now() - drainStarted) / 1000 })
      }
      return sample
    }
    const [plainSamples = [], busySamples = []] = await alternate(
      [{ run: window(plain, busy) }, { run: window(busy, plain) }],
      settings.rounds,
      settings.seconds,
      settings.warmupSeconds,
    )
    const busyOrders = await countRows(busy.url, 'orders')
    const webhookBodies = receiver.received.length
    const plainSummary = summarize(plainSamples)
    const busySummary = summarize(busySamples)
    const ratio = (busySummary.ordersPerSecond ?? 0) / (plainSummary.ordersPerSecond ?? Number.NaN)
    const deliveriesPerSecond = duringWindows / busySeconds
    const backlog = drained.reduce((sum, d) => sum + d.pending, 0)
    const drainSeconds = drained.reduce((sum, d) => sum + d.seconds, 0)
    const drainRate = backlog / drainSeconds
    const allDelivered = webhookBodies === busyOrders * 3
    const notes = [
      `outbox: ${fixed(deliveriesPerSecond, 0)} deliveries/s while orders came in (e-mails to a local SMTP server and webhooks to a local receiver, both in the bench process); ` +
        `${backlog} still pending when the busy windows closed (${drained.map((d) => d.pending).join(', ')}), delivered in ${fixed(drainSeconds, 1)} s after (${fixed(drainRate, 0)}/s)`,
      `outbox: ${busyOrders} orders on the busy shop, ${webhookBodies} webhook deliveries received (3 per order: ${allDelivered ? 'all' : 'NOT all'}), ${smtp.received.length} e-mails received in all`,
    ]
    checkNoErrors('plain checkout', plainSummary, notes)
    checkNoErrors('checkout with 3 webhooks and 2 e-mails', busySummary, notes)
    return {
      name,
      rows: [
        {
          scenario: name,
          server: 'orders, 1 e-mail each',
          summary: plainSummary,
          versus: `${fixed(plainSummary.ordersPerSecond ?? Number.NaN, 0)} orders/s (yardstick)`,
        },
        {
          scenario: name,
          server: 'orders, 2 e-mails + 3 webhooks each',
          summary: busySummary,
          versus: `${fixed(busySummary.ordersPerSecond ?? Number.NaN, 0)} orders/s = ${fixed(ratio)}× plain; ${fixed(deliveriesPerSecond, 0)} deliveries/s`,
        },
      ],
      targets: [
        { scenario: name, target: 'orders/s with deliveries due ≥ 0.9 × without', measured: `${fixed(ratio)}×`, met: ratio >= 0.9 },
        { scenario: name, target: 'every webhook delivered', measured: allDelivered ? 'yes' : 'no', met: allDelivered },
      ],
      notes,
      samples: { plain: plainSamples, busy: busySamples },
      figures: { deliveriesPerSecond, drainRate },
    }
  } finally {
    for (const { url, service } of started) {
      await service.stop()
      await dropDatabase(shop.kind, url)
    }
    await receiver.close()
    await smtp.close()
  }
}

/** Waits (at most 120 s) until nothing is pending in the outbox. */
async function waitForEmptyOutbox(databaseUrl: string): Promise<void> {
  const deadline = Date.now() + 120_000
  while ((await countRows(databaseUrl, 'outbox', 'pending')) > 0) {
    if (Date.now() > deadline) throw new Error('the outbox did not empty within 120 s')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * after-sale: 1,000 paid orders of 2 units each (one product), placed over HTTP by checkout's 32 customers and marked
 * paid by the admin (the manual provider: a refund is recorded, no provider called). Then, in windows of different
 * orders (no two requests of a window on the same order), shipments of one unit (`POST /orders/:id/fulfillments`)
 * and refunds of one unit (`POST /orders/:id/refunds`, each with its own `Idempotency-Key`), 4 connections (a busy warehouse and office at once). Target:
 * p99 ≤ 20 ms for each on SQLite. Afterwards there must be as many shipments and refunds as 201s.
 */
export async function afterSale(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'after-sale'
  const origin = shop.service.origin
  const emails = shop.seeded.checkoutCustomerEmails
  const tokens = await logIn(origin, emails, shop.seeded.password)
  const [adminToken = ''] = await logIn(origin, [ADMIN_EMAIL], shop.seeded.password)
  const userIds = await userIdsOf(shop.databaseUrl, emails)
  await clearCarts(shop.databaseUrl, userIds)
  const call = async (token: string, method: string, path: string, body?: object) => {
    const response = await sendRequest(origin, {
      method,
      path,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
    if (response.status < 200 || response.status > 299) throw new Error(`${method} ${path}: ${response.status} ${response.body.toString().slice(0, 200)}`)
    return JSON.parse(response.body.toString()) as { id?: number; items?: Array<{ id: number }> }
  }
  const count = 1000
  const orders: Array<{ id: number; lineId: number }> = []
  const prepared = Date.now()
  await Promise.all(
    tokens.map(async (token) => {
      while (orders.length < count) {
        const productId = shop.seeded.productIds[Math.floor(Math.random() * shop.seeded.productIds.length)] as number
        await call(token, 'POST', '/cart/add', { productId, quantity: 2 })
        const order = await call(token, 'POST', '/orders')
        const lineId = order.items?.[0]?.id
        if (typeof order.id !== 'number' || lineId === undefined) throw new Error('POST /orders answered no id or line')
        await call(adminToken, 'PATCH', `/orders/${order.id}/status`, { status: 'paid' })
        orders.push({ id: order.id, lineId })
      }
    }),
  )
  const preparedSeconds = (Date.now() - prepared) / 1000
  const perWindow = Math.floor(count / (settings.rounds + 1))
  const admin = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }
  let keys = 0
  const window = (kind: 'ship' | 'refund', round: number): RequestSpec[] =>
    orders.slice(round * perWindow, (round + 1) * perWindow).map(({ id, lineId }) =>
      kind === 'ship'
        ? {
            method: 'POST',
            path: `/orders/${id}/fulfillments`,
            headers: admin,
            body: JSON.stringify({ items: [{ orderItemId: lineId, quantity: 1 }], notifyCustomer: false }),
          }
        : {
            method: 'POST',
            path: `/orders/${id}/refunds`,
            headers: { ...admin, 'idempotency-key': `bench-${process.pid}-${(keys += 1)}` },
            body: JSON.stringify({ items: [{ orderItemId: lineId, quantity: 1 }] }),
          },
    )
  const run = (requests: RequestSpec[]) => measure(shop.service, { connections: 4, requests, amount: requests.length, partitioned: true })
  // The first window of each warms up (not counted); then one window of each per round, alternately.
  await run(window('ship', 0))
  await run(window('refund', 0))
  const shipSamples: Sample[] = []
  const refundSamples: Sample[] = []
  for (let round = 1; round <= settings.rounds; round++) {
    shipSamples.push(await run(window('ship', round)))
    refundSamples.push(await run(window('refund', round)))
  }
  const ship = summarize(shipSamples)
  const refund = summarize(refundSamples)
  const made = await countAfterSale(
    shop.databaseUrl,
    orders.map((order) => order.id),
  )
  const expected = perWindow * (settings.rounds + 1)
  const books = made.fulfillments === expected && made.refunds === expected
  const notes = [
    `after-sale: ${orders.length} paid orders placed over HTTP in ${fixed(preparedSeconds, 1)} s; ${made.fulfillments} shipments and ` +
      `${made.refunds} refunds written (${perWindow} of each per window, the first window of each to warm up)`,
  ]
  checkNoErrors('after-sale shipments', ship, notes)
  checkNoErrors('after-sale refunds', refund, notes)
  const targets: TargetCheck[] = [{ scenario: name, target: 'one shipment and one refund per 201', measured: books ? 'yes' : 'no', met: books }]
  if (shop.kind === 'sqlite') {
    targets.unshift(
      { scenario: name, target: 'POST /orders/:id/fulfillments p99 ≤ 20 ms (SQLite)', measured: `${fixed(ship.p99, 1)} ms`, met: ship.p99 <= 20 },
      { scenario: name, target: 'POST /orders/:id/refunds p99 ≤ 20 ms (SQLite)', measured: `${fixed(refund.p99, 1)} ms`, met: refund.p99 <= 20 },
    )
  }
  return {
    name,
    rows: [
      { scenario: name, server: 'ship one unit of a paid order', summary: ship, versus: `${fixed(ship.rps, 0)} shipments/s` },
      { scenario: name, server: 'refund one unit (manual provider)', summary: refund, versus: `${fixed(refund.rps, 0)} refunds/s` },
    ],
    targets,
    notes,
    samples: { ship: shipSamples, refund: refundSamples },
  }
}

/** The shipments and refunds of these orders. */
async function countAfterSale(databaseUrl: string, ids: number[]): Promise<{ fulfillments: number; refunds: number }> {
  const { db } = connectDatabase(databaseUrl, { poolSize: 1 })
  try {
    const fulfillments = await db
      .selectFrom('fulfillments')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('order_id', 'in', ids)
      .executeTakeFirstOrThrow()
    const refunds = await db
      .selectFrom('refunds')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('order_id', 'in', ids)
      .executeTakeFirstOrThrow()
    return { fulfillments: Number(fulfillments.n), refunds: Number(refunds.n) }
  } finally {
    await db.destroy()
  }
}

/**
 * The audit log's cost on an admin write: `PATCH /products/:id {name}` (the write, its `product.updated` event and its
 * audit entry, with the product as it was read under the lock) against the same write with the audit writer off
 * (`auditLogWrites`, a switch only the bench turns). In this process, through `app.inject` on the seeded database
 * (the HTTP stack is the same for both and would only dilute the difference), one write at a time, alternating
 * windows of each.
 */
export async function adminWrite(shop: Shop, settings: Settings): Promise<ScenarioResult> {
  const name = 'admin-write'
  const [{ buildApp }, { loadConfig }, { auditLogWrites }] = await Promise.all([
    import('../src/app.js'),
    import('../src/config.js'),
    import('../src/modules/staff/audit-log.js'),
  ])
  const config = loadConfig({
    NODE_ENV: 'production',
    JWT_SECRET: 'admin-write-bench-secret-that-is-long-enough',
    DATA_DIR: shop.scratchDir,
    LOG_LEVEL: 'silent',
    DATABASE_URL: shop.databaseUrl,
  })
  const app = await buildApp(config, { database: connectDatabase(shop.databaseUrl, { poolSize: 2 }), logger: false, jobs: false, catalogCache: false })
  try {
    await app.ready()
    const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { email: ADMIN_EMAIL, password: shop.seeded.password } })
    const headers = { authorization: `Bearer ${(login.json() as { token: string }).token}` }
    const ids = spreadIds(shop.seeded.productIds, 100)
    const writes = settings.quick ? 300 : 2000
    let n = 0
    const window = async (audit: boolean): Promise<{ ms: number[]; failed: number }> => {
      auditLogWrites.on = audit
      const ms: number[] = []
      let failed = 0
      for (let i = 0; i < writes; i++) {
        const id = ids[n % ids.length] as number
        n += 1
        const t0 = performance.now()
        const res = await app.inject({ method: 'PATCH', url: `/products/${id}`, headers, payload: { name: `Bench product ${n}` } })
        ms.push(performance.now() - t0)
        if (res.statusCode !== 200) failed += 1
      }
      return { ms, failed }
    }
    await window(true)
    await window(false)
    const on: number[] = []
    const off: number[] = []
    let failed = 0
    for (let round = 0; round < settings.rounds; round++) {
      const a = await window(true)
      const b = await window(false)
      on.push(...a.ms)
      off.push(...b.ms)
      failed += a.failed + b.failed
    }
    auditLogWrites.on = true
    const stats = (samples: number[]): Summary => {
      const sorted = [...samples].sort((x, y) => x - y)
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
      const total = samples.reduce((sum, v) => sum + v, 0)
      return {
        rounds: settings.rounds,
        rps: (samples.length / total) * 1000,
        p50: at(0.5),
        p99: at(0.99),
        bytesPerResponse: 0,
        peakRssMiB: rssMiB(process.pid),
        requests: samples.length,
        non2xx: 0,
        errors: 0,
      }
    }
    const withEntry = stats(on)
    const without = stats(off)
    const meanCost = without.rps / withEntry.rps - 1
    const entries = await app.db
      .selectFrom('audit_log')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('action', '=', 'product.update')
      .executeTakeFirstOrThrow()
    const notes = [
      `admin-write: ${on.length} writes with their entry and ${off.length} without, one at a time, in process; ` +
        `${Number(entries.n)} product.update entries in the log; mean ${fixed(1000 / withEntry.rps)} ms against ${fixed(1000 / without.rps)} ms`,
    ]
    if (failed > 0) notes.push(`admin-write: ${failed} writes did not answer 200`)
    return {
      name,
      rows: [
        {
          scenario: name,
          server: 'PATCH /products/:id, with its audit entry',
          summary: withEntry,
          versus: `${fixed(meanCost * 100, 1)} % more time per write`,
        },
        { scenario: name, server: 'the same, audit writer off', summary: without, versus: '1.00× (yardstick)' },
      ],
      targets: [
        {
          scenario: name,
          target: 'audit cost on an admin write ≤ 10 % (mean time per write)',
          measured: `${fixed(meanCost * 100, 1)} %`,
          met: meanCost <= 0.1 && failed === 0,
        },
      ],
      notes,
      samples: {},
    }
  } finally {
    auditLogWrites.on = true
    await app.close()
  }
}
