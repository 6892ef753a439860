import { type Kysely, PostgresAdapter, sql } from 'kysely'

// Tax classes and their rates per country (and region), and the class of each shipping method.
//
// `tax_classes` is seeded with the four classes of a Spanish shop (standard, reduced, super_reduced, zero); no rate
// is seeded. A class code a product or a variant already names (the catalog took any text before this migration)
// becomes a class of its own, named as its code, so that nothing names an unknown class afterwards.
// `tax_rates.rate` is in hundredths of a percent (21 % = 2100): exact, no float. `region_key` is the region in lower
// case, '' for the country's own rate: the key of "one rate per country, region and class", and of the lookup.
// Shipping methods get `tax_class`, `standard` for the existing ones.

const SEEDED = [
  ['standard', 'General'],
  ['reduced', 'Reducido'],
  ['super_reduced', 'Superreducido'],
  ['zero', 'Tipo cero'],
] as const

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const id = isPg ? 'serial' : 'integer'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  const now = new Date().toISOString()

  await db.schema
    .createTable('tax_classes')
    .addColumn('id', id, primaryId)
    .addColumn('code', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db
    .insertInto('tax_classes')
    .values(SEEDED.map(([code, name]) => ({ code, name, created_at: now, updated_at: now })))
    .execute()
  await sql`insert into tax_classes (code, name, created_at, updated_at)
    select used.code, used.code, ${now}, ${now} from (
      select tax_class as code from products union select tax_class as code from product_variants where tax_class is not null
    ) used
    where not exists (select 1 from tax_classes c where c.code = used.code)
    order by used.code`.execute(db)

  await db.schema
    .createTable('tax_rates')
    .addColumn('id', id, primaryId)
    .addColumn('country', 'text', (c) => c.notNull())
    .addColumn('region', 'text')
    .addColumn('region_key', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('tax_class', 'text', (c) => c.notNull().references('tax_classes.code'))
    .addColumn('rate', 'integer', (c) => c.notNull().check(sql`rate >= 0 and rate <= 10000`))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  // One rate per country, region and class; also the lookup's index (a country's rates of some classes).
  await db.schema.createIndex('tax_rates_key_idx').on('tax_rates').columns(['country', 'tax_class', 'region_key']).unique().execute()

  await db.schema
    .alterTable('shipping_methods')
    .addColumn('tax_class', 'text', (c) => c.notNull().defaultTo('standard'))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('shipping_methods').dropColumn('tax_class').execute()
  await db.schema.dropTable('tax_rates').ifExists().execute()
  await db.schema.dropTable('tax_classes').ifExists().execute()
}
