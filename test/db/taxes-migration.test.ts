import { describe, expect, it } from 'vitest'
import { type Row, useMigrationDatabase } from '../helpers/migrations.js'
import { productRow } from '../helpers/catalog.js'

// The taxes migration on a shop with data: the seeded classes, a class for each code products already named, the
// shipping methods' class; down to the schema as it was (rows kept), and up again.

const TAXES = '2026-12-01T0000-taxes'
const BEFORE = '2026-11-30T0000-option-value-key-index'
const now = '2026-11-30T10:00:00.000Z'

const migrating = useMigrationDatabase()

const shippingRows = () => migrating.raw.selectFrom('shipping_methods').selectAll().orderBy('id').execute()
const productClasses = () => migrating.raw.selectFrom('products').select(['name', 'tax_class']).orderBy('id').execute()

describe(`migration ${TAXES}`, () => {
  let schemaBefore: Row[]
  let shippingBefore: Row[]

  it('seeds the four classes, adds a class for each code a product already names, and gives shipping methods standard', async () => {
    expect((await migrating.migrator.migrateTo(BEFORE)).error).toBeUndefined()
    await migrating.raw
      .insertInto('products')
      .values([
        { ...productRow({ name: 'Normal' }), tax_class: 'standard' },
        { ...productRow({ name: 'Lujo' }), tax_class: 'luxe' },
      ])
      .execute()
    await migrating.raw
      .insertInto('shipping_methods')
      .values({ name: 'Seur', price_cents: 490, countries: '[]', free_over_cents: null, active: 1, created_at: now, updated_at: now })
      .execute()
    schemaBefore = await migrating.schemaOf()
    shippingBefore = await shippingRows()

    const up = await migrating.migrator.migrateTo(TAXES)
    expect(up.error).toBeUndefined()
    expect(up.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[TAXES, 'Up', 'Success']])
    expect(await migrating.raw.selectFrom('tax_classes').select(['code', 'name']).orderBy('id').execute()).toEqual([
      { code: 'standard', name: 'General' },
      { code: 'reduced', name: 'Reducido' },
      { code: 'super_reduced', name: 'Superreducido' },
      { code: 'zero', name: 'Tipo cero' },
      { code: 'luxe', name: 'luxe' },
    ])
    expect(await migrating.raw.selectFrom('tax_rates').selectAll().execute()).toEqual([])
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
    await migrating.raw.insertInto('tax_rates').values(rate({})).execute()
    await migrating.raw
      .insertInto('tax_rates')
      .values(rate({ region: 'Canarias', region_key: 'canarias', rate: 700 }))
      .execute()
    await expect(
      migrating.raw
        .insertInto('tax_rates')
        .values(rate({ rate: 1000 }))
        .execute(),
    ).rejects.toThrow()
    await expect(
      migrating.raw
        .insertInto('tax_rates')
        .values(rate({ country: 'PT', tax_class: 'nope' }))
        .execute(),
    ).rejects.toThrow()
    await expect(
      migrating.raw
        .insertInto('tax_rates')
        .values(rate({ country: 'PT', rate: 10001 }))
        .execute(),
    ).rejects.toThrow()
    await expect(
      migrating.raw
        .insertInto('tax_rates')
        .values(rate({ country: 'PT', rate: -1 }))
        .execute(),
    ).rejects.toThrow()
    await expect(migrating.raw.insertInto('tax_classes').values({ code: 'luxe', name: 'x', created_at: now, updated_at: now }).execute()).rejects.toThrow()
    expect((await migrating.raw.selectFrom('tax_rates').select('rate').orderBy('id').execute()).map((r) => r.rate)).toEqual([2100, 700])
  })

  it('goes down to the schema as it was, rows kept, and up again', async () => {
    const down = await migrating.migrator.migrateDown()
    expect(down.error).toBeUndefined()
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([[TAXES, 'Down', 'Success']])
    expect(await migrating.schemaOf()).toEqual(schemaBefore)
    expect(await shippingRows()).toEqual(shippingBefore)
    expect(await productClasses()).toEqual([
      { name: 'Normal', tax_class: 'standard' },
      { name: 'Lujo', tax_class: 'luxe' },
    ])
    expect((await migrating.migrator.migrateTo(TAXES)).error).toBeUndefined()
    expect(await migrating.raw.selectFrom('tax_classes').select('code').orderBy('id').execute()).toHaveLength(5)
  })
})
