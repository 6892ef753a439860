import type { Insertable, Kysely, Transaction, Updateable } from 'kysely'
import type { Database, TaxClassesTable, TaxClassRow, TaxRateRow, TaxRatesTable } from '../../db/database.js'

type Db = Kysely<Database> | Transaction<Database>

export async function listTaxClasses(db: Db): Promise<TaxClassRow[]> {
  return db.selectFrom('tax_classes').selectAll().orderBy('id').execute()
}

export async function findTaxClass(db: Db, code: string): Promise<TaxClassRow | undefined> {
  return db.selectFrom('tax_classes').selectAll().where('code', '=', code).executeTakeFirst()
}

export async function insertTaxClass(db: Db, row: Insertable<TaxClassesTable>): Promise<TaxClassRow> {
  return db.insertInto('tax_classes').values(row).returningAll().executeTakeFirstOrThrow()
}

export async function updateTaxClass(db: Db, code: string, changes: Updateable<TaxClassesTable>): Promise<TaxClassRow | undefined> {
  return db.updateTable('tax_classes').set(changes).where('code', '=', code).returningAll().executeTakeFirst()
}

export async function deleteTaxClass(db: Db, code: string): Promise<boolean> {
  const result = await db.deleteFrom('tax_classes').where('code', '=', code).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/** Whether a rate names the class. */
export async function ratesUseClass(db: Db, code: string): Promise<boolean> {
  return (await db.selectFrom('tax_rates').select('id').where('tax_class', '=', code).limit(1).executeTakeFirst()) !== undefined
}

export async function listTaxRates(db: Db, filter: { country?: string | undefined; taxClass?: string | undefined }): Promise<TaxRateRow[]> {
  return db
    .selectFrom('tax_rates')
    .selectAll()
    .$if(filter.country !== undefined, (qb) => qb.where('country', '=', filter.country!))
    .$if(filter.taxClass !== undefined, (qb) => qb.where('tax_class', '=', filter.taxClass!))
    .orderBy('country')
    .orderBy('tax_class')
    .orderBy('region_key')
    .orderBy('id')
    .execute()
}

export async function findTaxRate(db: Db, id: number): Promise<TaxRateRow | undefined> {
  return db.selectFrom('tax_rates').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function insertTaxRate(db: Db, row: Insertable<TaxRatesTable>): Promise<TaxRateRow> {
  return db.insertInto('tax_rates').values(row).returningAll().executeTakeFirstOrThrow()
}

export async function updateTaxRate(db: Db, id: number, changes: Updateable<TaxRatesTable>): Promise<TaxRateRow | undefined> {
  return db.updateTable('tax_rates').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
}

export async function deleteTaxRate(db: Db, id: number): Promise<boolean> {
  const result = await db.deleteFrom('tax_rates').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/** The rates of `classes` in `country` that apply to `regionKey`: the country's own ('') and the region's. */
export async function ratesFor(db: Db, country: string, regionKey: string, classes: readonly string[]) {
  return db
    .selectFrom('tax_rates')
    .select(['tax_class', 'region_key', 'rate', 'name'])
    .where('country', '=', country)
    .where('tax_class', 'in', classes)
    .where('region_key', 'in', regionKey === '' ? [''] : ['', regionKey])
    .execute()
}

/** Every rate of a country: the country's own and the region's (for the rates cache). */
export async function ratesOfPlace(db: Db, country: string, regionKey: string) {
  return db
    .selectFrom('tax_rates')
    .select(['tax_class', 'region_key', 'rate', 'name'])
    .where('country', '=', country)
    .where('region_key', 'in', regionKey === '' ? [''] : ['', regionKey])
    .execute()
}
