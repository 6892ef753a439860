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
}

export interface SeededShop {
  productIds: number[]
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
        { email: ADMIN_EMAIL, role: 'admin' as const, name: 'Bench Admin' },
        ...cartCustomerEmails.map((email, i) => ({ email, role: 'customer' as const, name: `Cart Customer ${i + 1}` })),
        ...checkoutCustomerEmails.map((email, i) => ({ email, role: 'customer' as const, name: `Checkout Customer ${i + 1}` })),
      ].map((u) => ({ ...u, password_hash: passwordHash, created_at: past, updated_at: past, credentials_changed_at: past }))
      await insertInBatches(trx, 'users', users)

      // Through the catalog's own service: categories carry derived columns (the name key).
      for (let i = 1; i <= plan.categories; i++) {
        await createCategory(trx, { name: `Category ${String(i).padStart(3, '0')}`, description: `Everything in aisle ${i}` })
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
      // Each product's default variant and image row, as the service writes them.
      await addMissingDefaultVariants(trx)
    })

    const productIds = (await db.selectFrom('products').select('id').orderBy('id').execute()).map((r) => r.id)
    const categoryIds = (await db.selectFrom('categories').select('id').orderBy('id').execute()).map((r) => r.id)
    const variantOf = new Map((await db.selectFrom('product_variants').select(['id', 'product_id']).execute()).map((v) => [v.product_id, v.id]))
    const cartUsers = await db.selectFrom('users').select(['id', 'email']).where('email', 'like', 'cart%').execute()
    const lines: Record<string, unknown>[] = []
    for (const user of cartUsers) {
      const chosen = new Set<number>()
      while (chosen.size < Math.min(plan.cartLines, productIds.length)) {
        chosen.add(productIds[Math.floor(random() * productIds.length)] as number)
      }
      for (const productId of chosen) {
        lines.push({
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

    return { productIds, categoryIds, cartCustomerEmails, checkoutCustomerEmails, adminEmail: ADMIN_EMAIL, password: BENCH_PASSWORD }
  } finally {
    await db.destroy()
  }
}
