import { type Kysely, Migrator, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrations } from '../../src/db/migrate.js'
import { openTestDatabase } from '../helpers/app.js'
import { productRow } from '../helpers/catalog.js'

// The taxes migration on a shop with data: the seeded classes, a class for each code products already named, the
// shipping methods' class; down to the schema as it was (rows kept), and up again.

const TAXES = '2026-12-01T0000-taxes'
const BEFORE = '2026-11-30T0000-option-value-key-index'
const now = '2026-11-30T10:00:00.000Z'

let opened: Awaited<ReturnType<typeof openTestDatabase>>
let raw: Kysely<any>
let migrator: Migrator
let isPg: boolean

beforeAll(async () => {
  opened = await openTestDatabase()
  raw = opened.handle.db as unknown as Kysely<any>
  isPg = opened.handle.dialect === 'postgres'
  const schema = opened.handle.schema
  migrator = new Migrator({ db: raw, provider: { getMigrations: async () => migrations }, ...(schema ? { migrationTableSchema: schema } : {}) })
})
afterAll(async () => {
  await opened.drop()
})

type Row = Record<string, unknown>

/** Tables, columns and indexes, in a stable order. */
async function schemaOf(): Promise<Row[]> {
  if (!isPg) {
    return (await sql<Row>`select type, name, tbl_name, sql from sqlite_master where name not like 'kysely%' order by type, name`.execute(raw)).rows
  }
  const schema = opened.handle.schema ?? 'public'
  const columns = await sql<Row>`select table_name, column_name, data_type, is_nullable, column_default from information_schema.columns
    where table_schema = ${schema} and table_name not like 'kysely%' order by table_name, column_name`.execute(raw)
  const indexes = await sql<Row>`select tablename, indexname, indexdef from pg_indexes
    where schemaname = ${schema} and tablename not like 'kysely%' order by tablename, indexname`.execute(raw)
  return [...columns.rows, ...indexes.rows]
}

const shippingRows = () => raw.selectFrom('shipping_methods').selectAll().orderBy('id').execute()
const productClasses = () => raw.selectFrom('products').select(['name', 'tax_class']).orderBy('id').execute()

describe(`migration ${TAXES}`, () => {
  let schemaBefore: Row[]
  let shippingBefore: Row[]

  it('seeds the four classes, adds a class for each code a product already names, and gives shipping methods standard', async () => {
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined()
    await raw
      .insertInto('products')
      .values([
        { ...productRow({ name: 'Normal' }), tax_class: 'standard' },
        { ...productRow({ name: 'Lujo' }), tax_class: 'luxe' },
      ])
      .execute()
    await raw
      .insertInto('shipping_methods')
      .values({ name: 'Seur', price_cents: 490, countries: '[]', free_over_cents: null, active: 1, created_at: now, updated_at: now })
      .execute()
    schemaBefore = await schemaOf()
    shippingBefore = await shippingRows()

    const up = await migrator.migrateTo(TAXES)
    expect(up.error).toBeUndefined()
    expect(up.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[TAXES, 'Up', 'Success']])
    expect(await raw.selectFrom('tax_classes').select(['code', 'name']).orderBy('id').execute()).toEqual([
      { code: 'standard', name: 'General' },
      { code: 'reduced', name: 'Reducido' },
      { code: 'super_reduced', name: 'Superreducido' },
      { code: 'zero', name: 'Tipo cero' },
      { code: 'luxe', name: 'luxe' },
    ])
    expect(await raw.selectFrom('tax_rates').selectAll().execute()).toEqual([])
    expect((await shippingRows()).map((row) => row.tax_class)).toEqual(['standard'])
    expect(await productClasses()).toEqual([
      { name: 'Normal', tax_class: 'standard' },
      { name: 'Lujo', tax_class: 'luxe' },
    ])
  })

  it('keeps one rate per country, region and class, of a class that exists, from 0 to 100 %', async () => {
    const rate = (values: Row) => ({
      country: 'ES',
      region: null,
      region_key: '',
      tax_class: 'standard',
      rate: 2100,
      name: 'IVA 21%',
      created_at: now,
      updated_at: now,
      ...values,
    })
    await raw.insertInto('tax_rates').values(rate({})).execute()
    await raw
      .insertInto('tax_rates')
      .values(rate({ region: 'Canarias', region_key: 'canarias', rate: 700 }))
      .execute()
    await expect(
      raw
        .insertInto('tax_rates')
        .values(rate({ rate: 1000 }))
        .execute(),
    ).rejects.toThrow()
    await expect(
      raw
        .insertInto('tax_rates')
        .values(rate({ country: 'PT', tax_class: 'nope' }))
        .execute(),
    ).rejects.toThrow()
    await expect(
      raw
        .insertInto('tax_rates')
        .values(rate({ country: 'PT', rate: 10001 }))
        .execute(),
    ).rejects.toThrow()
    await expect(
      raw
        .insertInto('tax_rates')
        .values(rate({ country: 'PT', rate: -1 }))
        .execute(),
    ).rejects.toThrow()
    await expect(raw.insertInto('tax_classes').values({ code: 'luxe', name: 'x', created_at: now, updated_at: now }).execute()).rejects.toThrow()
    expect((await raw.selectFrom('tax_rates').select('rate').orderBy('id').execute()).map((r) => r.rate)).toEqual([2100, 700])
  })

  it('goes down to the schema as it was, rows kept, and up again', async () => {
    const down = await migrator.migrateDown()
    expect(down.error).toBeUndefined()
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[TAXES, 'Down', 'Success']])
    expect(await schemaOf()).toEqual(schemaBefore)
    expect(await shippingRows()).toEqual(shippingBefore)
    expect(await productClasses()).toEqual([
      { name: 'Normal', tax_class: 'standard' },
      { name: 'Lujo', tax_class: 'luxe' },
    ])
    expect((await migrator.migrateTo(TAXES)).error).toBeUndefined()
    expect(await raw.selectFrom('tax_classes').select('code').orderBy('id').execute()).toHaveLength(5)
  })
})
