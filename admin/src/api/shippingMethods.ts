import { COUNTRY_CODES } from '../../../src/shared/countries'
import { failure, unwrap } from './answers'
import { type Api, amountOrNull, changed, dataProviderOf, paging, text, type Values } from './resource'
import type { components, operations } from './schema'

export type ShippingMethod = components['schemas']['ShippingMethod']
export type CountryCode = components['schemas']['CountryCode']
type ShippingMethodChange = operations['updateShippingMethod']['requestBody']['content']['application/json']

/** The officially assigned ISO 3166-1 alpha-2 codes: the service's own list, which its OpenAPI type is made from. */
export const COUNTRIES: readonly CountryCode[] = COUNTRY_CODES

const isCountry = (value: unknown): value is CountryCode => COUNTRIES.some((code) => code === value)

/** The countries picked in the form (codes offered from the API's list). */
function countriesOf(value: unknown): CountryCode[] {
  return Array.isArray(value) ? value.filter(isCountry) : []
}

const fields = ['name', 'price', 'countries', 'freeOver', 'active'] as const

/** The API's amount: the form's number, or the text of one. */
function amount(value: unknown): number | string {
  return typeof value === 'number' ? value : text(value)
}

function body(data: Values, names: readonly (typeof fields)[number][]): ShippingMethodChange {
  const change: ShippingMethodChange = {}
  for (const field of names) {
    if (field === 'name') change.name = text(data.name)
    else if (field === 'price') change.price = amount(data.price)
    else if (field === 'countries') change.countries = countriesOf(data.countries)
    else if (field === 'freeOver') change.freeOver = amountOrNull(data.freeOver)
    else change.active = data.active !== false
  }
  return change
}

/**
 * Shipping methods: GET /shipping-methods?all=true (the inactive ones too: admins only) answers every method at once,
 * cheapest first, and there is no GET of one: a page of them, or one, is read from that list.
 */
export function shippingMethodsProvider(api: Api) {
  const all = async () => unwrap(await api.GET('/shipping-methods', { params: { query: { all: true } } }))
  const one = async (id: number) => {
    const method = (await all()).find((candidate) => candidate.id === id)
    // The API's own answer for a method it does not have: its message and its code.
    if (!method) throw failure('Método de envío no encontrado', 404, { code: 'shipping_method_not_found' })
    return method
  }
  return dataProviderOf<ShippingMethod>('shipping-methods', {
    async list(params) {
      const { limit, offset } = paging(params)
      const methods = await all()
      return { data: methods.slice(offset, offset + limit), total: methods.length }
    },
    one,
    async many(ids) {
      const wanted = new Set(ids)
      return (await all()).filter((method) => wanted.has(method.id))
    },
    async create(data) {
      const { name = '', price = '', ...rest } = body(data, fields)
      return unwrap(await api.POST('/shipping-methods', { body: { name, price, ...rest } }), fields)
    },
    async update(id, data, previous) {
      const change = body(data, changed(fields, data, previous))
      if (Object.keys(change).length === 0) return one(id)
      return unwrap(await api.PATCH('/shipping-methods/{id}', { params: { path: { id } }, body: change }), fields)
    },
    async remove(id) {
      unwrap(await api.DELETE('/shipping-methods/{id}', { params: { path: { id } } }))
    },
  })
}
