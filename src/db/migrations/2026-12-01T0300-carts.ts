import { type Kysely, PostgresAdapter, sql } from 'kysely'

// Carts become rows of their own, so that a guest can have one and a cart can carry its checkout choices.
// - `carts`: one per user (`user_id`, unique) or per guest (`token_hash`, the SHA-256 of its `ct_` token, unique;
//   `expires_at` set), never both. It keeps what PATCH /cart and POST /cart/discount set: `email` (guests),
//   the shipping address (an id of the user's book, or an inline address as JSON), the shipping method, the note,
//   and the discount code as the customer typed it (checked again on every view and at checkout).
// - `cart_items.cart_id` (not null) names the line's cart; `user_id` stays on the line as a copy of its cart's
//   user, null on a guest's line, so a user's lines are still found by one index. Unique per cart and variant.
// - Every user with lines gets a cart row.
// SQLite cannot make a column nullable: `cart_items` is rebuilt with foreign keys off, in one transaction, going on
// from the ids the old table had reached. `down` drops guest carts and their lines (the old schema has no place
// for them) and the carts' checkout choices.

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

export async function up(db: Kysely<any>): Promise<void> {
  await inTransaction(db, async (isPg) => {
    await db.schema
      .createTable('carts')
      .addColumn('id', isPg ? 'serial' : 'integer', (c) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement()))
      .addColumn('user_id', 'integer', (c) => c.unique().references('users.id').onDelete('cascade'))
      .addColumn('token_hash', 'text', (c) => c.unique())
      .addColumn('email', 'text')
      .addColumn('shipping_address_id', 'integer', (c) => c.references('addresses.id').onDelete('set null'))
      .addColumn('shipping_address', 'text')
      .addColumn('shipping_method_id', 'integer', (c) => c.references('shipping_methods.id').onDelete('set null'))
      .addColumn('note', 'text')
      .addColumn('discount_code', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text')
      .addCheckConstraint('carts_owner_check', sql`(user_id is null) <> (token_hash is null)`)
      .execute()
    await db.schema.createIndex('carts_expires_idx').on('carts').column('expires_at').where(sql.ref('expires_at'), 'is not', null).execute()
    await sql`insert into carts (user_id, created_at, updated_at)
      select user_id, min(created_at), max(updated_at) from cart_items group by user_id order by user_id`.execute(db)

    if (isPg) {
      await sql`alter table cart_items add column cart_id integer references carts(id) on delete cascade`.execute(db)
      await sql`update cart_items set cart_id = (select k.id from carts k where k.user_id = cart_items.user_id)`.execute(db)
      await sql`alter table cart_items alter column cart_id set not null`.execute(db)
      await sql`alter table cart_items alter column user_id drop not null`.execute(db)
      await db.schema.dropIndex('cart_items_user_variant_key').execute()
    } else {
      await sql`create table cart_items_next (
        id integer primary key autoincrement,
        user_id integer references users(id) on delete cascade,
        product_id integer not null references products(id) on delete cascade,
        quantity integer not null check (quantity >= 1),
        created_at text not null,
        updated_at text not null,
        variant_id integer not null references product_variants(id) on delete cascade,
        cart_id integer not null references carts(id) on delete cascade)`.execute(db)
      await sql`insert into cart_items_next (id, user_id, product_id, quantity, created_at, updated_at, variant_id, cart_id)
        select c.id, c.user_id, c.product_id, c.quantity, c.created_at, c.updated_at, c.variant_id, k.id
        from cart_items c join carts k on k.user_id = c.user_id`.execute(db)
      await carryIdCounter(db, 'cart_items', 'cart_items_next')
      await sql`drop table cart_items`.execute(db)
      await sql`alter table cart_items_next rename to cart_items`.execute(db)
      await db.schema.createIndex('cart_items_product_idx').on('cart_items').column('product_id').execute()
      await db.schema.createIndex('cart_items_variant_idx').on('cart_items').column('variant_id').execute()
    }
    // One line per cart and variant. A user's lines are still found by their `user_id`, but that index is no
    // longer unique: two unique keys on one row let a racing insert fail on the one its ON CONFLICT does not name.
    await db.schema.createIndex('cart_items_cart_variant_key').on('cart_items').columns(['cart_id', 'variant_id']).unique().execute()
    await db.schema.createIndex('cart_items_user_idx').on('cart_items').columns(['user_id', 'variant_id']).execute()
  })
}

export async function down(db: Kysely<any>): Promise<void> {
  await inTransaction(db, async (isPg) => {
    await sql`delete from cart_items where user_id is null`.execute(db)
    await db.schema.dropIndex('cart_items_cart_variant_key').execute()
    await db.schema.dropIndex('cart_items_user_idx').execute()
    if (isPg) {
      await sql`alter table cart_items alter column user_id set not null`.execute(db)
      await sql`alter table cart_items drop column cart_id`.execute(db)
      await db.schema.createIndex('cart_items_user_variant_key').on('cart_items').columns(['user_id', 'variant_id']).unique().execute()
    } else {
      await sql`create table cart_items_prev (
        id integer primary key autoincrement,
        user_id integer not null references users(id) on delete cascade,
        product_id integer not null references products(id) on delete cascade,
        quantity integer not null check (quantity >= 1),
        created_at text not null,
        updated_at text not null,
        variant_id integer not null references product_variants(id) on delete cascade)`.execute(db)
      await sql`insert into cart_items_prev (id, user_id, product_id, quantity, created_at, updated_at, variant_id)
        select id, user_id, product_id, quantity, created_at, updated_at, variant_id from cart_items`.execute(db)
      await carryIdCounter(db, 'cart_items', 'cart_items_prev')
      await sql`drop table cart_items`.execute(db)
      await sql`alter table cart_items_prev rename to cart_items`.execute(db)
      await db.schema.createIndex('cart_items_product_idx').on('cart_items').column('product_id').execute()
      await db.schema.createIndex('cart_items_user_variant_key').on('cart_items').columns(['user_id', 'variant_id']).unique().execute()
      await db.schema.createIndex('cart_items_variant_idx').on('cart_items').column('variant_id').execute()
    }
    await db.schema.dropTable('carts').execute()
  })
}

/** SQLite: foreign keys off and one immediate transaction around the rebuild (SQLite's own procedure); PostgreSQL: Kysely's transaction. */
async function inTransaction(db: Kysely<any>, steps: (isPg: boolean) => Promise<void>): Promise<void> {
  const isPg = isPostgres(db)
  if (isPg) return steps(true)
  await sql`pragma foreign_keys = off`.execute(db)
  await sql`begin immediate`.execute(db)
  try {
    await steps(false)
    const broken = await sql`pragma foreign_key_check`.execute(db)
    if (broken.rows.length > 0) throw new Error(`carts migration: ${broken.rows.length} rows break a foreign key`)
    await sql`commit`.execute(db)
  } catch (error) {
    await sql`rollback`.execute(db)
    throw error
  } finally {
    await sql`pragma foreign_keys = on`.execute(db)
  }
}

/** SQLite: the rebuilt table goes on from the id the old one had reached. */
async function carryIdCounter(db: Kysely<any>, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ seq: number | null }>`select max(seq) as seq from sqlite_sequence where name in (${from}, ${to})`.execute(db)
  await sql`delete from sqlite_sequence where name = ${to}`.execute(db)
  const seq = rows[0]?.seq ?? null
  if (seq !== null) await sql`insert into sqlite_sequence (name, seq) values (${to}, ${seq})`.execute(db)
}
