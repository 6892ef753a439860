import { type Kysely, PostgresAdapter, sql } from 'kysely'

// Guest orders: an order without an account.
// - `orders.user_id` becomes nullable (null on guest orders only); `orders.guest` (0/1, as the other flags) says
//   which kind an order is, and `orders.email` holds the guest's e-mail. An account order keeps `email` null: its
//   e-mail is its account's (read through the user), so existing orders need no backfill and an account order
//   follows its user's e-mail changes. A check keeps the two kinds apart: an account order has a user and no
//   e-mail of its own, a guest order an e-mail and no user. `orders_email_idx` (on `lower(email)`) serves the
//   admins' `email` filter.
// - `idempotency_keys` gains a second scope: a key is a user's (`user_id`) or a guest cart's (`cart_token_hash`,
//   the hash of the cart's token), exactly one of the two. Each scope has its unique (scope, key) index, which
//   decides races as the old primary key (user_id, key) did; the primary key becomes `order_id` (one key per order).
// SQLite cannot drop a NOT NULL or a primary key: `orders` and `idempotency_keys` are rebuilt, with foreign keys
// off, in one transaction, `orders` going on from the ids it had reached. `down` refuses while a guest order exists.

const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

const ORDERS_GUEST_CHECK = sql`(guest = 0 and user_id is not null and email is null) or (guest = 1 and user_id is null and email is not null)`
const KEYS_SCOPE_CHECK = sql`(user_id is null) <> (cart_token_hash is null)`

/** SQLite: runs `steps` with foreign keys off, in one transaction, checking the keys before committing. */
async function rebuilding(db: Kysely<any>, name: string, steps: () => Promise<void>): Promise<void> {
  if (isPostgres(db)) return steps()
  await sql`pragma foreign_keys = off`.execute(db)
  await sql`begin immediate`.execute(db)
  try {
    await steps()
    const broken = await sql`pragma foreign_key_check`.execute(db)
    if (broken.rows.length > 0) throw new Error(`${name}: ${broken.rows.length} rows break a foreign key`)
    await sql`commit`.execute(db)
  } catch (error) {
    await sql`rollback`.execute(db)
    throw error
  } finally {
    await sql`pragma foreign_keys = on`.execute(db)
  }
}

/**
 * SQLite: the rebuilt table `to` goes on from the ids `from` reached (AUTOINCREMENT's counter lives in
 * `sqlite_sequence` under the table's name, and dropping `from` forgets it).
 */
async function carryIdCounter(db: Kysely<any>, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ seq: number | null }>`select max(seq) as seq from sqlite_sequence where name in (${from}, ${to})`.execute(db)
  await sql`delete from sqlite_sequence where name = ${to}`.execute(db)
  const seq = rows[0]?.seq ?? null
  if (seq !== null) await sql`insert into sqlite_sequence (name, seq) values (${to}, ${seq})`.execute(db)
}

const ORDER_COLUMNS = sql.raw(
  'id, user_id, total_cents, status, created_at, updated_at, subtotal_cents, shipping_cents, shipping_address, shipping_method, note',
)

/** SQLite: the indexes of `orders` (dropped with the table it rebuilds). */
async function createOrderIndexes(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('orders_user_idx').on('orders').columns(['user_id', 'id']).execute()
  await db.schema.createIndex('orders_status_idx').on('orders').columns(['status', 'id']).execute()
  await db.schema.createIndex('orders_created_idx').on('orders').columns(['created_at', 'status', 'total_cents']).execute()
}

export async function up(db: Kysely<any>): Promise<void> {
  const isPg = isPostgres(db)
  await rebuilding(db, 'guest orders migration', async () => {
    if (isPg) {
      await sql`alter table orders alter column user_id drop not null`.execute(db)
      await db.schema
        .alterTable('orders')
        .addColumn('guest', 'integer', (c) => c.notNull().defaultTo(0))
        .execute()
      await db.schema.alterTable('orders').addColumn('email', 'text').execute()
      await sql`alter table orders add constraint orders_guest_check check (${ORDERS_GUEST_CHECK})`.execute(db)

      await sql`alter table idempotency_keys drop constraint idempotency_keys_pkey`.execute(db)
      await sql`alter table idempotency_keys alter column user_id drop not null`.execute(db)
      await db.schema.alterTable('idempotency_keys').addColumn('cart_token_hash', 'text').execute()
      await sql`alter table idempotency_keys add constraint idempotency_keys_pkey primary key (order_id)`.execute(db)
      await sql`alter table idempotency_keys add constraint idempotency_keys_scope_check check (${KEYS_SCOPE_CHECK})`.execute(db)
    } else {
      await sql`create table orders_next (id integer primary key autoincrement, user_id integer,
        total_cents bigint not null, status text not null check (status in ('pending', 'paid', 'shipped', 'delivered', 'cancelled')),
        created_at text not null, updated_at text not null, subtotal_cents bigint, shipping_cents bigint, shipping_address text,
        shipping_method text, note text, guest integer default 0 not null, email text,
        constraint orders_guest_check check (${ORDERS_GUEST_CHECK}))`.execute(db)
      await sql`insert into orders_next (${ORDER_COLUMNS}) select ${ORDER_COLUMNS} from orders`.execute(db)
      await carryIdCounter(db, 'orders', 'orders_next')
      await sql`drop table orders`.execute(db)
      await sql`alter table orders_next rename to orders`.execute(db)
      await createOrderIndexes(db)

      await sql`create table idempotency_keys_next (user_id integer, key text not null,
        order_id integer not null primary key references orders (id) on delete cascade, created_at text not null,
        cart_token_hash text, constraint idempotency_keys_scope_check check (${KEYS_SCOPE_CHECK}))`.execute(db)
      await sql`insert into idempotency_keys_next (user_id, key, order_id, created_at)
        select user_id, key, order_id, created_at from idempotency_keys`.execute(db)
      await sql`drop table idempotency_keys`.execute(db)
      await sql`alter table idempotency_keys_next rename to idempotency_keys`.execute(db)
    }
    await db.schema
      .createIndex('orders_email_idx')
      .on('orders')
      .expression(sql`lower(email)`)
      .execute()
    await db.schema.createIndex('idempotency_keys_user_key').on('idempotency_keys').columns(['user_id', 'key']).unique().execute()
    await db.schema.createIndex('idempotency_keys_cart_key').on('idempotency_keys').columns(['cart_token_hash', 'key']).unique().execute()
  })
}

export async function down(db: Kysely<any>): Promise<void> {
  const isPg = isPostgres(db)
  const guests = await sql<{ n: number | string }>`select count(*) as n from orders where user_id is null or guest = 1`.execute(db)
  const count = Number(guests.rows[0]?.n ?? 0)
  if (count > 0) throw new Error(`guest orders migration down: ${count} guest orders exist, which the schema before could not hold`)
  await rebuilding(db, 'guest orders migration down', async () => {
    await sql`delete from idempotency_keys where cart_token_hash is not null`.execute(db)
    await db.schema.dropIndex('idempotency_keys_cart_key').execute()
    await db.schema.dropIndex('idempotency_keys_user_key').execute()
    await db.schema.dropIndex('orders_email_idx').execute()
    if (isPg) {
      await sql`alter table idempotency_keys drop constraint idempotency_keys_scope_check`.execute(db)
      await sql`alter table idempotency_keys drop constraint idempotency_keys_pkey`.execute(db)
      await db.schema.alterTable('idempotency_keys').dropColumn('cart_token_hash').execute()
      await sql`alter table idempotency_keys alter column user_id set not null`.execute(db)
      await sql`alter table idempotency_keys add constraint idempotency_keys_pkey primary key (user_id, key)`.execute(db)

      await sql`alter table orders drop constraint orders_guest_check`.execute(db)
      await db.schema.alterTable('orders').dropColumn('email').execute()
      await db.schema.alterTable('orders').dropColumn('guest').execute()
      await sql`alter table orders alter column user_id set not null`.execute(db)
    } else {
      // The tables as the migrations before this one made them, word for word.
      await sql`CREATE TABLE "orders_prev" ("id" integer primary key autoincrement, "user_id" integer not null, "total_cents" bigint not null, "status" text not null check (status in ('pending', 'paid', 'shipped', 'delivered', 'cancelled')), "created_at" text not null, "updated_at" text not null, "subtotal_cents" bigint, "shipping_cents" bigint, "shipping_address" text, "shipping_method" text, "note" text)`.execute(
        db,
      )
      await sql`insert into orders_prev (${ORDER_COLUMNS}) select ${ORDER_COLUMNS} from orders`.execute(db)
      await carryIdCounter(db, 'orders', 'orders_prev')
      await sql`drop table orders`.execute(db)
      await sql`alter table orders_prev rename to orders`.execute(db)
      await createOrderIndexes(db)

      await sql`CREATE TABLE "idempotency_keys_prev" ("user_id" integer not null, "key" text not null, "order_id" integer not null references "orders" ("id") on delete cascade, "created_at" text not null, constraint "idempotency_keys_pkey" primary key ("user_id", "key"))`.execute(
        db,
      )
      await sql`insert into idempotency_keys_prev (user_id, key, order_id, created_at) select user_id, key, order_id, created_at from idempotency_keys`.execute(
        db,
      )
      await sql`drop table idempotency_keys`.execute(db)
      await sql`alter table idempotency_keys_prev rename to idempotency_keys`.execute(db)
    }
  })
}
