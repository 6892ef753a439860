import { isCountryCode } from '../shared/countries.js'
import type { Config } from './index.js'
import type { Reader } from './read.js'

/** Taxes: whether prices are entered with tax, and the tax country of a cart or order without a shipping address. */
export function readTaxes(read: Reader): Pick<Config, 'pricesIncludeTax' | 'shopCountry'> {
  const pricesIncludeTax = read.boolean('PRICES_INCLUDE_TAX', true)
  let shopCountry = read.string('SHOP_COUNTRY') ?? 'ES'
  if (!isCountryCode(shopCountry)) {
    read.problem(`SHOP_COUNTRY must be an ISO 3166-1 alpha-2 country code in upper case, such as ES (got "${shopCountry}")`)
    shopCountry = 'ES'
  }
  return { pricesIncludeTax, shopCountry }
}
