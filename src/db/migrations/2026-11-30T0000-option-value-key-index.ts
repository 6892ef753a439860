import type { Kysely } from 'kysely'

// The listing filters and GET /products/facets with `option.<Name>=<value>`: the products having that value are found
// from the values by key (then their option, by id, for its name and product), instead of trying every product of the
// other filters. The values' own index is by (option_id, value_key), of no use without the option.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('product_option_values_key_idx').on('product_option_values').columns(['value_key', 'option_id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('product_option_values_key_idx').execute()
}
