import { unwrap } from './answers'
import { type Api, amountOrNull, dataProviderOf, filtersOf, paging, text, totalOf, type Values } from './resource'
import type { components, operations } from './schema'

export type DiscountCode = components['schemas']['DiscountCode']
export type DiscountType = DiscountCode['type']
/** One order that used a code. */
export type Redemption = components['schemas']['DiscountRedemption']
type NewDiscountCode = operations['createDiscountCode']['requestBody']['content']['application/json']
type DiscountCodeChange = operations['updateDiscountCode']['requestBody']['content']['application/json']

/** The API's types of code, in the order the form offers them (checked against its list). */
export const DISCOUNT_TYPES = ['percent', 'fixed', 'free_shipping'] as const satisfies readonly DiscountType[]
const isType = (value: unknown): value is DiscountType => DISCOUNT_TYPES.some((type) => type === value)

/** The form's fields: a problem whose `field` is one of them is shown beside it (`code`, `endsAt`, `productIds`…). */
export const discountFields = [
  'code',
  'type',
  'value',
  'minSubtotal',
  'startsAt',
  'endsAt',
  'usageLimit',
  'perCustomerLimit',
  'productIds',
  'categoryIds',
  'active',
] as const
type Field = (typeof discountFields)[number]
/** Every field but `code`, which a code keeps for good (the API refuses it in a change). */
const changeable = discountFields.filter((field): field is Exclude<Field, 'code'> => field !== 'code')

/**
 * An instant from the form: a date-time input gives the browser's local time (`2026-12-01T09:30`), the record the
 * API's UTC instant; both are sent as UTC (`2026-12-01T08:30:00.000Z`). Empty: none (null).
 */
export function instantOf(value: unknown): string | null {
  const given = text(value).trim()
  if (given === '') return null
  const date = new Date(given)
  // Not a date the browser can read: sent as typed, for the API to refuse beside its field.
  return Number.isNaN(date.getTime()) ? given : date.toISOString()
}

/** A limit from a number input: a whole number, or null (no limit) when emptied. */
function limitOf(value: unknown): number | null {
  return amountOrNull(value)
}

/** The picked ids of a product or category picker. */
function idsOf(value: unknown): number[] {
  return Array.isArray(value) ? value.map(Number).filter((id) => Number.isInteger(id) && id > 0) : []
}

/** What a field's value is for comparing the form with the record it started from (an instant as UTC, ids as numbers). */
function comparable(field: Field, value: unknown): unknown {
  if (field === 'startsAt' || field === 'endsAt') return instantOf(value)
  if (field === 'productIds' || field === 'categoryIds') return idsOf(value)
  if (field === 'value' || field === 'minSubtotal' || field === 'usageLimit' || field === 'perCustomerLimit') return amountOrNull(value)
  if (field === 'active') return value !== false
  return text(value)
}

/** The body's fields from the form: a free-shipping code has no value (null), whatever the form held for it before. */
function body(data: Values, names: readonly Exclude<Field, 'code'>[]): DiscountCodeChange {
  const change: DiscountCodeChange = {}
  const type = isType(data.type) ? data.type : undefined
  for (const field of names) {
    if (field === 'type') {
      if (type) change.type = type
    } else if (field === 'value') change.value = type === 'free_shipping' ? null : amountOrNull(data.value)
    else if (field === 'minSubtotal') change.minSubtotal = amountOrNull(data.minSubtotal)
    else if (field === 'startsAt' || field === 'endsAt') change[field] = instantOf(data[field])
    else if (field === 'usageLimit' || field === 'perCustomerLimit') change[field] = limitOf(data[field])
    else if (field === 'productIds' || field === 'categoryIds') change[field] = idsOf(data[field])
    else change.active = data.active !== false
  }
  return change
}

const id = (code: number) => ({ params: { path: { id: code } } })

/**
 * Discount codes: GET /discount-codes, newest first, by part of the code (`q`) and active or not, paged by the API
 * (X-Total-Count). A change sends only the fields that changed, and never `code`; a change of type sends the value
 * with it (a percentage and an amount are not the same number).
 */
export function discountCodesProvider(api: Api) {
  const one = async (code: number) => unwrap(await api.GET('/discount-codes/{id}', id(code)))
  return dataProviderOf<DiscountCode>('discount-codes', {
    async list(params) {
      const { limit, offset } = paging(params)
      const filter = filtersOf(params)
      const q = text(filter.q).trim()
      const active = filter.active === true || filter.active === 'true' ? true : filter.active === false || filter.active === 'false' ? false : undefined
      const query = { limit, offset, ...(q ? { q } : {}), ...(active !== undefined ? { active } : {}) }
      const result = await api.GET('/discount-codes', { params: { query } })
      return { data: unwrap(result), total: totalOf(result.response) }
    },
    one,
    async create(data) {
      const type = isType(data.type) ? data.type : 'percent'
      const rest = body(data, changeable)
      const created: NewDiscountCode = { ...rest, code: text(data.code).trim(), type }
      return unwrap(await api.POST('/discount-codes', { body: created }), discountFields)
    },
    async update(code, data, previous) {
      const names = changeable.filter(
        (field) => field in data && JSON.stringify(comparable(field, data[field])) !== JSON.stringify(comparable(field, previous[field])),
      )
      // A new type goes with its value (none for free shipping), which the API checks against it.
      if (names.includes('type') && !names.includes('value')) names.push('value')
      if (names.length === 0) return one(code)
      return unwrap(await api.PATCH('/discount-codes/{id}', { ...id(code), body: body(data, names) }), discountFields)
    },
    async remove(code) {
      unwrap(await api.DELETE('/discount-codes/{id}', id(code)))
    },
  })
}

/** A page of the orders that used a code, newest first, with how many there are in all (X-Total-Count). */
export async function listRedemptions(api: Api, code: number, page: { limit: number; offset: number }): Promise<{ data: Redemption[]; total: number }> {
  const result = await api.GET('/discount-codes/{id}/redemptions', { params: { path: { id: code }, query: page } })
  return { data: unwrap(result), total: totalOf(result.response) }
}
