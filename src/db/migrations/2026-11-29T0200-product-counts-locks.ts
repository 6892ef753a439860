import { type Kysely, PostgresAdapter, sql } from 'kysely'

// PostgreSQL: the statement triggers that keep `product_counts` (catalog migration) wrote the shop-wide row (category
// 0) on every update of `products`, a change of count or not: `select 0, count(*)` without a GROUP BY is a row even
// when nothing matched, so each statement updated that row by 0 and held its lock until commit. Every checkout moves
// a product's stock, so every checkout waited for every other one at that row. Now a count of 0 is no row
// (`having count(*) > 0`), and only a change of status or category touches the counts. SQLite's row triggers never
// had this: they fire only on those columns.

const ZERO_ROWS = 'having count(*) > 0'
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

async function replaceFunctions(db: Kysely<any>, unless: string): Promise<void> {
  const skip = sql.raw(unless)
  await sql`create or replace function product_counts_after_insert() returns trigger language plpgsql as $$
    begin
      insert into product_counts (category_id, total)
        select 0, count(*) from inserted where status = 'active' ${skip}
        union all
        select category_id, count(*) from inserted where status = 'active' and category_id is not null group by category_id
      on conflict (category_id) do update set total = product_counts.total + excluded.total;
      return null;
    end $$`.execute(db)
  await sql`create or replace function product_counts_after_delete() returns trigger language plpgsql as $$
    begin
      update product_counts c set total = c.total - d.n
      from (
        select 0 as category_id, count(*) as n from deleted where status = 'active' ${skip}
        union all
        select category_id, count(*) from deleted where status = 'active' and category_id is not null group by category_id
      ) d
      where c.category_id = d.category_id;
      return null;
    end $$`.execute(db)
  await sql`create or replace function product_counts_after_update() returns trigger language plpgsql as $$
    begin
      update product_counts c set total = c.total - d.n
      from (
        select 0 as category_id, count(*) as n from old_rows o join new_rows n on n.id = o.id
          where o.status = 'active' and (n.status <> 'active') ${skip}
        union all
        select o.category_id, count(*) as n from old_rows o join new_rows n on n.id = o.id
          where o.status = 'active' and o.category_id is not null
            and (n.status <> 'active' or o.category_id is distinct from n.category_id)
          group by o.category_id
      ) d
      where c.category_id = d.category_id;
      insert into product_counts (category_id, total)
        select 0, count(*) from old_rows o join new_rows n on n.id = o.id
          where n.status = 'active' and o.status <> 'active' ${skip}
        union all
        select n.category_id, count(*) from old_rows o join new_rows n on n.id = o.id
          where n.status = 'active' and n.category_id is not null
            and (o.status <> 'active' or o.category_id is distinct from n.category_id)
          group by n.category_id
      on conflict (category_id) do update set total = product_counts.total + excluded.total;
      return null;
    end $$`.execute(db)
}

export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await replaceFunctions(db, ZERO_ROWS)
}

/** The functions as the catalog migration wrote them. */
export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await replaceFunctions(db, '')
}
