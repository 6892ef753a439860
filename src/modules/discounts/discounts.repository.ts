import { type Insertable, type Kysely, sql, type Transaction, type Updateable } from 'kysely'
import type { Database, DiscountCodeRow, DiscountCodesTable, DiscountRedemptionRow, DiscountRedemptionsTable } from '../../db/database.js'
import { prepared } from '../../db/prepared.js'

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
  return db
    .selectFrom('discount_codes')
    .$if(filter.q !== undefined && filter.q !== '', (qb) => qb.where(sql<boolean>`lower(code) like ${containsPattern(filter.q ?? '')} escape '\\'`))
    .$if(filter.active !== undefined, (qb) => qb.where('active', '=', filter.active ? 1 : 0))
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

export async function updateCode(db: Db, id: number, changes: Updateable<DiscountCodesTable>): Promise<DiscountCodeRow | undefined> {
  return db.updateTable('discount_codes').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
}

/** Deletes the code unless it has a redemption (one statement, so no redemption can slip in between). */
export async function deleteUnusedCode(db: Db, id: number): Promise<boolean> {
  const result = await db
    .deleteFrom('discount_codes')
    .where('id', '=', id)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('discount_redemptions as r').select('r.id').whereRef('r.code_id', '=', 'discount_codes.id'))))
    .executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function hasRedemptions(db: Db, codeId: number): Promise<boolean> {
  return (await db.selectFrom('discount_redemptions').select('id').where('code_id', '=', codeId).limit(1).executeTakeFirst()) !== undefined
}

/** The customer's redemptions of the code: by user id or by (lower-case) e-mail, each counted once. */
export async function countCustomerRedemptions(db: Db, codeId: number, customer: { userId: number | null; email: string | null }): Promise<number> {
  if (customer.userId === null && customer.email === null) return 0
  const row = await db
    .selectFrom('discount_redemptions')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('code_id', '=', codeId)
    .where((eb) => {
      const matches = []
      if (customer.userId !== null) matches.push(eb('user_id', '=', customer.userId))
      if (customer.email !== null) matches.push(eb('email', '=', customer.email))
      return eb.or(matches)
    })
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/**
 * Takes one use of the code while it is under its limit: one conditional update, which on PostgreSQL also holds
 * the code's row lock until the transaction ends (so what follows for this code is serialized). Undefined when the
 * code is used up (or gone).
 */
export async function takeUse(trx: Db, codeId: number, now: string): Promise<DiscountCodeRow | undefined> {
  return (await takeUseStatement(trx, { codeId, now })).rows[0]
}

const takeUseStatement = prepared((db, v: { codeId: number; now: string }) =>
  db
    .updateTable('discount_codes')
    .set((eb) => ({ usage_count: eb('usage_count', '+', 1), updated_at: v.now }))
    .where('id', '=', v.codeId)
    .where((eb) => eb.or([eb('usage_limit', 'is', null), eb('usage_count', '<', eb.ref('usage_limit'))]))
    .returningAll(),
)

/**
 * PostgreSQL: takeUse and, when the code has no per-customer limit, insertRedemption, in one statement (one round
 * trip less per order with a code). No row when the use was not taken; `redemption` is null when the code has a
 * per-customer limit (the caller counts the customer's uses, then inserts).
 */
export async function takeUseAndRedeem(
  trx: Db,
  codeId: number,
  redemption: NewRedemption,
): Promise<{ perCustomerLimit: number | null; redemption: DiscountRedemptionRow | null } | undefined> {
  const row = (await takeUseAndRedeemStatement(trx, { ...redemption, codeId })).rows[0]
  if (!row) return undefined
  const { per_customer_limit: perCustomerLimit, ...inserted } = row
  return { perCustomerLimit, redemption: inserted.id === null ? null : (inserted as DiscountRedemptionRow) }
}

const takeUseAndRedeemStatement = prepared((db, v: NewRedemption & { codeId: number }) =>
  db
    .with('used', (qb) =>
      qb
        .updateTable('discount_codes')
        .set((eb) => ({ usage_count: eb('usage_count', '+', 1), updated_at: v.created_at }))
        .where('id', '=', v.codeId)
        .where((eb) => eb.or([eb('usage_limit', 'is', null), eb('usage_count', '<', eb.ref('usage_limit'))]))
        .returning(['id', 'per_customer_limit']),
    )
    .with('redeemed', (qb) =>
      qb
        .insertInto('discount_redemptions')
        .columns(['code_id', 'order_id', 'user_id', 'email', 'amount_cents', 'created_at'])
        .expression((eb) =>
          eb
            .selectFrom('used')
            .select([
              'used.id',
              sql<number>`cast(${v.order_id} as integer)`.as('order_id'),
              sql<number | null>`cast(${v.user_id} as integer)`.as('user_id'),
              sql<string>`cast(${v.email} as text)`.as('email'),
              sql<number>`cast(${v.amount_cents} as bigint)`.as('amount_cents'),
              sql<string>`cast(${v.created_at} as text)`.as('created_at'),
            ])
            .where('used.per_customer_limit', 'is', null),
        )
        .returningAll(),
    )
    .selectFrom('used')
    .leftJoin('redeemed', (join) => join.onTrue())
    .select([
      'used.per_customer_limit',
      'redeemed.id',
      'redeemed.code_id',
      'redeemed.order_id',
      'redeemed.user_id',
      'redeemed.email',
      'redeemed.amount_cents',
      'redeemed.created_at',
    ]),
)

/** Gives one use back (never below 0). */
export async function giveUseBack(trx: Db, codeId: number, now: string): Promise<void> {
  await trx
    .updateTable('discount_codes')
    .set((eb) => ({ usage_count: eb('usage_count', '-', 1), updated_at: now }))
    .where('id', '=', codeId)
    .where('usage_count', '>', 0)
    .execute()
}

export async function insertRedemption(trx: Db, row: NewRedemption): Promise<DiscountRedemptionRow> {
  const inserted = (await insertRedemptionStatement(trx, row)).rows[0]
  if (!inserted) throw new Error('the redemption was not inserted')
  return inserted
}

type NewRedemption = Required<Omit<Insertable<DiscountRedemptionsTable>, 'id'>>

const insertRedemptionStatement = prepared((db, v: NewRedemption) =>
  db
    .insertInto('discount_redemptions')
    .values({ code_id: v.code_id, order_id: v.order_id, user_id: v.user_id, email: v.email, amount_cents: v.amount_cents, created_at: v.created_at })
    .returningAll(),
)

export async function findRedemptionOfOrder(db: Db, orderId: number): Promise<DiscountRedemptionRow | undefined> {
  return db.selectFrom('discount_redemptions').selectAll().where('order_id', '=', orderId).executeTakeFirst()
}

export async function deleteRedemption(trx: Db, id: number): Promise<boolean> {
  const result = await trx.deleteFrom('discount_redemptions').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/** A page of the code's redemptions, newest first. */
export async function listRedemptions(db: Db, codeId: number, page: { limit: number; offset: number }): Promise<DiscountRedemptionRow[]> {
  return db.selectFrom('discount_redemptions').selectAll().where('code_id', '=', codeId).orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute()
}

export async function countRedemptions(db: Db, codeId: number): Promise<number> {
  const row = await db
    .selectFrom('discount_redemptions')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('code_id', '=', codeId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}
