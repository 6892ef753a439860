import type { Kysely, Updateable } from 'kysely'
import type { Database, ShippingMethodRow, ShippingMethodsTable } from '../../db/database.js'
import { AppError, messages } from '../../shared/errors.js'
import { centsToAmount, parseCents } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { assertTaxClassExists } from '../taxes/taxes.service.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'
import * as repo from './shipping.repository.js'
import type { CreateShippingMethodInput, ListShippingMethodsQuery, ShippingMethod, UpdateShippingMethodInput } from './shipping.schemas.js'

type Db = Kysely<Database>

/** The highest shipping price or free-shipping threshold: a product's highest price. */
const AMOUNT_MAX_CENTS = 9_999_999_999

/** Reads a price the way a product's is read: a number or a decimal string, at most 2 decimals, not negative. */
function parseAmount(field: string, value: string | number): number {
  if (typeof value === 'string' && value.trim() === '') throw new ValidationError(`${field} should not be empty`, field)
  const asNumber = Number(value)
  if (Number.isFinite(asNumber) && asNumber < 0) throw new ValidationError(`${field} must not be less than 0`, field)
  const cents = parseCents(value)
  if (cents === null) throw new ValidationError(`${field} must be a number conforming to the specified constraints`, field)
  if (cents > AMOUNT_MAX_CENTS) throw new ValidationError(`${field} must not be greater than ${centsToAmount(AMOUNT_MAX_CENTS)}`, field)
  return cents
}

export function methodCountries(row: ShippingMethodRow): string[] {
  return JSON.parse(row.countries) as string[]
}

/** Whether the method ships to `country`; no countries means every country. */
export function shipsTo(row: ShippingMethodRow, country: string): boolean {
  const countries = methodCountries(row)
  return countries.length === 0 || countries.includes(country)
}

/** An active method by id, or undefined (unknown or inactive): what a checkout may name. */
export async function findActiveShippingMethod(db: Db, id: number): Promise<ShippingMethodRow | undefined> {
  const row = await repo.findShippingMethod(db, id)
  return row && row.active === 1 ? row : undefined
}

/** Whether the shop ships at all (some method is active): then a checkout needs an address and a method. */
export async function shopShips(db: Db): Promise<boolean> {
  return repo.hasActiveShippingMethod(db)
}

export function shippingMethodRowToMethod(row: ShippingMethodRow): ShippingMethod {
  return {
    id: row.id,
    name: row.name,
    price: centsToAmount(row.price_cents),
    countries: methodCountries(row),
    freeOver: row.free_over_cents === null ? null : centsToAmount(row.free_over_cents),
    active: row.active === 1,
    taxClass: row.tax_class,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** Active methods (every method with `all`, which the route lets only admins ask for), those serving `country` when given. */
export async function listShippingMethods(db: Db, query: ListShippingMethodsQuery): Promise<ShippingMethod[]> {
  const rows = await repo.listShippingMethods(db, { activeOnly: !query.all })
  const country = query.country
  return rows.filter((row) => country === undefined || shipsTo(row, country)).map(shippingMethodRowToMethod)
}

export async function createShippingMethod(db: Db, input: CreateShippingMethodInput, audit: AuditSource): Promise<ShippingMethod> {
  const priceCents = parseAmount('price', input.price)
  const freeOverCents = input.freeOver === undefined || input.freeOver === null ? null : parseAmount('freeOver', input.freeOver)
  if (input.taxClass !== undefined) await assertTaxClassExists(db, input.taxClass)
  const now = nowIso()
  return db.transaction().execute(async (trx) => {
    const row = await repo.insertShippingMethod(trx, {
      name: input.name,
      price_cents: priceCents,
      countries: JSON.stringify(input.countries ?? []),
      free_over_cents: freeOverCents,
      active: input.active === false ? 0 : 1,
      ...(input.taxClass !== undefined ? { tax_class: input.taxClass } : {}),
      created_at: now,
      updated_at: now,
    })
    const method = shippingMethodRowToMethod(row)
    await recordAudit(trx, { by: audit, action: 'shipping_method.create', entityType: 'shipping_method', entityId: method.id, before: null, after: method })
    return method
  })
}

export async function updateShippingMethod(db: Db, id: number, input: UpdateShippingMethodInput, audit: AuditSource): Promise<ShippingMethod> {
  // Fields first (422), then the id (404).
  const changes: Updateable<ShippingMethodsTable> = { updated_at: nowIso() }
  if (input.name !== undefined) changes.name = input.name
  if (input.price !== undefined) changes.price_cents = parseAmount('price', input.price)
  if (input.countries !== undefined) changes.countries = JSON.stringify(input.countries)
  if (input.freeOver !== undefined) changes.free_over_cents = input.freeOver === null ? null : parseAmount('freeOver', input.freeOver)
  if (input.active !== undefined) changes.active = input.active ? 1 : 0
  if (input.taxClass !== undefined) {
    await assertTaxClassExists(db, input.taxClass)
    changes.tax_class = input.taxClass
  }
  return db.transaction().execute(async (trx) => {
    const before = await repo.findShippingMethod(trx, id)
    const row = await repo.updateShippingMethod(trx, id, changes)
    if (!before || !row) throw new AppError(404, 'shippingMethodNotFound')
    const method = shippingMethodRowToMethod(row)
    await recordAudit(trx, {
      by: audit,
      action: 'shipping_method.update',
      entityType: 'shipping_method',
      entityId: id,
      before: shippingMethodRowToMethod(before),
      after: method,
    })
    return method
  })
}

/** Orders that used the method keep their snapshot. */
export async function deleteShippingMethod(db: Db, id: number, audit: AuditSource): Promise<{ message: string }> {
  await db.transaction().execute(async (trx) => {
    const before = await repo.findShippingMethod(trx, id)
    if (!before || !(await repo.deleteShippingMethod(trx, id))) throw new AppError(404, 'shippingMethodNotFound')
    const shown = shippingMethodRowToMethod(before)
    await recordAudit(trx, { by: audit, action: 'shipping_method.delete', entityType: 'shipping_method', entityId: id, before: shown, after: null })
  })
  return { message: messages.shippingMethodDeleted }
}

/** Whether a shipping method names the tax class (the taxes module then keeps the class). */
export async function shippingUsesTaxClass(db: Db, code: string): Promise<boolean> {
  return repo.usesTaxClass(db, code)
}
