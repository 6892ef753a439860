import countries from 'i18n-iso-countries'
import { describe, expect, it } from 'vitest'
import { COUNTRY_CODES, isCountryCode } from '../../src/shared/countries.js'

// The service carries the list as a constant (src/shared/countries.ts); this keeps it equal to a well-kept package's,
// less the one user-assigned code that package adds.
describe('COUNTRY_CODES', () => {
  it('is i18n-iso-countries’ alpha-2 list without XK (Kosovo: user-assigned, not officially assigned)', () => {
    const fromPackage = Object.keys(countries.getAlpha2Codes()).filter((code) => code !== 'XK')
    expect([...COUNTRY_CODES].sort()).toEqual(fromPackage.sort())
    expect(COUNTRY_CODES).toHaveLength(249)
  })

  it('accepts upper-case official codes only', () => {
    for (const code of ['ES', 'FR', 'US', 'GB', 'SS', 'BQ']) expect(isCountryCode(code)).toBe(true)
    for (const code of ['es', 'ESP', 'ZZ', 'XK', 'UK', 'EU', '', 'E S']) expect(isCountryCode(code)).toBe(false)
  })
})
