import type { Kysely } from 'kysely'

// Orders keep the full breakdown of their totals, as the totals function computed it at checkout: the currency
// and whether prices included tax then, the tax country, the discount (the code's `{code, type, value}` and its
// amounts), the taxes (a total and the tax lines) and, per line, its option values, tax class and rate, its
// share of the discount, its tax and its total. Nothing is recomputed later: a rate or a code changed afterwards
// never alters an order. Orders written before keep null columns, read as no discount and no tax (their lines'
// totals are price × quantity).

const orderColumns = [
  ['currency', 'text'],
  ['prices_include_tax', 'integer'],
  ['tax_country', 'text'],
  ['discount_total_cents', 'bigint'],
  ['shipping_discount_cents', 'bigint'],
  ['tax_total_cents', 'bigint'],
  ['discount', 'text'],
  ['tax_lines', 'text'],
] as const

const lineColumns = [
  ['options', 'text'],
  ['tax_class', 'text'],
  ['tax_rate', 'integer'],
  ['discount_cents', 'bigint'],
  ['tax_cents', 'bigint'],
  ['total_cents', 'bigint'],
] as const

export async function up(db: Kysely<any>): Promise<void> {
  for (const [name, type] of orderColumns) await db.schema.alterTable('orders').addColumn(name, type).execute()
  for (const [name, type] of lineColumns) await db.schema.alterTable('order_items').addColumn(name, type).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [name] of [...lineColumns].reverse()) await db.schema.alterTable('order_items').dropColumn(name).execute()
  for (const [name] of [...orderColumns].reverse()) await db.schema.alterTable('orders').dropColumn(name).execute()
}
