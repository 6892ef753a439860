// Fresh benchmark databases, filled by inserting rows directly (batched, one transaction), so
// 100,000 products take seconds. The service then runs on them unchanged.
import { rmSync } from 'node:fs'
import { type Kysely, sql } from 'kysely'
import pg from 'pg'
import { connectDatabase, type DatabaseHandle } from '../src/db/connect.js'
import type { Database } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { createCategory } from '../src/modules/catalog/categories.service.js'
import { addMissingDefaultVariants } from '../src/modules/catalog/variants.repository.js'
import { hashPassword } from '../src/modules/users/passwords.js'
import type { DbKind } from './types.js'

export const BENCH_PASSWORD = 'bench-password-123'
export const ADMIN_EMAIL = 'bench-admin@shop.test'

export interface SeedPlan {
  products: number
  categories: number
  /** Customers holding `cartLines` lines each (cart-view; also the login-storm's logins). */
  cartCustomers: number
  cartLines: number
  /** Customers with empty carts, one per checkout connection. */
  checkoutCustomers: number
  /** Every n-th product sells in 24 variants (3 options: 4 sizes × 3 colours × 2 materials); 0: none. */
  optionedEvery?: number
}

export interface SeededShop {
  /** The products of one variant: what the checkouts and carts buy (`POST /cart/add {productId}`). */
  productIds: number[]
  /** Every product, those in variants too: what the catalog reads ask for. */
  catalogProductIds: number[]
  categoryIds: number[]
  cartCustomerEmails: string[]
  checkoutCustomerEmails: string[]
  adminEmail: string
  /** Every seeded user's password. */
  password: string
}

/** Deterministic pseudo-random numbers (mulberry32), so every run seeds the same shop. */
export function randomSequence(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The PostgreSQL server the benchmark creates its databases on. */
export function postgresServerUrl(): string {
  return process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
}

/**
 * A fresh, empty database: a new SQLite file, or PostgreSQL database `shop_bench_<name>`
 * dropped and created again. Returns its DATABASE_URL.
 */
export async function createFreshDatabase(kind: DbKind, name: string, scratchDir: string): Promise<string> {
  if (kind === 'sqlite') {
    const file = `${scratchDir}/${name}.db`
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
    return `sqlite:${file}`
  }
  const database = `shop_bench_${name}`
  const server = postgresServerUrl()
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  try {
    await client.query(`drop database if exists ${database} with (force)`)
    await client.query(`create database ${database}`)
  } finally {
    await client.end()
  }
  const url = new URL(server)
  url.pathname = `/${database}`
  return url.toString()
}

/** Drops a PostgreSQL benchmark database (SQLite files go with the scratch folder). */
export async function dropDatabase(kind: DbKind, databaseUrl: string): Promise<void> {
  if (kind !== 'postgres') return
  const database = new URL(databaseUrl).pathname.slice(1)
  if (!database.startsWith('shop_bench_')) throw new Error(`refusing to drop ${database}`)
  const client = new pg.Client({ connectionString: postgresServerUrl() })
  await client.connect()
  try {
    await client.query(`drop database if exists ${database} with (force)`)
  } finally {
    await client.end()
  }
}

const WORDS = ['Classic', 'Organic', 'Wireless', 'Vintage', 'Compact', 'Deluxe', 'Smart', 'Handmade', 'Eco', 'Pro']
const THINGS = ['Lamp', 'Mug', 'Backpack', 'Headphones', 'Chair', 'Notebook', 'Jacket', 'Kettle', 'Speaker', 'Watch']

async function insertInBatches<T extends keyof Database>(db: Kysely<Database>, table: T, rows: Record<string, unknown>[], batch = 500): Promise<void> {
  for (let i = 0; i < rows.length; i += batch) {
    await db
      .insertInto(table)
      .values(rows.slice(i, i + batch) as never)
      .execute()
  }
}

const SIZES = ['S', 'M', 'L', 'XL']
const COLOURS = ['Rojo', 'Azul', 'Verde']
const MATERIALS = ['Algodón', 'Lino']

/**
 * Every `every`-th product gets three options and a variant for each of their 24 combinations (price rising by 1.00
 * per variant from the product's, stock 1,000 each), its image row, and its price range and stock from them.
 */
async function addVariantsToEvery(db: Kysely<Database>, every: number): Promise<void> {
  const chosen = await db
    .selectFrom('products')
    .select(['id', 'price_cents', 'image_key', 'image_url', 'created_at'])
    .where(sql<boolean>`id % ${every} = 0`)
    .orderBy('id')
    .execute()
  if (chosen.length === 0) return
  const names = [
    ['Talla', SIZES],
    ['Color', COLOURS],
    ['Material', MATERIALS],
  ] as const
  await insertInBatches(
    db,
    'product_options',
    chosen.flatMap((p) => names.map(([name], position) => ({ product_id: p.id, name, name_key: name.toLowerCase(), position }))),
  )
  const options = await db.selectFrom('product_options').select(['id', 'product_id', 'position']).orderBy('id').execute()
  await insertInBatches(
    db,
    'product_option_values',
    options.flatMap((o) => names[o.position]![1].map((value, position) => ({ option_id: o.id, value, value_key: value.toLowerCase(), position }))),
  )
  const values = await db
    .selectFrom('product_option_values as v')
    .innerJoin('product_options as o', 'o.id', 'v.option_id')
    .select(['v.id', 'o.product_id', 'o.position as option_position', 'v.position'])
    .execute()
  const valueId = new Map(values.map((v) => [`${v.product_id}/${v.option_position}/${v.position}`, v.id]))
  const combos = SIZES.flatMap((_, s) => COLOURS.flatMap((_, c) => MATERIALS.map((_, m) => [s, c, m] as const)))
  const variants = chosen.flatMap((p) =>
    combos.map(([s, c, m], position) => {
      const ids = [valueId.get(`${p.id}/0/${s}`)!, valueId.get(`${p.id}/1/${c}`)!, valueId.get(`${p.id}/2/${m}`)!]
      return {
        product_id: p.id,
        sku: `P${p.id}-${position}`,
        sku_key: `p${p.id}-${position}`,
        title: `${SIZES[s]} / ${COLOURS[c]} / ${MATERIALS[m]}`,
        price_cents: Number(p.price_cents) + position * 100,
        stock: 1000,
        position,
        values_key: [...ids].sort((a, b) => a - b).join(','),
        created_at: p.created_at,
        updated_at: p.created_at,
      }
    }),
  )
  await insertInBatches(db, 'product_variants', variants)
  const written = await db.selectFrom('product_variants').select(['id', 'product_id', 'values_key']).where('values_key', '<>', '').execute()
  await insertInBatches(
    db,
    'variant_option_values',
    written.flatMap((v) => v.values_key.split(',').map((id) => ({ variant_id: v.id, option_value_id: Number(id) }))),
  )
  await insertInBatches(
    db,
    'product_images',
    chosen.map((p) => ({ product_id: p.id, image_key: p.image_key, url: p.image_url, alt: '', position: 0, created_at: p.created_at })),
  )
  await sql`update products set
      price_cents = (select min(price_cents) from product_variants v where v.product_id = products.id),
      price_max_cents = (select max(price_cents) from product_variants v where v.product_id = products.id),
      stock = (select sum(stock) from product_variants v where v.product_id = products.id)
    where id % ${every} = 0`.execute(db)
}

/** Migrates and fills an empty database with `plan`'s shop. */
export async function seedShop(databaseUrl: string, plan: SeedPlan): Promise<SeededShop> {
  const handle: DatabaseHandle = connectDatabase(databaseUrl)
  const { db } = handle
  try {
    await migrateToLatest(db)
    const random = randomSequence(42)
    const passwordHash = await hashPassword(BENCH_PASSWORD)
    // Tokens must be issued after credentials_changed_at: set it safely in the past.
    const past = new Date(Date.now() - 3_600_000).toISOString()
    const base = Date.parse('2026-01-01T00:00:00.000Z')

    const cartCustomerEmails = Array.from({ length: plan.cartCustomers }, (_, i) => `cart${i + 1}@bench.test`)
    const checkoutCustomerEmails = Array.from({ length: plan.checkoutCustomers }, (_, i) => `checkout${i + 1}@bench.test`)

    await db.transaction().execute(async (trx) => {
      const users = [
        // Written straight into the table: the admin's staff role too (an owner, as the service makes one).
        { email: ADMIN_EMAIL, role: 'admin' as const, staff_role: 'owner' as const, name: 'Bench Admin' },
        ...cartCustomerEmails.map((email, i) => ({ email, role: 'customer' as const, staff_role: null, name: `Cart Customer ${i + 1}` })),
        ...checkoutCustomerEmails.map((email, i) => ({ email, role: 'customer' as const, staff_role: null, name: `Checkout Customer ${i + 1}` })),
      ].map((u) => ({ ...u, password_hash: passwordHash, created_at: past, updated_at: past, credentials_changed_at: past }))
      await insertInBatches(trx, 'users', users)

      // Through the catalog's own service: categories carry derived columns (the name key).
      for (let i = 1; i <= plan.categories; i++) {
        await createCategory(trx, { name: `Category ${String(i).padStart(3, '0')}`, description: `Everything in aisle ${i}` }, null)
      }
      const categoryIds = (await trx.selectFrom('categories').select('id').orderBy('id').execute()).map((r) => r.id)

      const products: Record<string, unknown>[] = []
      for (let i = 1; i <= plan.products; i++) {
        const word = WORDS[Math.floor(random() * WORDS.length)]
        const thing = THINGS[Math.floor(random() * THINGS.length)]
        const at = new Date(base + i * 1000).toISOString()
        const priceCents = 100 + Math.floor(random() * 99_900)
        products.push({
          name: `${word} ${thing} ${i}`,
          slug: `p-${i}`,
          price_max_cents: priceCents,
          description: `A ${word?.toLowerCase()} ${thing?.toLowerCase()} that does exactly what a ${thing?.toLowerCase()} should, made to last and easy to love.`,
          price_cents: priceCents,
          stock: 1_000_000,
          image_key: `products/seed-${i}.jpg`,
          image_url: `https://images.shop.test/products/seed-${i}.jpg`,
          category_id: categoryIds[i % categoryIds.length] ?? null,
          created_at: at,
          updated_at: at,
        })
      }
      await insertInBatches(trx, 'products', products)
      if (plan.optionedEvery) await addVariantsToEvery(trx, plan.optionedEvery)
      // Each other product's default variant and image row, as the service writes them.
      await addMissingDefaultVariants(trx)
    })

    const catalogProductIds = (await db.selectFrom('products').select('id').orderBy('id').execute()).map((r) => r.id)
    const optioned = new Set((await db.selectFrom('product_options').select('product_id').distinct().execute()).map((r) => r.product_id))
    const productIds = catalogProductIds.filter((id) => !optioned.has(id))
    const categoryIds = (await db.selectFrom('categories').select('id').orderBy('id').execute()).map((r) => r.id)
    const variantOf = new Map((await db.selectFrom('product_variants').select(['id', 'product_id']).execute()).map((v) => [v.product_id, v.id]))
    const cartUsers = await db.selectFrom('users').select(['id', 'email']).where('email', 'like', 'cart%').execute()
    // Each line belongs to its user's cart row, made first (as the service does on a first add).
    await db.transaction().execute((trx) =>
      insertInBatches(
        trx,
        'carts',
        cartUsers.map((user) => ({ user_id: user.id, created_at: past, updated_at: past })),
      ),
    )
    const cartOf = new Map((await db.selectFrom('carts').select(['id', 'user_id']).where('user_id', 'is not', null).execute()).map((c) => [c.user_id, c.id]))
    const lines: Record<string, unknown>[] = []
    for (const user of cartUsers) {
      const chosen = new Set<number>()
      while (chosen.size < Math.min(plan.cartLines, productIds.length)) {
        chosen.add(productIds[Math.floor(random() * productIds.length)] as number)
      }
      for (const productId of chosen) {
        lines.push({
          cart_id: cartOf.get(user.id),
          user_id: user.id,
          product_id: productId,
          variant_id: variantOf.get(productId),
          quantity: 1 + Math.floor(random() * 3),
          created_at: past,
          updated_at: past,
        })
      }
    }
    await db.transaction().execute((trx) => insertInBatches(trx, 'cart_items', lines))

    // What autovacuum does soon after a bulk load (statistics, and the visibility map that lets
    // counts use index-only scans); SQLite gets the same statistics.
    await sql.raw(handle.dialect === 'postgres' ? 'vacuum analyze' : 'analyze').execute(db)

    return { productIds, catalogProductIds, categoryIds, cartCustomerEmails, checkoutCustomerEmails, adminEmail: ADMIN_EMAIL, password: BENCH_PASSWORD }
  } finally {
    await db.destroy()
  }
}

/** bench/catalog-facets.ts as a module: its seed and its target filter, without running its own measurement. */
export async function importFacetsBench(): Promise<typeof import('./catalog-facets.js')> {
  process.env.BENCH_FACETS_NO_MAIN = '1'
  return import('./catalog-facets.js')
}

/**
 * Issue 20's shop, for `catalog-facets`: 100,000 products in a three-level category tree, 20 % of them with three
 * options and 24–100 variants (about 1.2 million variants), seeded by bench/catalog-facets.ts's `fill` (rows inserted
 * directly, then what autovacuum does after a bulk load). No customers: the scenario only reads.
 */
export async function seedVariantsShop(databaseUrl: string, products = 100_000): Promise<SeededShop> {
  const { fill } = await importFacetsBench()
  // No statement timeout: the seed's batches run past the service's 5 s on a loaded machine.
  const handle = connectDatabase(databaseUrl, { timeouts: { connectTimeoutMs: 5000, statementTimeoutMs: 0 } })
  try {
    await fill(handle, products)
    const ids = (await handle.db.selectFrom('products').select('id').orderBy('id').execute()).map((row) => row.id)
    const categoryIds = (await handle.db.selectFrom('categories').select('id').orderBy('id').execute()).map((row) => row.id)
    return {
      productIds: [],
      catalogProductIds: ids,
      categoryIds,
      cartCustomerEmails: [],
      checkoutCustomerEmails: [],
      adminEmail: ADMIN_EMAIL,
      password: '',
    }
  } finally {
    await handle.db.destroy()
  }
}
