import type { ChangeFeed } from '../../plugins/change-feed.js'
import type { Kysely, Updateable } from 'kysely'
import type { Database, TaxClassRow, TaxRateRow, TaxRatesTable } from '../../db/database.js'
import { isForeignKeyViolation, isUniqueViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import { centsToAmount, parseCents } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import type { TaxRate as TotalsTaxRate } from '../totals/totals.js'
import { type AuditSource, recordAudit } from '../staff/audit-log.js'
import * as repo from './taxes.repository.js'
import type { CreateTaxClassInput, CreateTaxRateInput, ListTaxRatesQuery, TaxClass, TaxRate, UpdateTaxClassInput, UpdateTaxRateInput } from './taxes.schemas.js'

type Db = Kysely<Database>

/** The class every product and shipping method has unless told otherwise; it cannot be deleted. */
export const DEFAULT_TAX_CLASS = 'standard'

/** 100 % in hundredths of a percent, the unit rates are kept in. */
const HUNDRED_PERCENT = 10_000

/** Whether something of another module (products, shipping methods) names the class: it may then not be deleted. */
export type TaxClassUsage = (db: Db, code: string) => Promise<boolean>

function classRowToClass(row: TaxClassRow): TaxClass {
  return { id: row.id, code: row.code, name: row.name, createdAt: row.created_at, updatedAt: row.updated_at }
}

function rateRowToRate(row: TaxRateRow): TaxRate {
  return {
    id: row.id,
    country: row.country,
    region: row.region,
    taxClass: row.tax_class,
    rate: centsToAmount(row.rate),
    name: row.name,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** A region as compared: trimmed, in lower case; '' for none (the country's own rate). */
export function regionKey(region: string | null | undefined): string {
  return region ? region.trim().toLowerCase() : ''
}

/** The name a rate gets when none is given: `IVA 21%`, `IVA 5.5%` (the rate as the API writes it). */
export function defaultRateName(rate: number): string {
  return `IVA ${centsToAmount(rate)}%`
}

/** Reads a percentage as an amount is read (a number or a decimal string, at most 2 decimals), 0–100, in hundredths. */
function parseRate(value: string | number): number {
  if (typeof value === 'string' && value.trim() === '') throw new ValidationError('rate should not be empty', 'rate')
  const asNumber = Number(value)
  if (Number.isFinite(asNumber) && asNumber < 0) throw new ValidationError('rate must not be less than 0', 'rate')
  if (Number.isFinite(asNumber) && asNumber > 100) throw new ValidationError('rate must not be greater than 100', 'rate')
  const hundredths = parseCents(value)
  if (hundredths === null) throw new ValidationError('rate must be a number conforming to the specified constraints', 'rate')
  if (hundredths > HUNDRED_PERCENT) throw new ValidationError('rate must not be greater than 100', 'rate')
  return hundredths
}

/**
 * Refuses (422 `La clase de impuesto no existe`) a class code that no class has: for products, variants, shipping
 * methods and rates naming one.
 */
export async function assertTaxClassExists(db: Db, code: string): Promise<void> {
  if (!(await repo.findTaxClass(db, code))) throw new AppError(422, 'taxClassUnknown')
}

export async function listTaxClasses(db: Db): Promise<TaxClass[]> {
  return (await repo.listTaxClasses(db)).map(classRowToClass)
}

export async function createTaxClass(db: Db, input: CreateTaxClassInput, audit: AuditSource): Promise<TaxClass> {
  const now = nowIso()
  try {
    return await db.transaction().execute(async (trx) => {
      const created = classRowToClass(await repo.insertTaxClass(trx, { code: input.code, name: input.name, created_at: now, updated_at: now }))
      await recordAudit(trx, { by: audit, action: 'tax_class.create', entityType: 'tax_class', entityId: created.code, before: null, after: created })
      return created
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'taxClassExists')
    throw error
  }
}

export async function updateTaxClass(db: Db, code: string, input: UpdateTaxClassInput, audit: AuditSource): Promise<TaxClass> {
  return db.transaction().execute(async (trx) => {
    const before = await repo.findTaxClass(trx, code)
    const row = await repo.updateTaxClass(trx, code, { name: input.name, updated_at: nowIso() })
    if (!before || !row) throw new AppError(404, 'taxClassNotFound')
    const after = classRowToClass(row)
    await recordAudit(trx, { by: audit, action: 'tax_class.update', entityType: 'tax_class', entityId: code, before: classRowToClass(before), after })
    return after
  })
}

/** `standard`, and a class a rate, a product, a variant or a shipping method names, stay (409). */
export async function deleteTaxClass(db: Db, code: string, usages: readonly TaxClassUsage[], audit: AuditSource): Promise<{ message: string }> {
  return db.transaction().execute(async (trx) => {
    const before = await repo.findTaxClass(trx, code)
    if (!before) throw new AppError(404, 'taxClassNotFound')
    if (code === DEFAULT_TAX_CLASS || (await repo.ratesUseClass(trx, code))) throw new AppError(409, 'taxClassInUse')
    for (const used of usages) if (await used(trx, code)) throw new AppError(409, 'taxClassInUse')
    try {
      await repo.deleteTaxClass(trx, code)
    } catch (error) {
      // A rate written meanwhile (its foreign key).
      if (isForeignKeyViolation(error)) throw new AppError(409, 'taxClassInUse')
      throw error
    }
    await recordAudit(trx, { by: audit, action: 'tax_class.delete', entityType: 'tax_class', entityId: code, before: classRowToClass(before), after: null })
    return { message: messages.taxClassDeleted }
  })
}

export async function listTaxRates(db: Db, query: ListTaxRatesQuery): Promise<TaxRate[]> {
  return (await repo.listTaxRates(db, { country: query.country, taxClass: query.taxClass })).map(rateRowToRate)
}

/** A write of a rate: 409 when another rate has its country, region and class; 422 when its class went meanwhile. */
async function writeRate(write: () => Promise<TaxRateRow | undefined>): Promise<TaxRateRow | undefined> {
  try {
    return await write()
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'taxRateExists')
    if (isForeignKeyViolation(error)) throw new AppError(422, 'taxClassUnknown')
    throw error
  }
}

export async function createTaxRate(db: Db, input: CreateTaxRateInput, audit: AuditSource): Promise<TaxRate> {
  const rate = parseRate(input.rate)
  await assertTaxClassExists(db, input.taxClass)
  const now = nowIso()
  const region = input.region ?? null
  const row = await writeRate(() =>
    db.transaction().execute(async (trx) => {
      const inserted = await repo.insertTaxRate(trx, {
        country: input.country,
        region,
        region_key: regionKey(region),
        tax_class: input.taxClass,
        rate,
        name: input.name ?? defaultRateName(rate),
        created_at: now,
        updated_at: now,
      })
      await recordAudit(trx, {
        by: audit,
        action: 'tax_rate.create',
        entityType: 'tax_rate',
        entityId: inserted.id,
        before: null,
        after: rateRowToRate(inserted),
      })
      return inserted
    }),
  )
  return rateRowToRate(row!)
}

/**
 * Any field. A name left to its default (`IVA <rate>%`) follows a new rate; `name: null` sets it back to the default.
 * Fields first (422, the class included), then the id (404), then the key (409).
 */
export async function updateTaxRate(db: Db, id: number, input: UpdateTaxRateInput, audit: AuditSource): Promise<TaxRate> {
  const rate = input.rate === undefined ? undefined : parseRate(input.rate)
  if (input.taxClass !== undefined) await assertTaxClassExists(db, input.taxClass)
  const current = await repo.findTaxRate(db, id)
  if (!current) throw new AppError(404, 'taxRateNotFound')
  const changes: Updateable<TaxRatesTable> = { updated_at: nowIso() }
  if (input.country !== undefined) changes.country = input.country
  if (input.region !== undefined) {
    changes.region = input.region
    changes.region_key = regionKey(input.region)
  }
  if (input.taxClass !== undefined) changes.tax_class = input.taxClass
  if (rate !== undefined) changes.rate = rate
  const newRate = rate ?? current.rate
  if (input.name !== undefined) changes.name = input.name ?? defaultRateName(newRate)
  else if (rate !== undefined && current.name === defaultRateName(current.rate)) changes.name = defaultRateName(newRate)
  const row = await writeRate(() =>
    db.transaction().execute(async (trx) => {
      const before = await repo.findTaxRate(trx, id)
      const updated = await repo.updateTaxRate(trx, id, changes)
      if (!before || !updated) return undefined
      await recordAudit(trx, {
        by: audit,
        action: 'tax_rate.update',
        entityType: 'tax_rate',
        entityId: id,
        before: rateRowToRate(before),
        after: rateRowToRate(updated),
      })
      return updated
    }),
  )
  if (!row) throw new AppError(404, 'taxRateNotFound')
  return rateRowToRate(row)
}

export async function deleteTaxRate(db: Db, id: number, audit: AuditSource): Promise<{ message: string }> {
  await db.transaction().execute(async (trx) => {
    const before = await repo.findTaxRate(trx, id)
    if (!before || !(await repo.deleteTaxRate(trx, id))) throw new AppError(404, 'taxRateNotFound')
    await recordAudit(trx, { by: audit, action: 'tax_rate.delete', entityType: 'tax_rate', entityId: id, before: rateRowToRate(before), after: null })
  })
  return { message: messages.taxRateDeleted }
}

/**
 * The rate of each of `classes` in the tax country (and region), for the totals function: a region's rate beats
 * the country's; a class with neither gets null (no tax: 0 %). One query, on the rates' key index.
 */
export async function taxRatesFor(
  db: Db,
  place: { country: string; region?: string | null | undefined },
  classes: Iterable<string>,
): Promise<Map<string, TotalsTaxRate | null>> {
  const result = new Map<string, TotalsTaxRate | null>()
  for (const code of classes) result.set(code, null)
  if (result.size === 0) return result
  const key = regionKey(place.region)
  const rows = await repo.ratesFor(db, place.country, key, [...result.keys()])
  for (const row of rows) {
    const found = result.get(row.tax_class)
    // The region's own rate wins over the country's, whichever comes first.
    if (found && row.region_key === '') continue
    result.set(row.tax_class, { taxClass: row.tax_class, rate: row.rate, name: row.name })
  }
  return result
}

/** What pricing asks for: each class's rate at a place (taxRatesFor, or its cached form). */
export type TaxRateLookup = (
  db: Db,
  place: { country: string; region?: string | null | undefined },
  classes: Iterable<string>,
) => Promise<Map<string, TotalsTaxRate | null>>

/** At most this many places (country and region) are kept; past it the cache starts again. */
const CACHED_PLACES = 1000

/**
 * taxRatesFor kept in memory between changes: every cart view and checkout needs the rates, and they change rarely.
 * A place's rates (every class, the country's and its region's) are read once; the change feed's `taxes` topic (a
 * rate or class written on any instance) empties the cache, and while the feed is not live every call reads the
 * database. A read that raced a change is used once and not kept.
 */
export function taxRatesCache(feed: ChangeFeed): TaxRateLookup {
  const places = new Map<string, Array<{ tax_class: string; region_key: string; rate: number; name: string }>>()
  let generation = 0
  feed.subscribe('taxes', () => {
    generation += 1
    places.clear()
  })
  return async (db, place, classes) => {
    if (!feed.live) return taxRatesFor(db, place, classes)
    const key = regionKey(place.region)
    const id = `${place.country}|${key}`
    let rows = places.get(id)
    if (!rows) {
      const started = generation
      rows = await repo.ratesOfPlace(db, place.country, key)
      if (started === generation) {
        if (places.size >= CACHED_PLACES) places.clear()
        places.set(id, rows)
      }
    }
    const result = new Map<string, TotalsTaxRate | null>()
    for (const code of classes) result.set(code, null)
    for (const row of rows) {
      if (!result.has(row.tax_class)) continue
      // The region's own rate wins over the country's.
      if (result.get(row.tax_class) && row.region_key === '') continue
      result.set(row.tax_class, { taxClass: row.tax_class, rate: row.rate, name: row.name })
    }
    return result
  }
}
