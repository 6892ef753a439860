import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { variantListReadCount } from '../../src/modules/catalog/product-view.js'
import type { Product } from '../../src/modules/catalog/products.service.js'
import { dialect, useTestApp } from '../helpers/app.js'
import { bearer } from '../helpers/factories.js'

// A write to a variant's own fields (PATCH /variants/:id with a price, a stock, a SKU…) reads that variant and its
// option values, not its product's hundred variants. The product whole is read only for an event a listener takes:
// product.updated when a webhook is subscribed to it, stock.low when the rule fires, once for both. On both databases.
const t = useTestApp({ WEBHOOKS_ALLOW_PRIVATE: 'true', LOW_STOCK_THRESHOLD: '5', ADMIN_NOTIFY_EMAIL: 'ops@shop.test' }, { outbox: { enabled: false } })

const send = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  t.app.inject({ method, url, headers: bearer(t.admin), ...(payload === undefined ? {} : { payload: payload as object }) })

/** A product with Talla {S, M, L} × Color {Rojo, Azul}: six variants, stock 10 each. */
async function sizedProduct(): Promise<Product> {
  const res = await send('POST', '/products', {
    name: 'Camiseta',
    options: [
      { name: 'Talla', values: ['S', 'M', 'L'] },
      { name: 'Color', values: ['Rojo', 'Azul'] },
    ],
    variants: ['S', 'M', 'L'].flatMap((talla) => ['Rojo', 'Azul'].map((color) => ({ options: { Talla: talla, Color: color }, price: 10, stock: 10 }))),
  })
  expect(res.statusCode).toBe(201)
  return res.json() as Product
}

/** The PATCH, and how many times a product's variants were read all together while it ran. */
async function patchCountingReads(variantId: number, body: unknown) {
  const before = variantListReadCount()
  const res = await send('PATCH', `/variants/${variantId}`, body)
  return { res, reads: variantListReadCount() - before }
}

/** The outbox's rows, oldest first: a webhook delivery by its event, an e-mail by its template. */
const outboxRows = async () =>
  (await t.app.db.selectFrom('outbox').select(['channel', 'event', 'payload']).orderBy('id').execute()).map((row) => ({
    kind: [row.channel, row.event ?? (JSON.parse(row.payload) as { template: string }).template],
    payload: row.payload,
  }))

/** A product of one variant (no options), stock 10. */
async function plainProduct(): Promise<Product> {
  const res = await send('POST', '/products', { name: 'Jarra', price: 8, stock: 10 })
  expect(res.statusCode).toBe(201)
  return res.json() as Product
}

describe('PATCH /variants/:id of its own fields', () => {
  it('reads no product whole when nothing takes product.updated; answers the variant; the audit entry holds it before and after', async () => {
    const product = await sizedProduct()
    const variant = product.variants.find((v) => v.title === 'M / Azul')!
    await t.app.db.deleteFrom('outbox').execute()
    const { res, reads } = await patchCountingReads(variant.id, { price: 12.5, sku: 'CAM-M-AZ' })
    expect(res.statusCode).toBe(200)
    expect(reads).toBe(0)
    const after = (await send('GET', `/products/${product.id}`)).json() as Product
    expect(res.json()).toEqual(after.variants.find((v) => v.id === variant.id))
    expect(res.json()).toMatchObject({
      price: 12.5,
      sku: 'CAM-M-AZ',
      title: 'M / Azul',
      optionValues: [
        { name: 'Talla', value: 'M' },
        { name: 'Color', value: 'Azul' },
      ],
    })
    expect(after.priceRange).toEqual({ min: 10, max: 12.5 })
    expect(await outboxRows()).toEqual([])
    const entry = await t.app.db
      .selectFrom('audit_log')
      .select(['action', 'entity_id', 'before', 'after'])
      .where('entity_type', '=', 'variant')
      .where('entity_id', '=', String(variant.id))
      .where('action', '=', 'variant.update')
      .executeTakeFirstOrThrow()
    expect({ ...entry, before: JSON.parse(entry.before!), after: JSON.parse(entry.after!) }).toEqual({
      action: 'variant.update',
      entity_id: String(variant.id),
      before: variant,
      after: res.json(),
    })
  })

  it('reads the product once for a subscribed webhook, and product.updated carries it whole as read afterwards', async () => {
    const product = await sizedProduct()
    const hook = await send('POST', '/webhooks', { url: 'http://127.0.0.1:9/products', events: ['product.updated'] })
    expect(hook.statusCode).toBe(201)
    try {
      await t.app.db.deleteFrom('outbox').execute()
      const { res, reads } = await patchCountingReads(product.variants[0]!.id, { stock: 7 })
      expect(res.statusCode).toBe(200)
      expect(reads).toBe(1)
      const rows = await outboxRows()
      expect(rows.map((row) => row.kind)).toEqual([['webhook', 'product.updated']])
      const after = (await send('GET', `/products/${product.id}`)).json() as Product
      expect((JSON.parse(rows[0]!.payload) as { data: Product }).data).toEqual(after)
      expect(after.stock).toBe(57)

      // stock.low too (the product's stock 10 → 3 crosses 5): the same one read serves both events.
      const jarra = await plainProduct()
      await t.app.db.deleteFrom('outbox').execute()
      const low = await patchCountingReads(jarra.variants[0]!.id, { stock: 3 })
      expect(low.res.statusCode).toBe(200)
      expect(low.reads).toBe(1)
      // Two rows of one transaction: their ids need not sort in the order they were written.
      const events = (await outboxRows()).sort((a, b) => a.kind[0]!.localeCompare(b.kind[0]!))
      expect(events.map((row) => row.kind)).toEqual([
        ['email', 'admin-low-stock'],
        ['webhook', 'product.updated'],
      ])
      const lowered = (await send('GET', `/products/${jarra.id}`)).json() as Product
      expect((JSON.parse(events[0]!.payload) as { data: { product: Product } }).data.product).toEqual(lowered)
      expect((JSON.parse(events[1]!.payload) as { data: Product }).data).toEqual(lowered)
    } finally {
      await send('DELETE', `/webhooks/${(hook.json() as { id: number }).id}`)
    }
  })

  it('stock.low alone (no webhook) reads the product once, for the e-mail', async () => {
    const product = await plainProduct()
    await t.app.db.deleteFrom('outbox').execute()
    const { res, reads } = await patchCountingReads(product.variants[0]!.id, { stock: 2 })
    expect(res.statusCode).toBe(200)
    expect(reads).toBe(1)
    expect((await outboxRows()).map((row) => row.kind)).toEqual([['email', 'admin-low-stock']])
  })

  // A write that waited for the variant's lock (held here as an options write holds it) answers with what the holder
  // left, not with what was there when it began: every read of the write comes after its locks. PostgreSQL only: on
  // SQLite one write runs at a time, so there is no wait to observe. Fails when the values are read before the lock.
  it.runIf(dialect === 'postgres')("after waiting for a writer holding the variant, answers with that writer's values and price", async () => {
    const product = await sizedProduct()
    const variant = product.variants.find((v) => v.title === 'M / Azul')!
    const azul = product.options.find((o) => o.name === 'Color')!.values.find((v) => v.value === 'Azul')!
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let holding!: (pid: number) => void
    const holderPid = new Promise<number>((resolve) => (holding = resolve))
    // As an options write does: the variant's lock first, then the values and the variant's row change.
    const holder = t.app.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)
      await sql`select id from product_variants where id = ${variant.id} for update`.execute(trx)
      await trx.updateTable('product_option_values').set({ value: 'Marino' }).where('id', '=', azul.id).execute()
      await trx.updateTable('product_variants').set({ title: 'M / Marino', compare_at_cents: 2000 }).where('id', '=', variant.id).execute()
      holding(rows[0]!.pid)
      await released
    })
    let patch: ReturnType<typeof send> | undefined
    try {
      const pid = await Promise.race([holderPid, holder.then(() => Promise.reject(new Error('the holder ended before holding the lock')))])
      patch = send('PATCH', `/variants/${variant.id}`, { price: 11 })
      // Until the PATCH waits for the holder's lock (it must have read nothing by then).
      for (let waited = 0; ; waited += 10) {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where ${pid} = any(pg_blocking_pids(pid))`.execute(t.app.db)
        if (rows[0]!.n > 0) break
        if (waited > 10_000) throw new Error('the PATCH never waited for the lock')
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    } finally {
      // Whatever happened above, the holder commits and gives its connection back (a hung pool would hang the file).
      release()
      await holder
    }
    const res = (await patch)!
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({
      price: 11,
      compareAtPrice: 20,
      title: 'M / Marino',
      optionValues: [
        { name: 'Talla', value: 'M' },
        { name: 'Color', value: 'Marino' },
      ],
    })
    const after = (await send('GET', `/products/${product.id}`)).json() as Product
    expect(res.json()).toEqual(after.variants.find((v) => v.id === variant.id))
    expect(after.priceRange).toEqual({ min: 10, max: 11 })
  })
})
