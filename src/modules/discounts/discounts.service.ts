import type { Kysely, Transaction, Updateable } from 'kysely'
import type { Database, DiscountCodeRow, DiscountCodesTable } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { isForeignKeyViolation, isUniqueViolation } from '../../shared/db-errors.js'
import { AppError } from '../../shared/errors.js'
import { centsToAmount, parseCents } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { categoriesWithDescendants, existingCategoryIds } from '../catalog/categories.service.js'
import { existingProductIds } from '../catalog/products.service.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'
import * as repo from './discounts.repository.js'
import type {
  CreateDiscountCodeInput,
  DiscountCode,
  DiscountRedemption,
  DiscountType,
  ListDiscountCodesQuery,
  ListRedemptionsQuery,
  UpdateDiscountCodeInput,
} from './discounts.schemas.js'

type Db = Kysely<Database>
type Trx = Transaction<Database>

/** The highest fixed discount or minimum subtotal: a product's highest price (99,999,999.99). */
const AMOUNT_MAX_CENTS = 9_999_999_999

// ---------------------------------------------------------------------------------------------------------------
// The code as the API shows it, and its fields as the admin writes them.

function idList(json: string): number[] {
  return JSON.parse(json) as number[]
}

/** `uses`: the orders holding the code (`repo.countUses`); the row's own count is kept only while it has a limit. */
export function discountCodeRowToCode(row: DiscountCodeRow, uses: number): DiscountCode {
  return { ...codeOfRow(row), usageCount: uses }
}

/** The code as the API shows it, but its count of uses (which a cart or an order does not show). */
function codeOfRow(row: DiscountCodeRow): AppliedCode {
  return {
    id: row.id,
    code: row.code,
    type: row.type,
    // Hundredths of a percent read like cents: 1250 -> 12.5 (%).
    value: row.value === null ? null : centsToAmount(row.value),
    minSubtotal: row.min_subtotal_cents === null ? null : centsToAmount(row.min_subtotal_cents),
    startsAt: row.starts_at,
    endsAt: row.ends_at,
    usageLimit: row.usage_limit,
    perCustomerLimit: row.per_customer_limit,
    productIds: idList(row.product_ids),
    categoryIds: idList(row.category_ids),
    active: row.active === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** A number or a decimal string with at most 2 decimals, in hundredths (cents, or hundredths of a percent). */
function parseHundredths(field: string, value: string | number): number {
  if (typeof value === 'string' && value.trim() === '') throw new ValidationError(`${field} should not be empty`, field)
  const asNumber = Number(value)
  if (Number.isFinite(asNumber) && asNumber < 0) return -1
  const hundredths = parseCents(value)
  if (hundredths === null) throw new ValidationError(`${field} must be a number conforming to the specified constraints`, field)
  return hundredths
}

/**
 * `value` as stored for `type`: percent 0.01–100 in hundredths of a percent, fixed above 0 in cents, free_shipping
 * none. Missing for percent or fixed: `value should not be empty`; given for free_shipping: `value must be empty`.
 */
function parseValue(type: DiscountType, value: string | number | null | undefined): number | null {
  if (type === 'free_shipping') {
    if (value !== undefined && value !== null) throw new ValidationError('value must be empty', 'value')
    return null
  }
  if (value === undefined || value === null) throw new ValidationError('value should not be empty', 'value')
  const hundredths = parseHundredths('value', value)
  if (type === 'percent') {
    if (hundredths < 1) throw new ValidationError('value must not be less than 0.01', 'value')
    if (hundredths > 10_000) throw new ValidationError('value must not be greater than 100', 'value')
  } else {
    if (hundredths < 1) throw new ValidationError('value must be a positive number', 'value')
    if (hundredths > AMOUNT_MAX_CENTS) throw new ValidationError(`value must not be greater than ${centsToAmount(AMOUNT_MAX_CENTS)}`, 'value')
  }
  return hundredths
}

function parseMinSubtotal(value: string | number | null): number | null {
  if (value === null) return null
  const cents = parseHundredths('minSubtotal', value)
  if (cents < 0) throw new ValidationError('minSubtotal must not be less than 0', 'minSubtotal')
  if (cents > AMOUNT_MAX_CENTS) throw new ValidationError(`minSubtotal must not be greater than ${centsToAmount(AMOUNT_MAX_CENTS)}`, 'minSubtotal')
  return cents
}

/** An instant as the service stores every time: ISO 8601 UTC with milliseconds. */
function parseInstant(field: string, value: string | null): string | null {
  if (value === null) return null
  const time = new Date(value)
  if (Number.isNaN(time.getTime())) throw new ValidationError(`${field} must be a valid ISO 8601 date string`, field)
  return time.toISOString()
}

/**
 * 422 when a list names a product or category that does not exist: `El producto no existe` (productIds),
 * `La categoría no existe` (categoryIds). Ids the code already lists are let through, so a list that names a
 * product deleted since can be sent back as it was read.
 */
async function assertReferencesExist(db: Db, input: { productIds?: number[]; categoryIds?: number[] }, current?: DiscountCodeRow): Promise<void> {
  if (input.productIds !== undefined) {
    const known = new Set(current ? idList(current.product_ids) : [])
    const asked = input.productIds.filter((id) => !known.has(id))
    const found = new Set(await existingProductIds(db, asked))
    if (asked.some((id) => !found.has(id))) throw new AppError(422, 'discountProductMissing')
  }
  if (input.categoryIds !== undefined) {
    const known = new Set(current ? idList(current.category_ids) : [])
    const asked = input.categoryIds.filter((id) => !known.has(id))
    const found = new Set(await existingCategoryIds(db, asked))
    if (asked.some((id) => !found.has(id))) throw new AppError(422, 'discountCategoryMissing')
  }
}

function assertEndsAfterStarts(startsAt: string | null, endsAt: string | null): void {
  if (startsAt !== null && endsAt !== null && endsAt <= startsAt) throw new ValidationError('endsAt must be after startsAt', 'endsAt')
}

// ---------------------------------------------------------------------------------------------------------------
// Admin routes.

export async function listDiscountCodes(db: Db, query: ListDiscountCodesQuery): Promise<{ codes: DiscountCode[]; total: number }> {
  const filter = { q: query.q?.toLowerCase(), active: query.active }
  const page = { limit: query.limit ?? 100, offset: query.offset ?? 0 }
  const [rows, total] = await Promise.all([repo.listCodes(db, filter, page), repo.countCodes(db, filter)])
  const uses = await repo.countUses(
    db,
    rows.map((row) => row.id),
  )
  return { codes: rows.map((row) => discountCodeRowToCode(row, uses.get(row.id) ?? 0)), total }
}

export async function getDiscountCode(db: Db, id: number): Promise<DiscountCode> {
  const row = await repo.findCode(db, id)
  if (!row) throw new AppError(404, 'discountCodeNotFound')
  return discountCodeRowToCode(row, await usesOf(db, id))
}

/** One code's `usageCount`: its redemptions (`countUses` counts a page of codes at once). */
function usesOf(db: Db, id: number): Promise<number> {
  return repo.countRedemptions(db, id)
}

/** 422 (fields, then unknown products or categories), then 409 for a code taken in any case. */
export async function createDiscountCode(db: Db, input: CreateDiscountCodeInput, audit: AuditSource | null): Promise<DiscountCode> {
  const value = parseValue(input.type, input.value)
  const minSubtotal = parseMinSubtotal(input.minSubtotal ?? null)
  const startsAt = parseInstant('startsAt', input.startsAt ?? null)
  const endsAt = parseInstant('endsAt', input.endsAt ?? null)
  assertEndsAfterStarts(startsAt, endsAt)
  await assertReferencesExist(db, input)
  const now = nowIso()
  try {
    return await db.transaction().execute(async (trx) => {
      const row = await repo.insertCode(trx, {
        code: input.code,
        type: input.type,
        value,
        min_subtotal_cents: minSubtotal,
        starts_at: startsAt,
        ends_at: endsAt,
        usage_limit: input.usageLimit ?? null,
        per_customer_limit: input.perCustomerLimit ?? null,
        product_ids: JSON.stringify(input.productIds ?? []),
        category_ids: JSON.stringify(input.categoryIds ?? []),
        active: input.active === false ? 0 : 1,
        created_at: now,
        updated_at: now,
      })
      const code = discountCodeRowToCode(row, 0)
      await recordAudit(trx, { by: audit, action: 'discount_code.create', entityType: 'discount_code', entityId: code.id, before: null, after: code })
      return code
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'discountCodeExists')
    throw error
  }
}

/**
 * Any field but `code` (the schema refuses it: `property code should not exist`). The result is checked whole:
 * a new `type` of percent or fixed needs its `value`; `endsAt` after `startsAt` whichever of them changes.
 * Order: 422 (fields, then references), 404.
 */
export async function updateDiscountCode(db: Db, id: number, input: UpdateDiscountCodeInput, audit: AuditSource): Promise<DiscountCode> {
  return inTransaction(db, async (trx) => {
    // Locked (PostgreSQL) until the change commits. A change that may give the code a limit also waits for the
    // orders in flight that took it without one, so the count below includes them.
    const givingLimit =
      (input.usageLimit !== undefined && input.usageLimit !== null) || (input.perCustomerLimit !== undefined && input.perCustomerLimit !== null)
    const current = await repo.lockCode(trx, id, givingLimit)
    const changes: Updateable<DiscountCodesTable> = {}
    if (input.type !== undefined || input.value !== undefined) {
      const type = input.type ?? current?.type
      if (type === undefined) {
        // An unknown code (404 below): the value is checked as far as it can be without a type.
        if (input.value !== undefined && input.value !== null) parseHundredths('value', input.value)
      } else if (input.value !== undefined) {
        changes.value = parseValue(type, input.value)
      } else if (input.type !== current?.type) {
        // A new type takes a value of its own (none for free_shipping): the old one is not read in the new unit.
        changes.value = parseValue(type, undefined)
      }
      if (input.type !== undefined) changes.type = input.type
    }
    if (input.minSubtotal !== undefined) changes.min_subtotal_cents = parseMinSubtotal(input.minSubtotal)
    const startsAt = input.startsAt !== undefined ? parseInstant('startsAt', input.startsAt) : (current?.starts_at ?? null)
    const endsAt = input.endsAt !== undefined ? parseInstant('endsAt', input.endsAt) : (current?.ends_at ?? null)
    assertEndsAfterStarts(startsAt, endsAt)
    if (input.startsAt !== undefined) changes.starts_at = startsAt
    if (input.endsAt !== undefined) changes.ends_at = endsAt
    await assertReferencesExist(trx, input, current)
    if (!current) throw new AppError(404, 'discountCodeNotFound')
    if (input.usageLimit !== undefined) changes.usage_limit = input.usageLimit
    if (input.perCustomerLimit !== undefined) changes.per_customer_limit = input.perCustomerLimit
    if (input.productIds !== undefined) changes.product_ids = JSON.stringify(input.productIds)
    if (input.categoryIds !== undefined) changes.category_ids = JSON.stringify(input.categoryIds)
    if (input.active !== undefined) changes.active = input.active ? 1 : 0
    changes.updated_at = nowIso()
    // A code given a usage limit has its uses counted: its orders took none while it had none. (A code that had one
    // kept its count exact, under its row's lock.)
    const usageLimit = changes.usage_limit !== undefined ? changes.usage_limit : current.usage_limit
    const row = await repo.updateCode(trx, id, changes, current.usage_limit === null && usageLimit !== null)
    if (!row) throw new AppError(404, 'discountCodeNotFound')
    const uses = await usesOf(trx, id)
    const code = discountCodeRowToCode(row, uses)
    await recordAudit(trx, {
      by: audit,
      action: 'discount_code.update',
      entityType: 'discount_code',
      entityId: id,
      before: discountCodeRowToCode(current, uses),
      after: code,
    })
    return code
  })
}

/** A code an order holds a use of keeps its redemptions: 409, deactivate it instead. */
export async function deleteDiscountCode(db: Db, id: number, audit: AuditSource): Promise<void> {
  try {
    const deleted = await db.transaction().execute(async (trx) => {
      const current = await repo.findCode(trx, id)
      if (!current || !(await repo.deleteUnusedCode(trx, id))) return false
      await recordAudit(trx, {
        by: audit,
        action: 'discount_code.delete',
        entityType: 'discount_code',
        entityId: id,
        // Deleted only while no order holds it.
        before: discountCodeRowToCode(current, 0),
        after: null,
      })
      return true
    })
    if (deleted) return
  } catch (error) {
    // An order with the code committed while the delete waited for the row (PostgreSQL): the foreign key refuses.
    if (isForeignKeyViolation(error)) throw new AppError(409, 'discountCodeInUse')
    throw error
  }
  if (!(await repo.findCode(db, id))) throw new AppError(404, 'discountCodeNotFound')
  throw new AppError(409, 'discountCodeInUse')
}

/** An order holding a use of the code, as its redemption (an order holding a code has both columns set). */
function redemptionOf(row: Awaited<ReturnType<typeof repo.listRedemptions>>[number]): DiscountRedemption {
  return {
    orderId: row.id,
    userId: row.user_id,
    email: row.discount_email ?? '',
    amount: centsToAmount(Number(row.discount_total_cents ?? 0)),
    createdAt: row.created_at,
  }
}

export async function listRedemptions(db: Db, codeId: number, query: ListRedemptionsQuery): Promise<{ redemptions: DiscountRedemption[]; total: number }> {
  if (!(await repo.findCode(db, codeId))) throw new AppError(404, 'discountCodeNotFound')
  const page = { limit: query.limit ?? 100, offset: query.offset ?? 0 }
  const [rows, total] = await Promise.all([repo.listRedemptions(db, codeId, page), repo.countRedemptions(db, codeId)])
  return { redemptions: rows.map(redemptionOf), total }
}

// ---------------------------------------------------------------------------------------------------------------
// Applying a code (the cart and checkout call these).

/** Who uses the code: the user, or a guest by e-mail. Redemptions match by user id OR lower-case e-mail. */
export interface DiscountCustomer {
  userId: number | null
  /** Any case (lower-cased here); null while a guest cart has none (the per-customer rule then passes). */
  email: string | null
}

/** A cart line as the code sees it. */
export interface DiscountLine {
  productId: number
  /** The product's category; null: none (only a code without lists applies to it). */
  categoryId: number | null
  /** price × quantity, in cents. */
  subtotalCents: number
}

export interface CheckCodeInput {
  /** As the customer typed it: any case. */
  code: string
  /** The instant the rules are checked at (`startsAt` inclusive, `endsAt` exclusive). */
  now: Date | string
  /** Or how to find it: asked only when the code has a per-customer limit (an account's e-mail is a read). */
  customer: DiscountCustomer | (() => Promise<DiscountCustomer>)
  lines: readonly DiscountLine[]
  /** The shop's currency (config.payments.currency, from SHOP_CURRENCY), for the minimum's message. */
  currency: string
  /** The code's row, when the caller has just read it in its transaction (null: no such code); else it is read here. */
  row?: DiscountCodeRow | null
}

/** A code as a cart or an order reads it: as the admin API shows it, but its count of uses. */
export type AppliedCode = Pick<
  DiscountCode,
  | 'id'
  | 'code'
  | 'type'
  | 'value'
  | 'minSubtotal'
  | 'startsAt'
  | 'endsAt'
  | 'usageLimit'
  | 'perCustomerLimit'
  | 'productIds'
  | 'categoryIds'
  | 'active'
  | 'createdAt'
  | 'updatedAt'
>

export interface CheckedCode {
  /** The code as the admin API shows it (`value` a percentage or an amount). */
  code: AppliedCode
  type: DiscountType
  /** `value` as stored: percent in hundredths of a percent (1250 = 12.5 %), fixed in cents; null for free_shipping. */
  storedValue: number | null
  /** One per input line, in order: whether the code applies to it. */
  eligible: boolean[]
  /** Σ subtotalCents of the eligible lines (`E` of the totals function). */
  eligibleSubtotalCents: number
}

export type CodeEvaluation = ({ applicable: true } & CheckedCode) | { applicable: false; reason: string; error: AppError; code: AppliedCode | null }

/** Which lines a code applies to: all when it lists nothing, else its products' and its categories' (with descendants). */
async function eligibleLines(db: Db, row: DiscountCodeRow, lines: readonly DiscountLine[]): Promise<boolean[]> {
  const productIds = idList(row.product_ids)
  const categoryIds = idList(row.category_ids)
  if (productIds.length === 0 && categoryIds.length === 0) return lines.map(() => true)
  const products = new Set(productIds)
  const categories = new Set(await categoriesWithDescendants(db, categoryIds))
  return lines.map((line) => products.has(line.productId) || (line.categoryId !== null && categories.has(line.categoryId)))
}

/**
 * Checks a code against a cart, in this order, throwing the first failure's AppError:
 * unknown or inactive → 404 `Código de descuento no válido`; before `startsAt` → 409 `El código de descuento aún no
 * es válido`; from `endsAt` → 409 `El código de descuento ha caducado`; `usageLimit` reached → 409 `El código de
 * descuento ha alcanzado su límite de usos`; the customer's redemptions (by user id or e-mail) at
 * `perCustomerLimit` → 409 `Ya has usado este código de descuento el máximo de veces permitido`; no eligible line →
 * 409 `El código de descuento no se aplica a ningún producto del carrito`; eligible subtotal under `minSubtotal` →
 * 409 `El pedido mínimo para este código es 50.00 EUR`. Reads only: counting a use is `redeem`'s, in the order's
 * transaction (where this check runs again first).
 */
export async function checkCode(db: Db, input: CheckCodeInput): Promise<CheckedCode> {
  const row = input.row === undefined ? await repo.findCodeByText(db, input.code) : input.row
  if (!row || row.active !== 1) throw new AppError(404, 'discountCodeInvalid')
  const now = typeof input.now === 'string' ? new Date(input.now).toISOString() : input.now.toISOString()
  if (row.starts_at !== null && now < row.starts_at) throw new AppError(409, 'discountCodeNotYetValid')
  if (row.ends_at !== null && now >= row.ends_at) throw new AppError(409, 'discountCodeExpired')
  if (row.usage_limit !== null && row.usage_count >= row.usage_limit) throw new AppError(409, 'discountCodeUsedUp')
  if (row.per_customer_limit !== null) {
    const customer = typeof input.customer === 'function' ? await input.customer() : input.customer
    const used = await repo.countCustomerRedemptions(db, row.id, customerKey(customer))
    if (used >= row.per_customer_limit) throw new AppError(409, 'discountCodeCustomerLimit')
  }
  const eligible = await eligibleLines(db, row, input.lines)
  if (!eligible.includes(true)) throw new AppError(409, 'discountCodeNotApplicable')
  const eligibleSubtotalCents = input.lines.reduce((sum, line, i) => (eligible[i] ? sum + line.subtotalCents : sum), 0)
  if (row.min_subtotal_cents !== null && eligibleSubtotalCents < row.min_subtotal_cents) {
    throw new AppError(409, 'discountMinSubtotal', centsToAmount(row.min_subtotal_cents).toFixed(2), input.currency)
  }
  return { code: codeOfRow(row), type: row.type, storedValue: row.value, eligible, eligibleSubtotalCents }
}

/**
 * `checkCode` for the cart view, which keeps a code that stopped applying: never throws a rule's failure, but
 * answers `{applicable: false, reason}` with the message checkout would answer (and the error itself, and the code
 * when it still exists). Other failures (the database) still throw.
 */
export async function evaluateCode(db: Db, input: CheckCodeInput): Promise<CodeEvaluation> {
  try {
    return { applicable: true, ...(await checkCode(db, input)) }
  } catch (error) {
    if (!(error instanceof AppError)) throw error
    const row = await repo.findCodeByText(db, input.code)
    const failure: AppError = error as AppError
    return { applicable: false, reason: failure.message, error: failure, code: row ? codeOfRow(row) : null }
  }
}

function customerKey(customer: DiscountCustomer): { userId: number | null; email: string | null } {
  return { userId: customer.userId, email: customer.email === null ? null : customer.email.trim().toLowerCase() }
}

/**
 * The order's columns that make it a redemption of the code: written with the order's row (its insert), before
 * `redeem` counts the use. `email` is the customer's, any case (stored lower-case).
 */
export function redemptionColumns(codeId: number, email: string): { discount_code_id: number; discount_email: string } {
  return { discount_code_id: codeId, discount_email: email.trim().toLowerCase() }
}

/**
 * What writing an order with `redemptionColumns` threw, as the API answers it: on PostgreSQL the order's key on the
 * code refuses a code deleted since checkout read it (the code was unused, so its delete went through): 404 `Código
 * de descuento no válido`, as `redeem` answers for a code gone. Anything else as it was.
 */
export function codeGoneOnWrite(error: unknown): unknown {
  return isForeignKeyViolation(error) ? new AppError(404, 'discountCodeInvalid') : error
}

export interface RedeemInput {
  codeId: number
  /** The order placed with the code: its row already holds `redemptionColumns(codeId, email)`. */
  orderId: number
  /** null for a guest order. */
  userId: number | null
  /** The order's e-mail, any case. */
  email: string
  /**
   * Whether the code had a usage limit (`usageLimit`) as the order read it. It only picks which check runs first: a
   * code that has one by now is counted all the same.
   */
  counted: boolean
  /**
   * The code's per-customer limit as this transaction read it, when it read the code (with `counted`). On SQLite,
   * whose transaction holds the database's write lock from its start, nothing can have changed it since: the code is
   * not read again there. PostgreSQL reads it again once the order holds the code.
   */
  perCustomerLimit?: number | null
  /** Whether the order's insert took the code's shared lock (`insertOrder`, PostgreSQL); else `redeem` takes it. */
  held?: boolean
}

/**
 * Counts one use of the code for an order, inside the order's transaction (call it after the order row exists,
 * holding the code, with that transaction). The order holding the code is its redemption, and the count the API
 * shows.
 *
 * A code without a usage limit has no count of uses to keep: the order only holds the code's shared lock
 * (PostgreSQL: from its insert when `held`, else taken here; `holdUncountedCode`), which any number of orders hold at
 * once, so an admin giving the code a limit meanwhile waits and then counts this order (`updateDiscountCode`).
 *
 * A code with a usage limit takes a conditional update `usage_count + 1` while under `usageLimit` (on PostgreSQL it
 * also locks the code's row until the transaction ends, so concurrent redemptions of the code queue there).
 *
 * Then, for a code with a `perCustomerLimit` either way, the order takes the code's lock for its customer
 * (`lockCodeForCustomer`: by user id and by e-mail) and counts the customer's other orders holding the code: two
 * orders of one customer count one after the other; other customers' orders of a code without a usage limit do not
 * wait.
 * Throws 409 `El código de descuento ha alcanzado su límite de usos` or `Ya has usado este código de descuento el
 * máximo de veces permitido` (404 `Código de descuento no válido` if the code was deleted meanwhile): the caller's
 * transaction then rolls back, the counter and the order with it. Given a database rather than a transaction, it
 * runs in a transaction of its own.
 */
export async function redeem(trx: Trx | Db, input: RedeemInput): Promise<void> {
  await inTransaction(trx, async (tx) => {
    const customer = { userId: input.userId, email: input.email.trim().toLowerCase() }
    // Taking a use on every order would make each order with the code wait for the one before it to commit.
    const read = input.perCustomerLimit === undefined ? undefined : { perCustomerLimit: input.perCustomerLimit }
    const uncounted = input.counted ? undefined : await repo.holdUncountedCode(tx, input.codeId, input.held === true, read)
    let perCustomerLimit = uncounted?.perCustomerLimit ?? null
    if (!uncounted) {
      const taken = await repo.takeUse(tx, input.codeId, input.orderId)
      if (!taken) {
        if (!(await repo.findCode(tx, input.codeId))) throw new AppError(404, 'discountCodeInvalid')
        // A caller's mistake, not the customer's: a use no release could find to give back.
        if (!(await repo.orderHoldsCode(tx, input.orderId, input.codeId)))
          throw new Error(`order ${input.orderId} does not hold code ${input.codeId}: write it with redemptionColumns`)
        throw new AppError(409, 'discountCodeUsedUp')
      }
      perCustomerLimit = taken.per_customer_limit
    }
    if (perCustomerLimit !== null) {
      // Under the code's lock for this customer, whichever way the use was taken: two orders of one customer count
      // one after the other.
      await repo.lockCodeForCustomer(tx, input.codeId, customer)
      const used = await repo.countCustomerRedemptions(tx, input.codeId, customer, input.orderId)
      if (used >= perCustomerLimit) throw new AppError(409, 'discountCodeCustomerLimit')
    }
  })
}

/**
 * Gives back the use an order took (a `pending` order cancelled or expired unpaid; never call it for a paid one):
 * the order stops holding the code and, for a code with a usage limit, its count of uses goes down, in the caller's transaction. False when the
 * order held no use (nothing to do; a second release is harmless).
 */
export async function release(trx: Trx | Db, orderId: number): Promise<boolean> {
  return inTransaction(trx, async (tx) => {
    const codeId = await repo.dropRedemption(tx, orderId)
    if (codeId === undefined) return false
    await repo.giveUseBack(tx, codeId)
    return true
  })
}
