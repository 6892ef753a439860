import { type Insertable, type Kysely, sql, type Transaction, type Updateable } from 'kysely'
import type { Database, DiscountCodeRow, DiscountCodesTable } from '../../db/database.js'
import { isPostgres } from '../../db/dialect.js'
import { prepared } from '../../db/prepared.js'
import { CODE_LIMITS_LOCK, holdCode } from './code-lock.js'

type Db = Kysely<Database> | Transaction<Database>

export interface CodeFilter {
  /** Part of the code, lower-cased. */
  q?: string | undefined
  active?: boolean | undefined
}

/** `like` with the filter's own `%`, `_` and `\` taken literally. */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

function filtered(db: Db, filter: CodeFilter) {
  return (
    db
      .selectFrom('discount_codes')
      // The pattern is cast: SQLite would prepare the statement again for each bound pattern (src/db/sqlite-compiler.ts).
      .$if(filter.q !== undefined && filter.q !== '', (qb) =>
        qb.where(sql<boolean>`lower(code) like cast(${containsPattern(filter.q ?? '')} as text) escape '\\'`),
      )
      .$if(filter.active !== undefined, (qb) => qb.where('active', '=', filter.active ? 1 : 0))
  )
}

/** A page of codes, newest first. */
export async function listCodes(db: Db, filter: CodeFilter, page: { limit: number; offset: number }): Promise<DiscountCodeRow[]> {
  return filtered(db, filter).selectAll().orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute()
}

/** How many codes match, before paging (X-Total-Count). */
export async function countCodes(db: Db, filter: CodeFilter): Promise<number> {
  const row = await filtered(db, filter)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function findCode(db: Db, id: number): Promise<DiscountCodeRow | undefined> {
  return db.selectFrom('discount_codes').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The code written `code` in any case (the unique index `discount_codes_code_key` is on `lower(code)`). */
export async function findCodeByText(db: Db, code: string): Promise<DiscountCodeRow | undefined> {
  return (await findCodeByTextStatement(db, { codeKey: code.toLowerCase() })).rows[0]
}

// The statements of a code's check and its use, run by the code's request, the cart view and checkout: compiled once.
const findCodeByTextStatement = prepared((db, v: { codeKey: string }) =>
  db
    .selectFrom('discount_codes')
    .selectAll()
    .where(sql<boolean>`lower(code) = ${v.codeKey}`),
)

export async function insertCode(db: Db, row: Insertable<DiscountCodesTable>): Promise<DiscountCodeRow> {
  return db.insertInto('discount_codes').values(row).returningAll().executeTakeFirstOrThrow()
}

/**
 * `recount`: the count of uses is set to the orders holding the code (a code given a limit: its count is kept only
 * while it has one). Run it after `lockCode(…, true)`, as a statement of its own, so it sees every order the lock
 * waited for.
 */
export async function updateCode(db: Db, id: number, changes: Updateable<DiscountCodesTable>, recount = false): Promise<DiscountCodeRow | undefined> {
  return db
    .updateTable('discount_codes')
    .set(changes)
    .$if(recount, (qb) =>
      qb.set((eb) => ({
        usage_count: eb
          .selectFrom('orders')
          .select((o) => o.fn.countAll<number>().as('n'))
          .where('orders.discount_code_id', '=', id),
      })),
    )
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
}

/** Deletes the code unless an order holds a use of it (one statement, so no order can slip in between). */
export async function deleteUnusedCode(db: Db, id: number): Promise<boolean> {
  const result = await db
    .deleteFrom('discount_codes')
    .where('id', '=', id)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('orders as o').select('o.id').whereRef('o.discount_code_id', '=', 'discount_codes.id'))))
    .executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/**
 * The customer's redemptions of the code: orders holding a use of it, by user id or by (lower-case) e-mail, each
 * counted once; `exceptOrderId` leaves out the order being placed (it holds the code from its insert). By user id
 * through the orders' index by user (a customer's orders are few), by e-mail through `orders_discount_email_idx`.
 */
export async function countCustomerRedemptions(
  db: Db,
  codeId: number,
  customer: { userId: number | null; email: string | null },
  exceptOrderId?: number,
): Promise<number> {
  const { userId, email } = customer
  if (userId === null && email === null) return 0
  const holding = () =>
    db
      .selectFrom('orders')
      .select('id')
      .where('discount_code_id', '=', codeId)
      .$if(exceptOrderId !== undefined, (qb) => qb.where('id', '<>', exceptOrderId ?? 0))
  const byUser = userId === null ? undefined : holding().where('user_id', '=', userId)
  const byEmail = email === null ? undefined : holding().where('discount_email', '=', email)
  const either = byUser && byEmail ? byUser.union(byEmail) : (byUser ?? byEmail)
  if (!either) return 0
  const row = await db
    .selectFrom(either.as('r'))
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/**
 * Takes one use of a code with a usage limit (`usage_limit`) for an order that holds it
 * (`orders.discount_code_id`), while the code is under its usage limit: one conditional update of the code's count of
 * uses, which on PostgreSQL also holds the code's row lock until the transaction ends (so what follows for this code
 * is serialized). Undefined when the code is used up (or gone), or the order does not hold it (a use no release could
 * give back).
 */
export async function takeUse(trx: Db, codeId: number, orderId: number): Promise<DiscountCodeRow | undefined> {
  return (await takeUseStatement(trx, { codeId, orderId })).rows[0]
}

const takeUseStatement = prepared((db, v: { codeId: number; orderId: number }) =>
  db
    .updateTable('discount_codes')
    .set((eb) => ({ usage_count: eb('usage_count', '+', 1) }))
    .where('id', '=', v.codeId)
    .where((eb) => eb.or([eb('usage_limit', 'is', null), eb('usage_count', '<', eb.ref('usage_limit'))]))
    .where((eb) =>
      eb.exists(eb.selectFrom('orders').select('orders.id').where('orders.id', '=', v.orderId).whereRef('orders.discount_code_id', '=', 'discount_codes.id')),
    )
    .returningAll(),
)

/**
 * For an order holding a code without a usage limit: whether the code still has none, and then its per-customer limit
 * (null for none). On PostgreSQL the order holds the code's shared lock (`holdCode`), from its insert or, when `held`
 * is false, taken here first. The code is read in a statement after the lock, so an order that waited for an admin
 * reads the code as the admin left it (a row lock would not do: a key-share lock reads the version before an update
 * of other columns, and a stronger one would keep every change of the code waiting for the orders). Undefined when
 * the code has a usage limit by now, or is gone.
 */
export async function holdUncountedCode(
  trx: Db,
  codeId: number,
  held: boolean,
  read?: { perCustomerLimit: number | null },
): Promise<{ perCustomerLimit: number | null } | undefined> {
  // SQLite: the transaction has held the database's write lock since it began, so the row it read is the row now.
  if (read !== undefined && !isPostgres(trx)) return read
  if (!held && isPostgres(trx)) await holdCodeStatement(trx, { codeId })
  const row = (await uncountedCodeStatement(trx, { codeId })).rows[0]
  return row && { perCustomerLimit: row.per_customer_limit }
}

const holdCodeStatement = prepared((db, v: { codeId: number }) => db.selectNoFrom(holdCode(v.codeId).as('held')))

const uncountedCodeStatement = prepared((db, v: { codeId: number }) =>
  db.selectFrom('discount_codes').select('per_customer_limit').where('id', '=', v.codeId).where('usage_limit', 'is', null),
)

/**
 * Locks the code for one customer until the transaction ends (PostgreSQL; SQLite runs one write at a time): by user
 * id, then by e-mail, the two ways a customer's redemptions are counted, so two orders of one customer count one
 * after the other while other customers' orders go on. Advisory locks on a hash of the code and the identity (the
 * one-key space, which the two-key locks of `holdCode` do not share); a collision of two hashes only makes two
 * orders wait for each other.
 */
export async function lockCodeForCustomer(trx: Db, codeId: number, customer: { userId: number | null; email: string }): Promise<void> {
  if (!isPostgres(trx)) return
  const keys = [...(customer.userId === null ? [] : [`discount:${codeId}:user:${customer.userId}`]), `discount:${codeId}:email:${customer.email}`]
  await sql`select ${sql.join(keys.map((key) => sql`pg_advisory_xact_lock(hashtextextended(${key}, 0))`))}`.execute(trx)
}

/**
 * The code's row for an admin's change, locked on PostgreSQL until the change commits: after any use being taken
 * or given back (`takeUse`, `giveUseBack`), which wait for it in turn; orders taking the code without a limit do not
 * wait. `givingLimit`: the change may give the code a limit, so it first waits for the orders in flight that took
 * it without one (`holdUncountedCode`), and holds new ones back, so that a count of the orders holding the code made
 * afterwards, in a statement of its own, includes every order that will not count its use.
 */
export async function lockCode(trx: Db, id: number, givingLimit: boolean): Promise<DiscountCodeRow | undefined> {
  const postgres = isPostgres(trx)
  if (postgres && givingLimit) await sql`select pg_advisory_xact_lock(${sql.lit(CODE_LIMITS_LOCK)}, ${id})`.execute(trx)
  return trx
    .selectFrom('discount_codes')
    .selectAll()
    .where('id', '=', id)
    .$if(postgres, (qb) => qb.forNoKeyUpdate())
    .executeTakeFirst()
}

/** How many orders hold a use of each code (its redemptions): the `usageCount` the API shows. */
export async function countUses(db: Db, codeIds: readonly number[]): Promise<Map<number, number>> {
  if (codeIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('orders')
    .select((eb) => ['discount_code_id', eb.fn.countAll<number | string>().as('n')])
    .where('discount_code_id', 'in', codeIds)
    .groupBy('discount_code_id')
    .execute()
  return new Map(rows.map((row) => [Number(row.discount_code_id), Number(row.n)]))
}

/** Whether the order holds a use of the code (its redemption). */
export async function orderHoldsCode(db: Db, orderId: number, codeId: number): Promise<boolean> {
  const row = await db.selectFrom('orders').select('id').where('id', '=', orderId).where('discount_code_id', '=', codeId).executeTakeFirst()
  return row !== undefined
}

/**
 * Gives one use back to a code with a usage limit (never below 0). The update always takes the code's row lock, limit or
 * not, so that a release and an admin's change setting a limit (which counts the uses again) come one after the other.
 */
export async function giveUseBack(trx: Db, codeId: number): Promise<void> {
  await trx
    .updateTable('discount_codes')
    .set({
      usage_count: sql<number>`case when usage_limit is not null and usage_count > 0 then usage_count - 1 else usage_count end`,
    })
    .where('id', '=', codeId)
    .execute()
}

/**
 * Gives the order's redemption up (the order no longer holds the code's use) and answers which code it was; undefined
 * when it held none. Of two concurrent releases, the one whose update finds the code still there gives the use back.
 */
export async function dropRedemption(trx: Db, orderId: number): Promise<number | undefined> {
  const order = await trx.selectFrom('orders').select('discount_code_id').where('id', '=', orderId).executeTakeFirst()
  const codeId = order?.discount_code_id
  if (codeId === null || codeId === undefined) return undefined
  const result = await trx
    .updateTable('orders')
    .set({ discount_code_id: null })
    .where('id', '=', orderId)
    .where('discount_code_id', '=', codeId)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0 ? codeId : undefined
}

function redemptions(db: Db, codeId: number) {
  return db.selectFrom('orders').where('discount_code_id', '=', codeId)
}

/**
 * A page of the code's redemptions, newest first: the orders holding a use of it (the code's entries of
 * `orders_discount_email_idx`, sorted), with their customer's e-mail then, their discount and their time.
 */
export async function listRedemptions(db: Db, codeId: number, page: { limit: number; offset: number }) {
  return redemptions(db, codeId)
    .select(['id', 'user_id', 'discount_email', 'discount_total_cents', 'created_at'])
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute()
}

export async function countRedemptions(db: Db, codeId: number): Promise<number> {
  const row = await redemptions(db, codeId)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}
