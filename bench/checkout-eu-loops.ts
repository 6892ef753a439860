// checkout-eu's two loops in one process (app.inject), for the probes that look inside a request
// (frame-probe.ts, statement-probe.ts, request-time-probe.ts).
import type { buildApp } from '../src/app.js'
import { createUser } from '../src/modules/users/users.service.js'
import { makeProduct } from '../test/helpers/catalog.js'

type App = Awaited<ReturnType<typeof buildApp>>
type Step = [name: string, run: () => Promise<unknown>]

/**
 * A shop set up as checkout-eu's: an admin and a customer, a product with `stock` units, a 10 % code, an ES shipping
 * method (inactive) and an ES address in the customer's book. `steps(eu)` are a loop's requests: plain add, view,
 * order; EU add, code, order to the address with the method. `setEu(on)` makes the shop the EU windows' (the method
 * active, the 21 % ES rate) or the plain windows' (neither), as the bench does between windows.
 */
export async function checkoutEuLoops(app: App, stock: number): Promise<{ steps: (eu: boolean) => Step[]; setEu: (on: boolean) => Promise<void> }> {
  const admin = await createUser(app.db, { name: 'A', email: 'a@probe.test', password: 'secret123', role: 'admin' }, null)
  const customer = await createUser(app.db, { name: 'C', email: 'c@probe.test', password: 'secret123', role: 'customer' }, null)
  const call = async (user: typeof admin, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => {
    const res = await app.inject({ method, url, headers: { authorization: `Bearer ${app.signToken(user as never)}` }, ...(payload ? { payload } : {}) })
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.json() as { id: number }
  }
  const productId = (await makeProduct(app, { name: 'Taza', priceCents: 1210, stock })).id
  await call(admin, 'POST', '/discount-codes', { code: 'PROBE10', type: 'percent', value: 10 })
  const method = await call(admin, 'POST', '/shipping-methods', { name: 'Envío', price: 4.9, countries: ['ES'], taxClass: 'standard', active: false })
  const address = await call(customer, 'POST', '/addresses', { fullName: 'C', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' })
  let rateId: number | undefined
  return {
    steps: (eu) => [
      ['add', () => call(customer, 'POST', '/cart/add', { productId, quantity: 1 })],
      eu ? ['code', () => call(customer, 'POST', '/cart/discount', { code: 'PROBE10' })] : ['view', () => call(customer, 'GET', '/cart')],
      ['order', () => call(customer, 'POST', '/orders', eu ? { shippingAddressId: address.id, shippingMethodId: method.id } : undefined)],
    ],
    setEu: async (on) => {
      await call(admin, 'PATCH', `/shipping-methods/${method.id}`, { active: on })
      if (on && rateId === undefined) rateId = (await call(admin, 'POST', '/tax-rates', { country: 'ES', taxClass: 'standard', rate: 21 })).id
      if (!on && rateId !== undefined) {
        await call(admin, 'DELETE', `/tax-rates/${rateId}`)
        rateId = undefined
      }
    },
  }
}
