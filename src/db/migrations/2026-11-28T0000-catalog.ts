import { type Kysely, PostgresAdapter, sql } from 'kysely'
import { numberedSlug, slugify } from '../../shared/slug.js'
import { createProductCountTriggers } from './2026-11-22T0000-initial.js'

// The catalog of part 3: variants and options, several images, slugs, drafts, a category tree and tags.
// - Every existing product gets one default variant (no options, values_key '') with its price, stock and image,
//   and its image becomes its first `product_images` row. `products.price_cents` (lowest variant price),
//   `price_max_cents` and `stock` (sum) stay on the product, kept by the catalog's writes and the inventory, so a
//   list reads one table.
// - `values_key`: the variant's option value ids, sorted, joined by ','. Unique per product: two variants with the
//   same values cannot exist, whatever races. `sku_key`: the SKU lower-cased, unique.
// - Products and categories get a slug (generated from the name, `-2`, `-3`… when taken); old slugs are kept in
//   `product_slugs`/`category_slugs` for the 301. Products get `status` (existing ones `active`) and `tax_class`.
// - Categories get `parent_id`, `position` and `path` (the materialized path of ids, `/1/4/`, the category's own id
//   last). Names are unique among siblings (roots count as siblings) instead of shop-wide.
// - `product_counts` counts active products only (what the public list shows).
// - Cart lines point at a variant (one line per user and variant); order lines keep the variant's id, SKU and title.
// SQLite cannot drop a table's unique constraint: `categories` and `cart_items` are rebuilt, with foreign keys off,
// in one transaction (SQLite's own procedure), each going on from the ids the old table had reached. `down` refuses
// while two categories share a name (rename one first), and merges the cart lines of one product's variants into
// its first line, quantities added.

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = isPostgres(db)
  if (!isPg) {
    await sql`pragma foreign_keys = off`.execute(db)
    await sql`begin immediate`.execute(db)
  }
  try {
    await upSteps(db, isPg)
    if (!isPg) {
      const broken = await sql`pragma foreign_key_check`.execute(db)
      if (broken.rows.length > 0) throw new Error(`catalog migration: ${broken.rows.length} rows break a foreign key`)
      await sql`commit`.execute(db)
    }
  } catch (error) {
    if (!isPg) await sql`rollback`.execute(db)
    throw error
  } finally {
    if (!isPg) await sql`pragma foreign_keys = on`.execute(db)
  }
}

async function upSteps(db: Kysely<any>, isPg: boolean): Promise<void> {
  const id = isPg ? 'serial' : 'integer'
  const primaryId = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  // Products: slug, status, tax class, highest variant price.
  await db.schema.alterTable('products').addColumn('slug', 'text').execute()
  await db.schema
    .alterTable('products')
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('active')
        .check(sql`status in ('draft', 'active', 'archived')`),
    )
    .execute()
  await db.schema
    .alterTable('products')
    .addColumn('tax_class', 'text', (c) => c.notNull().defaultTo('standard'))
    .execute()
  await db.schema.alterTable('products').addColumn('price_max_cents', 'bigint').execute()
  // The tags as the product shows them (a JSON array, in order): a list page reads one table. `product_tags`, written
  // with it, is what `?tag=` and the facets search.
  await db.schema
    .alterTable('products')
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute()
  await sql`update products set price_max_cents = price_cents`.execute(db)
  await fillSlugs(db, 'products', 'product')
  await db.schema.createIndex('products_slug_key').on('products').column('slug').unique().execute()
  await db.schema.createIndex('products_status_idx').on('products').columns(['status', 'id']).execute()
  await db.schema
    .createTable('product_slugs')
    .addColumn('slug', 'text', (c) => c.primaryKey())
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('product_slugs_product_idx').on('product_slugs').column('product_id').execute()

  await db.schema
    .createTable('product_images')
    .addColumn('id', id, primaryId)
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('image_key', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('alt', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('product_images_product_idx').on('product_images').columns(['product_id', 'position']).execute()
  await sql`insert into product_images (product_id, image_key, url, alt, position, created_at)
    select id, image_key, image_url, '', 0, created_at from products order by id`.execute(db)

  await db.schema
    .createTable('product_options')
    .addColumn('id', id, primaryId)
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_key', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addUniqueConstraint('product_options_name_key', ['product_id', 'name_key'])
    .execute()
  await db.schema
    .createTable('product_option_values')
    .addColumn('id', id, primaryId)
    .addColumn('option_id', 'integer', (c) => c.notNull().references('product_options.id').onDelete('cascade'))
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('value_key', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addUniqueConstraint('product_option_values_value_key', ['option_id', 'value_key'])
    .execute()

  await db.schema
    .createTable('product_variants')
    .addColumn('id', id, primaryId)
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('sku', 'text')
    .addColumn('sku_key', 'text')
    .addColumn('title', 'text')
    .addColumn('price_cents', 'bigint', (c) => c.notNull().check(sql`price_cents >= 0`))
    .addColumn('compare_at_cents', 'bigint')
    .addColumn('stock', 'integer', (c) => c.notNull().check(sql`stock >= 0`))
    .addColumn('image_id', 'integer', (c) => c.references('product_images.id').onDelete('set null'))
    .addColumn('tax_class', 'text')
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('values_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('product_variants_values_key', ['product_id', 'values_key'])
    .execute()
  await db.schema.createIndex('product_variants_sku_key').on('product_variants').column('sku_key').unique().execute()
  await db.schema.createIndex('product_variants_product_idx').on('product_variants').columns(['product_id', 'position']).execute()
  await db.schema.createIndex('product_variants_price_idx').on('product_variants').columns(['price_cents', 'product_id']).execute()
  await sql`insert into product_variants (product_id, sku, sku_key, title, price_cents, compare_at_cents, stock, image_id, tax_class,
      position, values_key, created_at, updated_at)
    select p.id, null, null, null, p.price_cents, null, p.stock, i.id, null, 0, '', p.created_at, p.updated_at
    from products p left join product_images i on i.product_id = p.id and i.position = 0 order by p.id`.execute(db)

  await db.schema
    .createTable('variant_option_values')
    .addColumn('variant_id', 'integer', (c) => c.notNull().references('product_variants.id').onDelete('cascade'))
    .addColumn('option_value_id', 'integer', (c) => c.notNull().references('product_option_values.id').onDelete('restrict'))
    .addPrimaryKeyConstraint('variant_option_values_pkey', ['variant_id', 'option_value_id'])
    .execute()
  await db.schema.createIndex('variant_option_values_value_idx').on('variant_option_values').columns(['option_value_id', 'variant_id']).execute()

  await db.schema
    .createTable('product_tags')
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('tag', 'text', (c) => c.notNull())
    .addColumn('tag_key', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('product_tags_pkey', ['product_id', 'tag_key'])
    .execute()
  await db.schema.createIndex('product_tags_tag_idx').on('product_tags').columns(['tag_key', 'product_id']).execute()

  await migrateCategories(db, isPg)
  await migrateCartItems(db, isPg)

  await db.schema.alterTable('order_items').addColumn('variant_id', 'integer').execute()
  await db.schema.alterTable('order_items').addColumn('sku', 'text').execute()
  await db.schema.alterTable('order_items').addColumn('variant_title', 'text').execute()
  await sql`update order_items set variant_id = (select v.id from product_variants v where v.product_id = order_items.product_id)`.execute(db)

  await countActiveProducts(db, isPg)
}

/** Gives every row of `table` a slug from its name, `-2`, `-3`… when taken, `<prefix>-<id>` for a name without a letter. */
async function fillSlugs(db: Kysely<any>, table: 'products' | 'categories', prefix: string): Promise<void> {
  const rows = await db.selectFrom(table).select(['id', 'name']).orderBy('id').execute()
  // `facets` is a route of its own (GET /products/facets), never a slug.
  const taken = new Set<string>(['facets'])
  const slugs: Array<{ id: number; slug: string }> = []
  for (const row of rows as Array<{ id: number; name: string }>) {
    const base = slugify(row.name) ?? `${prefix}-${row.id}`
    let slug = base
    for (let n = 2; taken.has(slug); n += 1) slug = numberedSlug(base, n)
    taken.add(slug)
    slugs.push({ id: row.id, slug })
  }
  for (let i = 0; i < slugs.length; i += 500) {
    const batch = slugs.slice(i, i + 500)
    const cases = sql.join(
      batch.map((s) => sql`when ${s.id} then ${s.slug}`),
      sql` `,
    )
    await sql`update ${sql.table(table)} set slug = case id ${cases} end where id in (${sql.join(batch.map((s) => s.id))})`.execute(db)
  }
}

/**
 * SQLite: the rebuilt table `to` goes on from the ids `from` reached. AUTOINCREMENT never gives an id twice, but its
 * counter lives in `sqlite_sequence` under the table's name, and dropping `from` forgets it: the id of the last
 * category or cart line deleted would be given again.
 */
async function carryIdCounter(db: Kysely<any>, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ seq: number | null }>`select max(seq) as seq from sqlite_sequence where name in (${from}, ${to})`.execute(db)
  await sql`delete from sqlite_sequence where name = ${to}`.execute(db)
  const seq = rows[0]?.seq ?? null
  if (seq !== null) await sql`insert into sqlite_sequence (name, seq) values (${to}, ${seq})`.execute(db)
}

async function migrateCategories(db: Kysely<any>, isPg: boolean): Promise<void> {
  if (isPg) {
    await sql`alter table categories drop constraint if exists categories_name_key_key`.execute(db)
    await db.schema
      .alterTable('categories')
      .addColumn('parent_id', 'integer', (c) => c.references('categories.id').onDelete('restrict'))
      .execute()
    await db.schema.alterTable('categories').addColumn('slug', 'text').execute()
    await db.schema
      .alterTable('categories')
      .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
      .execute()
    await db.schema.alterTable('categories').addColumn('path', 'text').execute()
  } else {
    await db.schema
      .createTable('categories_next')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('name_key', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('parent_id', 'integer', (c) => c.references('categories.id').onDelete('restrict'))
      .addColumn('slug', 'text')
      .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('path', 'text')
      .execute()
    await sql`insert into categories_next (id, name, name_key, description, created_at, updated_at)
      select id, name, name_key, description, created_at, updated_at from categories`.execute(db)
    await carryIdCounter(db, 'categories', 'categories_next')
    await sql`drop table categories`.execute(db)
    await sql`alter table categories_next rename to categories`.execute(db)
  }
  await sql`update categories set path = '/' || cast(id as text) || '/'`.execute(db)
  await fillSlugs(db, 'categories', 'category')
  await sql`create unique index categories_sibling_name_key on categories ((coalesce(parent_id, 0)), name_key)`.execute(db)
  await db.schema.createIndex('categories_slug_key').on('categories').column('slug').unique().execute()
  await db.schema.createIndex('categories_name_idx').on('categories').columns(['name_key', 'id']).execute()
  await db.schema.createIndex('categories_path_idx').on('categories').column('path').execute()
  await db.schema.createIndex('categories_parent_idx').on('categories').column('parent_id').execute()
  await db.schema
    .createTable('category_slugs')
    .addColumn('slug', 'text', (c) => c.primaryKey())
    .addColumn('category_id', 'integer', (c) => c.notNull().references('categories.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('category_slugs_category_idx').on('category_slugs').column('category_id').execute()
}

async function migrateCartItems(db: Kysely<any>, isPg: boolean): Promise<void> {
  if (isPg) {
    await db.schema
      .alterTable('cart_items')
      .addColumn('variant_id', 'integer', (c) => c.references('product_variants.id').onDelete('cascade'))
      .execute()
    await sql`update cart_items set variant_id = (select v.id from product_variants v where v.product_id = cart_items.product_id)`.execute(db)
    await sql`alter table cart_items alter column variant_id set not null`.execute(db)
    await sql`alter table cart_items drop constraint cart_items_user_product_key`.execute(db)
  } else {
    await db.schema
      .createTable('cart_items_next')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
      .addColumn('quantity', 'integer', (c) => c.notNull().check(sql`quantity >= 1`))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('variant_id', 'integer', (c) => c.notNull().references('product_variants.id').onDelete('cascade'))
      .execute()
    await sql`insert into cart_items_next (id, user_id, product_id, quantity, created_at, updated_at, variant_id)
      select c.id, c.user_id, c.product_id, c.quantity, c.created_at, c.updated_at, v.id
      from cart_items c join product_variants v on v.product_id = c.product_id`.execute(db)
    await carryIdCounter(db, 'cart_items', 'cart_items_next')
    await sql`drop table cart_items`.execute(db)
    await sql`alter table cart_items_next rename to cart_items`.execute(db)
    await db.schema.createIndex('cart_items_product_idx').on('cart_items').column('product_id').execute()
  }
  await db.schema.createIndex('cart_items_user_variant_key').on('cart_items').columns(['user_id', 'variant_id']).unique().execute()
  await db.schema.createIndex('cart_items_variant_idx').on('cart_items').column('variant_id').execute()
}

/** `product_counts` from now on counts active products only: the triggers watch `status` too. */
async function countActiveProducts(db: Kysely<any>, isPg: boolean): Promise<void> {
  await sql`drop trigger if exists product_counts_insert ${sql.raw(isPg ? 'on products' : '')}`.execute(db)
  await sql`drop trigger if exists product_counts_delete ${sql.raw(isPg ? 'on products' : '')}`.execute(db)
  await sql`drop trigger if exists product_counts_update ${sql.raw(isPg ? 'on products' : '')}`.execute(db)
  await sql`delete from product_counts`.execute(db)
  await sql`insert into product_counts (category_id, total)
    select 0, count(*) from products where status = 'active' having count(*) > 0
    union all
    select category_id, count(*) from products where status = 'active' and category_id is not null group by category_id`.execute(db)
  if (!isPg) {
    await sql`create trigger product_counts_insert after insert on products when new.status = 'active' begin
      insert into product_counts (category_id, total) values (0, 1) on conflict (category_id) do update set total = total + 1;
      insert into product_counts (category_id, total) select new.category_id, 1 where new.category_id is not null
        on conflict (category_id) do update set total = total + 1;
    end`.execute(db)
    await sql`create trigger product_counts_delete after delete on products when old.status = 'active' begin
      update product_counts set total = total - 1 where category_id = 0 or category_id = old.category_id;
    end`.execute(db)
    await sql`create trigger product_counts_update after update of category_id, status on products
      when old.category_id is not new.category_id or old.status is not new.status begin
      update product_counts set total = total - 1 where old.status = 'active' and (category_id = 0 or category_id = old.category_id);
      insert into product_counts (category_id, total) select 0, 1 where new.status = 'active'
        on conflict (category_id) do update set total = total + 1;
      insert into product_counts (category_id, total) select new.category_id, 1 where new.status = 'active' and new.category_id is not null
        on conflict (category_id) do update set total = total + 1;
    end`.execute(db)
    return
  }
  await sql`create or replace function product_counts_after_insert() returns trigger language plpgsql as $$
    begin
      insert into product_counts (category_id, total)
        select 0, count(*) from inserted where status = 'active'
        union all
        select category_id, count(*) from inserted where status = 'active' and category_id is not null group by category_id
      on conflict (category_id) do update set total = product_counts.total + excluded.total;
      return null;
    end $$`.execute(db)
  await sql`create or replace function product_counts_after_delete() returns trigger language plpgsql as $$
    begin
      update product_counts c set total = c.total - d.n
      from (
        select 0 as category_id, count(*) as n from deleted where status = 'active'
        union all
        select category_id, count(*) from deleted where status = 'active' and category_id is not null group by category_id
      ) d
      where c.category_id = d.category_id;
      return null;
    end $$`.execute(db)
  // An update leaves the counts of the old row (when it was active) and joins those of the new (when it is).
  await sql`create or replace function product_counts_after_update() returns trigger language plpgsql as $$
    begin
      update product_counts c set total = c.total - d.n
      from (
        select 0 as category_id, count(*) as n from old_rows o join new_rows n on n.id = o.id
          where o.status = 'active' and (n.status <> 'active')
        union all
        select o.category_id, count(*) as n from old_rows o join new_rows n on n.id = o.id
          where o.status = 'active' and o.category_id is not null
            and (n.status <> 'active' or o.category_id is distinct from n.category_id)
          group by o.category_id
      ) d
      where c.category_id = d.category_id;
      insert into product_counts (category_id, total)
        select 0, count(*) from old_rows o join new_rows n on n.id = o.id
          where n.status = 'active' and o.status <> 'active'
        union all
        select n.category_id, count(*) from old_rows o join new_rows n on n.id = o.id
          where n.status = 'active' and n.category_id is not null
            and (o.status <> 'active' or o.category_id is distinct from n.category_id)
          group by n.category_id
      on conflict (category_id) do update set total = product_counts.total + excluded.total;
      return null;
    end $$`.execute(db)
  await sql`create trigger product_counts_insert after insert on products referencing new table as inserted
    for each statement execute function product_counts_after_insert()`.execute(db)
  await sql`create trigger product_counts_delete after delete on products referencing old table as deleted
    for each statement execute function product_counts_after_delete()`.execute(db)
  await sql`create trigger product_counts_update after update on products referencing old table as old_rows new table as new_rows
    for each statement execute function product_counts_after_update()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  const isPg = isPostgres(db)
  const clash = await sql<{ n: number }>`select count(*) as n from (select name_key from categories group by name_key having count(*) > 1) d`.execute(db)
  if (Number(clash.rows[0]?.n ?? 0) > 0) throw new Error('catalog migration down: two categories share a name; rename one first')
  if (!isPg) {
    await sql`pragma foreign_keys = off`.execute(db)
    await sql`begin immediate`.execute(db)
  }
  try {
    // Counts of every product again, as before.
    await sql`delete from product_counts`.execute(db)
    await sql`insert into product_counts (category_id, total)
      select 0, count(*) from products having count(*) > 0
      union all
      select category_id, count(*) from products where category_id is not null group by category_id`.execute(db)
    for (const trigger of ['product_counts_insert', 'product_counts_delete', 'product_counts_update']) {
      await sql`drop trigger if exists ${sql.raw(trigger)} ${sql.raw(isPg ? 'on products' : '')}`.execute(db)
    }
    if (isPg) {
      for (const fn of ['product_counts_after_insert', 'product_counts_after_delete', 'product_counts_after_update']) {
        await sql`drop function if exists ${sql.raw(fn)}()`.execute(db)
      }
    }
    await createProductCountTriggers(db, isPg)

    for (const column of ['variant_title', 'sku', 'variant_id']) await db.schema.alterTable('order_items').dropColumn(column).execute()

    // One cart line per user and product: the lines of one product's variants are merged into the first, quantities
    // added.
    await sql`update cart_items set
        quantity = (select sum(c2.quantity) from cart_items c2 where c2.user_id = cart_items.user_id and c2.product_id = cart_items.product_id),
        updated_at = (select max(c2.updated_at) from cart_items c2 where c2.user_id = cart_items.user_id and c2.product_id = cart_items.product_id)
      where id in (select min(id) from cart_items group by user_id, product_id having count(*) > 1)`.execute(db)
    await sql`delete from cart_items where id not in (select min(id) from cart_items group by user_id, product_id)`.execute(db)
    await db.schema.dropIndex('cart_items_user_variant_key').execute()
    await db.schema.dropIndex('cart_items_variant_idx').execute()
    if (isPg) {
      await db.schema.alterTable('cart_items').dropColumn('variant_id').execute()
      await sql`alter table cart_items add constraint cart_items_user_product_key unique (user_id, product_id)`.execute(db)
    } else {
      // SQLite drops no column behind a foreign key: the table is rebuilt as it was.
      await sql`create table cart_items_prev (id integer primary key autoincrement,
        user_id integer not null references users (id) on delete cascade,
        product_id integer not null references products (id) on delete cascade,
        quantity integer not null check (quantity >= 1), created_at text not null, updated_at text not null,
        constraint cart_items_user_product_key unique (user_id, product_id))`.execute(db)
      await sql`insert into cart_items_prev (id, user_id, product_id, quantity, created_at, updated_at)
        select id, user_id, product_id, quantity, created_at, updated_at from cart_items`.execute(db)
      await carryIdCounter(db, 'cart_items', 'cart_items_prev')
      await sql`drop table cart_items`.execute(db)
      await sql`alter table cart_items_prev rename to cart_items`.execute(db)
      await db.schema.createIndex('cart_items_product_idx').on('cart_items').column('product_id').execute()
    }

    await db.schema.dropTable('category_slugs').execute()
    for (const index of ['categories_sibling_name_key', 'categories_slug_key', 'categories_name_idx', 'categories_path_idx', 'categories_parent_idx']) {
      await db.schema.dropIndex(index).execute()
    }
    if (isPg) {
      for (const column of ['path', 'position', 'slug', 'parent_id']) await db.schema.alterTable('categories').dropColumn(column).execute()
      await sql`alter table categories add constraint categories_name_key_key unique (name_key)`.execute(db)
    } else {
      await sql`create table categories_prev (id integer primary key autoincrement, name text not null,
        name_key text not null unique, description text default '' not null, created_at text not null, updated_at text not null)`.execute(db)
      await sql`insert into categories_prev (id, name, name_key, description, created_at, updated_at)
        select id, name, name_key, description, created_at, updated_at from categories`.execute(db)
      await carryIdCounter(db, 'categories', 'categories_prev')
      await sql`drop table categories`.execute(db)
      await sql`alter table categories_prev rename to categories`.execute(db)
    }

    // Each product keeps its lowest price, its total stock and its first image.
    await sql`update products set image_key = (select i.image_key from product_images i where i.product_id = products.id order by i.position limit 1),
      image_url = (select i.url from product_images i where i.product_id = products.id order by i.position limit 1)
      where exists (select 1 from product_images i where i.product_id = products.id)`.execute(db)
    for (const table of [
      'product_tags',
      'variant_option_values',
      'product_variants',
      'product_option_values',
      'product_options',
      'product_images',
      'product_slugs',
    ]) {
      await db.schema.dropTable(table).execute()
    }
    await db.schema.dropIndex('products_slug_key').execute()
    await db.schema.dropIndex('products_status_idx').execute()
    for (const column of ['tags', 'price_max_cents', 'tax_class', 'status', 'slug']) await db.schema.alterTable('products').dropColumn(column).execute()
    if (!isPg) {
      const broken = await sql`pragma foreign_key_check`.execute(db)
      if (broken.rows.length > 0) throw new Error(`catalog migration down: ${broken.rows.length} rows break a foreign key`)
      await sql`commit`.execute(db)
    }
  } catch (error) {
    if (!isPg) await sql`rollback`.execute(db)
    throw error
  } finally {
    if (!isPg) await sql`pragma foreign_keys = on`.execute(db)
  }
}
