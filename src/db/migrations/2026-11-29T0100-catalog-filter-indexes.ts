import type { Kysely } from 'kysely'

// The listing filters and GET /products/facets (docs/catalog.md, "Filters and facets"):
// - `product_variants (product_id, price_cents, stock)`: "one same variant in this price range, in stock" for a
//   product is read from the index alone (the price facet with `inStock` too), without a row per variant.
// - `products (status, category_id)`: the facets count the products of a status per category from the index alone.
// The other paths had their index already: options by (product_id, name_key), values by (option_id, value_key),
// variants by value (variant_option_values (option_value_id, variant_id)), tags by (tag_key, product_id), the SKU
// key, categories by path.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('product_variants_product_price_idx').on('product_variants').columns(['product_id', 'price_cents', 'stock']).execute()
  await db.schema.createIndex('products_status_category_idx').on('products').columns(['status', 'category_id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('products_status_category_idx').execute()
  await db.schema.dropIndex('product_variants_product_price_idx').execute()
}
