import { type Kysely, PostgresAdapter, sql } from 'kysely'

// The listing filters and GET /products/facets with `option.<Name>=<value>`: `variant_filters` holds, for each variant
// and each of its option values, what the filters test of that one same variant (its option's name and value as keys,
// its price, whether it is in stock) and of its product (category, status). A filter on an option, a price range,
// stock and categories is then one range of one index, instead of a walk of each candidate product's variants.
//
// Kept by triggers, never written by the service:
// - a value given to a variant (`variant_option_values` insert) adds its row; removing it removes the row (the
//   foreign key's cascade, as deleting the variant, its value or its product does);
// - a variant's price, and its stock when it crosses zero (not every sale), update its rows;
// - a product's category or status, a value's key and an option's name key update theirs.
// Every write that changes a product's category or status locks its variants first, as checkout does (variants, then
// the product): the rows a trigger updates are taken in the same order everywhere, so no two writes wait on each
// other in a cycle.
// Variants without options (the default variant) have no rows here: filters without an option read the variants.
// The backfill writes a row per variant and value: about a minute for a million variants, longer than a statement may
// run by default on PostgreSQL (`PG_STATEMENT_TIMEOUT_MS=0 npm run migrate`, docs/operations.md).

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/** The row of each (variant, value) link in `links`: a table or a PostgreSQL transition table named `l`. */
const rowsOf = (links: string) =>
  sql.raw(`select l.variant_id, l.option_value_id, v.product_id, p.category_id, p.status, ov.option_id, o.name_key, ov.value_key,
      v.price_cents, case when v.stock > 0 then 1 else 0 end
    from ${links} l
      join product_variants v on v.id = l.variant_id
      join products p on p.id = v.product_id
      join product_option_values ov on ov.id = l.option_value_id
      join product_options o on o.id = ov.option_id`)

const COLUMNS = sql.raw('variant_id, option_value_id, product_id, category_id, status, option_id, name_key, value_key, price_cents, in_stock')

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = isPostgres(db)
  // SQLite runs a migration outside a transaction: this one takes the write lock for all of it, so no write lands
  // between the backfill and the triggers, and a failure leaves nothing behind. (PostgreSQL's runs in one already.)
  if (!isPg) await sql`begin immediate`.execute(db)
  try {
    await upSteps(db, isPg)
    if (!isPg) await sql`commit`.execute(db)
  } catch (error) {
    if (!isPg) await sql`rollback`.execute(db)
    throw error
  }
}

async function upSteps(db: Kysely<any>, isPg: boolean): Promise<void> {
  await sql`create table variant_filters (
      variant_id integer not null,
      option_value_id integer not null,
      product_id integer not null,
      category_id integer,
      status text not null,
      option_id integer not null,
      name_key text not null,
      value_key text not null,
      price_cents bigint not null,
      in_stock integer not null,
      primary key (variant_id, option_value_id),
      foreign key (variant_id, option_value_id) references variant_option_values (variant_id, option_value_id) on delete cascade
    )${sql.raw(isPg ? '' : ' without rowid')}`.execute(db)
  // A value among a category's (or the shop's) products, in stock or not, by price: the list, the total and every
  // facet, one range per value and category, covering. An option's own facet walks its values (a few) on the same
  // index, one range each.
  await sql`create index variant_filters_value_idx on variant_filters
    (name_key, value_key, status, in_stock, category_id, price_cents, product_id, option_id)`.execute(db)
  // The triggers before the backfill: on PostgreSQL creating them locks their tables until the migration commits, so a
  // write by another instance still running waits, then fires them, instead of landing after the backfill's snapshot.
  if (isPg) {
    await sql`create function variant_filters_after_link() returns trigger language plpgsql as $$
      begin
        insert into variant_filters (${COLUMNS}) ${rowsOf('new_links')};
        return null;
      end $$`.execute(db)
    await sql`create trigger variant_filters_link after insert on variant_option_values
      referencing new table as new_links for each statement execute function variant_filters_after_link()`.execute(db)
    await sql`create function variant_filters_after_variant() returns trigger language plpgsql as $$
      begin
        update variant_filters set price_cents = new.price_cents, in_stock = case when new.stock > 0 then 1 else 0 end
          where variant_id = new.id;
        return null;
      end $$`.execute(db)
    await sql`create trigger variant_filters_variant after update of price_cents, stock on product_variants
      for each row when (old.price_cents <> new.price_cents or (old.stock > 0) <> (new.stock > 0))
      execute function variant_filters_after_variant()`.execute(db)
    await sql`create function variant_filters_after_product() returns trigger language plpgsql as $$
      begin
        update variant_filters set category_id = new.category_id, status = new.status
          where variant_id in (select id from product_variants where product_id = new.id);
        return null;
      end $$`.execute(db)
    await sql`create trigger variant_filters_product after update of category_id, status on products
      for each row when (old.category_id is distinct from new.category_id or old.status <> new.status)
      execute function variant_filters_after_product()`.execute(db)
    await sql`create function variant_filters_after_value() returns trigger language plpgsql as $$
      begin
        update variant_filters set value_key = new.value_key
          where option_value_id = new.id and variant_id in (select variant_id from variant_option_values where option_value_id = new.id);
        return null;
      end $$`.execute(db)
    await sql`create trigger variant_filters_value after update of value_key on product_option_values
      for each row when (old.value_key <> new.value_key) execute function variant_filters_after_value()`.execute(db)
    await sql`create function variant_filters_after_option() returns trigger language plpgsql as $$
      begin
        update variant_filters set name_key = new.name_key
          where (variant_id, option_value_id) in (select l.variant_id, l.option_value_id from variant_option_values l
            join product_option_values ov on ov.id = l.option_value_id where ov.option_id = new.id);
        return null;
      end $$`.execute(db)
    await sql`create trigger variant_filters_option after update of name_key on product_options
      for each row when (old.name_key <> new.name_key) execute function variant_filters_after_option()`.execute(db)
  } else {
    await sql`create trigger variant_filters_link after insert on variant_option_values begin
        insert into variant_filters (${COLUMNS}) ${rowsOf('variant_option_values')}
          where l.variant_id = new.variant_id and l.option_value_id = new.option_value_id;
      end`.execute(db)
    await sql`create trigger variant_filters_variant after update of price_cents, stock on product_variants
      when old.price_cents <> new.price_cents or (old.stock > 0) <> (new.stock > 0) begin
        update variant_filters set price_cents = new.price_cents, in_stock = new.stock > 0 where variant_id = new.id;
      end`.execute(db)
    await sql`create trigger variant_filters_product after update of category_id, status on products
      when old.category_id is not new.category_id or old.status <> new.status begin
        update variant_filters set category_id = new.category_id, status = new.status
          where variant_id in (select id from product_variants where product_id = new.id);
      end`.execute(db)
    await sql`create trigger variant_filters_value after update of value_key on product_option_values
      when old.value_key <> new.value_key begin
        update variant_filters set value_key = new.value_key
          where option_value_id = new.id and variant_id in (select variant_id from variant_option_values where option_value_id = new.id);
      end`.execute(db)
    await sql`create trigger variant_filters_option after update of name_key on product_options
      when old.name_key <> new.name_key begin
        update variant_filters set name_key = new.name_key
          where (variant_id, option_value_id) in (select l.variant_id, l.option_value_id from variant_option_values l
            join product_option_values ov on ov.id = l.option_value_id where ov.option_id = new.id);
      end`.execute(db)
  }
  await sql`insert into variant_filters (${COLUMNS}) ${rowsOf('variant_option_values')}`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  const isPg = isPostgres(db)
  for (const [trigger, table] of [
    ['variant_filters_link', 'variant_option_values'],
    ['variant_filters_variant', 'product_variants'],
    ['variant_filters_product', 'products'],
    ['variant_filters_value', 'product_option_values'],
    ['variant_filters_option', 'product_options'],
  ] as const) {
    await sql.raw(isPg ? `drop trigger ${trigger} on ${table}` : `drop trigger ${trigger}`).execute(db)
  }
  if (isPg) {
    for (const fn of ['link', 'variant', 'product', 'value', 'option']) await sql.raw(`drop function variant_filters_after_${fn}()`).execute(db)
  }
  await sql`drop table variant_filters`.execute(db)
}
