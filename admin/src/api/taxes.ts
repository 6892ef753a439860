import { failure, unwrap } from './answers'
import { type Api, changed, dataProviderOf, filtersOf, paging, text, type Values } from './resource'
import { COUNTRIES, type CountryCode } from './shippingMethods'
import type { components, operations } from './schema'

export type TaxClass = components['schemas']['TaxClass']
export type TaxRate = components['schemas']['TaxRate']
type TaxRateChange = operations['updateTaxRate']['requestBody']['content']['application/json']

const isCountry = (value: unknown): value is CountryCode => COUNTRIES.some((code) => code === value)

/** The tax rate form's fields: a problem naming one of them (`region` for a duplicate rate, `taxClass`) shows beside it. */
const rateFields = ['country', 'region', 'taxClass', 'rate', 'name'] as const
const classFields = ['code', 'name'] as const

/** Text that is none when empty (a rate's region, its name): null. */
function textOrNull(value: unknown): string | null {
  const given = text(value).trim()
  return given === '' ? null : given
}

/** A rate from a number input: its number, or the text of one for the API to read (or refuse beside the field). */
function rateOf(value: unknown): number | string {
  return typeof value === 'number' ? value : text(value)
}

function rateBody(data: Values, names: readonly (typeof rateFields)[number][]): TaxRateChange {
  const change: TaxRateChange = {}
  for (const field of names) {
    if (field === 'country') {
      if (isCountry(data.country)) change.country = data.country
    } else if (field === 'region') change.region = textOrNull(data.region)
    else if (field === 'taxClass') change.taxClass = text(data.taxClass)
    else if (field === 'rate') change.rate = rateOf(data.rate)
    else change.name = textOrNull(data.name)
  }
  return change
}

/**
 * Tax rates: GET /tax-rates answers every rate at once (by country, class and region), filtered by `country` and
 * `taxClass` when given; paged here. There is no GET of one: it is read from that list.
 */
export function taxRatesProvider(api: Api) {
  const all = async (query: { country?: CountryCode; taxClass?: string } = {}) => unwrap(await api.GET('/tax-rates', { params: { query } }))
  const one = async (id: number) => {
    const rate = (await all()).find((candidate) => candidate.id === id)
    // The API's own answer for a rate it does not have.
    if (!rate) throw failure('Tipo de impuesto no encontrado', 404, { code: 'tax_rate_not_found' })
    return rate
  }
  return dataProviderOf<TaxRate>('tax-rates', {
    async list(params) {
      const { limit, offset } = paging(params)
      const filter = filtersOf(params)
      const taxClass = text(filter.taxClass).trim()
      const query = { ...(isCountry(filter.country) ? { country: filter.country } : {}), ...(taxClass ? { taxClass } : {}) }
      const rates = await all(query)
      return { data: rates.slice(offset, offset + limit), total: rates.length }
    },
    one,
    async create(data) {
      const { country, taxClass = '', rate = '', ...rest } = rateBody(data, rateFields)
      // The form asks for one before it sends anything; said here in the API's words.
      if (!country) throw failure('country must be a valid ISO 3166-1 alpha-2 code', 422, { code: 'validation_failed', field: 'country', fields: rateFields })
      const body = { country, taxClass, rate, ...rest }
      return unwrap(await api.POST('/tax-rates', { body }), rateFields)
    },
    async update(id, data, previous) {
      const change = rateBody(data, changed(rateFields, data, previous))
      if (Object.keys(change).length === 0) return one(id)
      return unwrap(await api.PATCH('/tax-rates/{id}', { params: { path: { id } }, body: change }), rateFields)
    },
    async remove(id) {
      unwrap(await api.DELETE('/tax-rates/{id}', { params: { path: { id } } }))
    },
  })
}

/**
 * Tax classes: GET /tax-classes answers every class at once. The API names a class by its `code` in its paths
 * (`/tax-classes/standard`); react-admin names it by its `id`, so the code is read from the list.
 */
export function taxClassesProvider(api: Api) {
  const all = async () => unwrap(await api.GET('/tax-classes'))
  const one = async (id: number) => {
    const found = (await all()).find((candidate) => candidate.id === id)
    if (!found) throw failure('Clase de impuesto no encontrada', 404, { code: 'tax_class_not_found' })
    return found
  }
  const path = (code: string) => ({ params: { path: { code } } })
  return dataProviderOf<TaxClass>('tax-classes', {
    async list(params) {
      const { limit, offset } = paging(params)
      const classes = await all()
      return { data: classes.slice(offset, offset + limit), total: classes.length }
    },
    one,
    async many(ids) {
      const wanted = new Set(ids)
      return (await all()).filter((found) => wanted.has(found.id))
    },
    async create(data) {
      return unwrap(await api.POST('/tax-classes', { body: { code: text(data.code).trim(), name: text(data.name) } }), classFields)
    },
    async update(id, data, previous) {
      const current = typeof previous.code === 'string' ? previous.code : (await one(id)).code
      if (changed(['name'], data, previous).length === 0) return one(id)
      return unwrap(await api.PATCH('/tax-classes/{code}', { ...path(current), body: { name: text(data.name) } }), classFields)
    },
    async remove(id) {
      unwrap(await api.DELETE('/tax-classes/{code}', path((await one(id)).code)))
    },
  })
}
