import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type Row, useMigrationDatabase } from '../helpers/migrations.js'
import { productRow } from '../helpers/catalog.js'

// The variant_filters migration on a shop with data: the rows of the variants with options already there, then every
// write the triggers follow (a price, stock crossing zero and not, a product's category and status, a value's and an
// option's key, a link, a variant, a product removed), each time compared with the rows as they would be computed
// afresh; down to the schema as it was, and up again.

const FILTERS = '2026-12-05T0000-variant-filters'
const BEFORE = '2026-12-04T0100-outbox-due-by-channel'
const now = '2026-12-04T10:00:00.000Z'

const migrating = useMigrationDatabase()

const ORDER = sql`order by variant_id, option_value_id`

/** The rows as the triggers keep them. */
async function kept(): Promise<Row[]> {
  return (await sql<Row>`select * from variant_filters ${ORDER}`.execute(migrating.raw)).rows.map(normal)
}

/** The rows as they would be computed afresh from the catalog. */
async function computed(): Promise<Row[]> {
  const { rows } = await sql<Row>`select l.variant_id, l.option_value_id, v.product_id, p.category_id, p.status, ov.option_id, o.name_key,
      ov.value_key, v.price_cents, case when v.stock > 0 then 1 else 0 end as in_stock
    from variant_option_values l
      join product_variants v on v.id = l.variant_id
      join products p on p.id = v.product_id
      join product_option_values ov on ov.id = l.option_value_id
      join product_options o on o.id = ov.option_id
    ${ORDER}`.execute(migrating.raw)
  return rows.map(normal)
}

const normal = (row: Row): Row =>
  Object.fromEntries(
    Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' || (typeof v === 'string' && /_id$|_cents$|in_stock/.test(k)) ? Number(v) : v]),
  )

/** A product with a Color and a Size option, and a variant per pair given (price 10.00 + 1.00 each, stock 2 each). */
async function shirt(name: string, categoryId: number | null, pairs: Array<[string, string]>) {
  const product = await migrating.raw
    .insertInto('products')
    .values({ ...productRow({ name, categoryId: categoryId ?? undefined }), status: 'active' })
    .returning('id')
    .executeTakeFirstOrThrow()
  const option = async (optionName: string, position: number) =>
    (
      await migrating.raw
        .insertInto('product_options')
        .values({ product_id: product.id, name: optionName, name_key: optionName.toLowerCase(), position })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id as number
  const color = await option('Color', 0)
  const size = await option('Size', 1)
  const values = new Map<string, number>()
  const value = async (optionId: number, text: string) => {
    const key = `${optionId}:${text}`
    if (!values.has(key)) {
      const row = await migrating.raw
        .insertInto('product_option_values')
        .values({ option_id: optionId, value: text, value_key: text.toLowerCase(), position: values.size })
        .returning('id')
        .executeTakeFirstOrThrow()
      values.set(key, row.id as number)
    }
    return values.get(key)!
  }
  const variants: number[] = []
  for (const [i, [c, s]] of pairs.entries()) {
    const ids = [await value(color, c), await value(size, s)].sort((a, b) => a - b)
    const variant = await migrating.raw
      .insertInto('product_variants')
      .values({
        product_id: product.id,
        sku: `${name}-${i}`,
        sku_key: `${name}-${i}`.toLowerCase(),
        price_cents: 1000 + 100 * i,
        stock: 2,
        position: i,
        values_key: ids.join(','),
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    await migrating.raw
      .insertInto('variant_option_values')
      .values(ids.map((id) => ({ variant_id: variant.id, option_value_id: id })))
      .execute()
    variants.push(variant.id as number)
  }
  return { id: product.id as number, color, size, values, variants }
}

describe(`migration ${FILTERS}`, () => {
  let schemaBefore: Row[]
  let tee: Awaited<ReturnType<typeof shirt>>
  let category: number
  let other: number

  it('writes a row for each variant and value already there, and none for a variant without options', async () => {
    expect((await migrating.migrator.migrateTo(BEFORE)).error).toBeUndefined()
    const categories = await migrating.raw
      .insertInto('categories')
      .values(
        ['Ropa', 'Calzado'].map((name, i) => ({
          name,
          name_key: name.toLowerCase(),
          slug: name.toLowerCase(),
          path: `/${i + 1}/`,
          description: '',
          created_at: now,
          updated_at: now,
        })),
      )
      .returning('id')
      .execute()
    category = categories[0]!.id as number
    other = categories[1]!.id as number
    // Category paths follow their ids.
    for (const { id } of categories)
      await migrating.raw
        .updateTable('categories')
        .set({ path: `/${id}/` })
        .where('id', '=', id)
        .execute()
    tee = await shirt('Tee', category, [
      ['Red', 'S'],
      ['Red', 'M'],
      ['Blue', 'S'],
    ])
    await shirt('Polo', null, [['Green', 'L']])
    // A product without options: its default variant has no rows.
    const plain = await migrating.raw
      .insertInto('products')
      .values(productRow({ name: 'Plain' }))
      .returning('id')
      .executeTakeFirstOrThrow()
    await migrating.raw
      .insertInto('product_variants')
      .values({ product_id: plain.id, sku: null, sku_key: null, price_cents: 500, stock: 1, position: 0, values_key: '', created_at: now, updated_at: now })
      .execute()
    schemaBefore = await migrating.schemaOf()

    const up = await migrating.migrator.migrateTo(FILTERS)
    expect(up.error).toBeUndefined()
    expect(up.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[FILTERS, 'Up', 'Success']])
    const rows = await kept()
    expect(rows).toHaveLength(8)
    expect(rows).toEqual(await computed())
    expect(rows.filter((row) => row.product_id === tee.id && row.name_key === 'color').map((row) => [row.value_key, row.price_cents, row.in_stock])).toEqual([
      ['red', 1000, 1],
      ['red', 1100, 1],
      ['blue', 1200, 1],
    ])
  })

  it('follows prices, stock crossing zero, categories, status, keys and removals', async () => {
    const [first, second, third] = tee.variants as [number, number, number]
    const check = async () => expect(await kept()).toEqual(await computed())
    await migrating.raw.updateTable('product_variants').set({ price_cents: 1999 }).where('id', '=', first).execute()
    await check()
    // Stock down to 1 (still in stock), then to 0, then back.
    await migrating.raw.updateTable('product_variants').set({ stock: 1 }).where('id', '=', second).execute()
    await check()
    await migrating.raw.updateTable('product_variants').set({ stock: 0 }).where('id', '=', second).execute()
    await check()
    expect((await kept()).filter((row) => row.variant_id === second).map((row) => row.in_stock)).toEqual([0, 0])
    await migrating.raw.updateTable('product_variants').set({ stock: 5 }).where('id', '=', second).execute()
    await check()
    await migrating.raw.updateTable('products').set({ category_id: other }).where('id', '=', tee.id).execute()
    await check()
    await migrating.raw.updateTable('products').set({ status: 'archived' }).where('id', '=', tee.id).execute()
    await check()
    await migrating.raw.updateTable('products').set({ category_id: null, status: 'active' }).where('id', '=', tee.id).execute()
    await check()
    await migrating.raw
      .updateTable('product_option_values')
      .set({ value: 'Rojo', value_key: 'rojo' })
      .where('id', '=', tee.values.get(`${tee.color}:Red`)!)
      .execute()
    await check()
    expect((await kept()).filter((row) => row.value_key === 'rojo')).toHaveLength(2)
    await migrating.raw.updateTable('product_options').set({ name: 'Talla', name_key: 'talla' }).where('id', '=', tee.size).execute()
    await check()
    expect((await kept()).filter((row) => row.name_key === 'talla')).toHaveLength(3)
    await migrating.raw
      .deleteFrom('variant_option_values')
      .where('variant_id', '=', third)
      .where('option_value_id', '=', tee.values.get(`${tee.color}:Blue`)!)
      .execute()
    await check()
    await migrating.raw.deleteFrom('product_variants').where('id', '=', first).execute()
    await check()
    await migrating.raw.deleteFrom('products').where('id', '=', tee.id).execute()
    await check()
    expect((await kept()).map((row) => row.name_key)).toEqual(['color', 'size'])
  })

  it('goes down to the schema as it was, and up again with the rows computed afresh', async () => {
    const down = await migrating.migrator.migrateTo(BEFORE)
    expect(down.error).toBeUndefined()
    expect(await migrating.schemaOf()).toEqual(schemaBefore)
    expect((await migrating.migrator.migrateTo(FILTERS)).error).toBeUndefined()
    expect(await kept()).toEqual(await computed())
    expect(await kept()).toHaveLength(2)
  })
})

describe('2026-12-06T0000-variant-filters-covering', () => {
  const COVERING = '2026-12-06T0000-variant-filters-covering'
  const indexSql = async (): Promise<string> => {
    if (!migrating.isPg) {
      const row = await sql<{ sql: string }>`select sql from sqlite_master where name = 'variant_filters_value_idx'`.execute(migrating.raw)
      return row.rows[0]?.sql ?? ''
    }
    const row = await sql<{ indexdef: string }>`select indexdef from pg_indexes where schemaname = ${migrating.opened.handle.schema ?? 'public'}
      and indexname = 'variant_filters_value_idx'`.execute(migrating.raw)
    return row.rows[0]?.indexdef ?? ''
  }

  it('on PostgreSQL, the value index carries each row’s variant and value (SQLite’s holds them through its key); down as it was', async () => {
    expect((await migrating.migrator.migrateTo(FILTERS)).error).toBeUndefined()
    const before = await indexSql()
    expect(before).toMatch(/price_cents, product_id, option_id\)$/)
    expect((await migrating.migrator.migrateTo(COVERING)).error).toBeUndefined()
    const after = await indexSql()
    if (migrating.isPg)
      expect(after).toMatch(
        /\(name_key, value_key, status, in_stock, category_id, price_cents, product_id, option_id\) INCLUDE \(variant_id, option_value_id\)$/,
      )
    else expect(after).toBe(before)
    // The facets read from it still: the rows are the triggers' as before.
    expect(await kept()).toEqual(await computed())
    expect((await migrating.migrator.migrateTo(FILTERS)).error).toBeUndefined()
    expect(await indexSql()).toBe(before)
    expect((await migrating.migrator.migrateTo(COVERING)).error).toBeUndefined()
  })
})

describe('2026-12-07T0000-variant-filters-key-covering', () => {
  const COVERING = '2026-12-06T0000-variant-filters-covering'
  const KEY_COVERING = '2026-12-07T0000-variant-filters-key-covering'
  const keySql = async (): Promise<string> => {
    if (!migrating.isPg) {
      const row = await sql<{ sql: string }>`select sql from sqlite_master where name = 'variant_filters'`.execute(migrating.raw)
      return row.rows[0]?.sql ?? ''
    }
    const row = await sql<{ indexdef: string }>`select i.indexdef from pg_indexes i
      join pg_constraint c on c.conname = i.indexname and c.contype = 'p'
      join pg_namespace n on n.oid = c.connamespace and n.nspname = i.schemaname
      where i.schemaname = ${migrating.opened.handle.schema ?? 'public'} and i.tablename = 'variant_filters'`.execute(migrating.raw)
    return row.rows[0]?.indexdef ?? ''
  }

  it('on PostgreSQL, the primary key carries each row’s option, value and product (SQLite’s rows are their key); down as it was', async () => {
    expect((await migrating.migrator.migrateTo(COVERING)).error).toBeUndefined()
    const before = await keySql()
    if (migrating.isPg) expect(before).toMatch(/^CREATE UNIQUE INDEX variant_filters_pkey ON .* \(variant_id, option_value_id\)$/)
    expect((await migrating.migrator.migrateTo(KEY_COVERING)).error).toBeUndefined()
    const after = await keySql()
    if (migrating.isPg)
      expect(after).toMatch(
        /^CREATE UNIQUE INDEX variant_filters_pkey ON .* \(variant_id, option_value_id\) INCLUDE \(name_key, value_key, product_id, option_id\)$/,
      )
    else expect(after).toBe(before)
    // Still the key: a second row for the same variant and value is refused; the triggers' rows are as before.
    const [row] = (await sql<Record<string, unknown>>`select * from variant_filters limit 1`.execute(migrating.raw)).rows
    await expect(
      sql`insert into variant_filters select * from variant_filters where variant_id = ${row!.variant_id} and option_value_id = ${row!.option_value_id}`.execute(
        migrating.raw,
      ),
    ).rejects.toThrow(/unique|primary/i)
    expect(await kept()).toEqual(await computed())
    expect((await migrating.migrator.migrateTo(COVERING)).error).toBeUndefined()
    expect(await keySql()).toBe(before)
    expect((await migrating.migrator.migrateTo(KEY_COVERING)).error).toBeUndefined()
  })
})
