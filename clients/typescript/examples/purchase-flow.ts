// A storefront's purchase flow with the typed client: browse the catalog, sign up (or sign in again), fill
// the cart, choose a shipping method when the shop ships, place the order and read it back. Every path,
// parameter, body and answer is typed from the service's OpenAPI document, so a typo in a path or a field is a
// compile error, not a 404 at run time.
//   npx tsx clients/typescript/examples/purchase-flow.ts http://localhost:3000 ana@example.com 'a-long-password-1'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { createShopClient, isProblem, type paths } from '@shop-api/client'

/** What `POST /orders` takes: nothing, or an address (saved or inline), a shipping method and a note. */
type Checkout = NonNullable<paths['/orders']['post']['requestBody']>['content']['application/json']
/** An address given inline at checkout, as `POST /addresses` takes it. */
export type Address = NonNullable<Checkout['shippingAddress']>

/** Fails with the service's own code and message (problem details) when an answer is not the expected one. */
function ok<T>(result: { data?: T; error?: unknown; response: Response }, what: string): NonNullable<T> {
  if (result.error !== undefined || result.data === undefined || result.data === null) {
    const message = isProblem(result.error) ? `${result.error.code}: ${result.error.detail}` : result.response.statusText
    throw new Error(`${what}: ${result.response.status} ${message}`)
  }
  return result.data
}

const MADRID: Address = { fullName: 'Ana Pérez', line1: 'Calle Mayor 1', city: 'Madrid', postalCode: '28013', country: 'ES' }

export async function purchase(baseUrl: string, customer: { name: string; email: string; password: string }, address: Address = MADRID) {
  let token: string | undefined
  const shop = createShopClient({ baseUrl, token: () => token })

  // Anyone may browse: the cheapest products first, five per page; the total is in X-Total-Count.
  const page = await shop.GET('/products', { params: { query: { sort: 'price_asc', limit: 5 } } })
  const products = ok(page, 'GET /products')
  const product = products.find((candidate) => candidate.stock > 0)
  if (!product) throw new Error('nothing in stock')
  console.log(`${page.response.headers.get('X-Total-Count')} products; buying "${product.name}" at ${product.price}`)

  // A new customer signs up (an e-mail already in use is the code email_taken: then it is a returning customer).
  const registered = await shop.POST('/auth/register', { body: customer })
  if (registered.error && !(isProblem(registered.error) && registered.error.code === 'email_taken')) ok(registered, 'POST /auth/register')
  const session = ok(await shop.POST('/auth/login', { body: { email: customer.email, password: customer.password } }), 'POST /auth/login')
  token = session.token

  ok(await shop.POST('/cart/add', { body: { productId: product.id, quantity: 1 } }), 'POST /cart/add')
  const cart = ok(await shop.GET('/cart'), 'GET /cart')
  console.log(`cart: ${cart.items.length} line(s), total ${cart.total}`)

  // A shop with active shipping methods wants an address and one of the methods that ship there on every
  // order (422 otherwise); a shop without any takes the order as it is. The cheapest method comes first.
  let checkout: Checkout = {}
  const ships = ok(await shop.GET('/shipping-methods'), 'GET /shipping-methods').length > 0
  if (ships) {
    const methods = ok(await shop.GET('/shipping-methods', { params: { query: { country: address.country } } }), 'GET /shipping-methods')
    const method = methods[0]
    if (!method) throw new Error(`the shop ships, but not to ${address.country}`)
    checkout = { shippingAddress: address, shippingMethodId: method.id }
    console.log(`shipping: ${method.name} to ${address.city}, ${method.price}`)
  }

  // The same Idempotency-Key on a retry (a lost answer) returns the same order instead of a second one.
  const placed = await shop.POST('/orders', { params: { header: { 'idempotency-key': randomUUID() } }, body: checkout })
  const order = ok(placed, 'POST /orders')
  const read = ok(await shop.GET('/orders/{id}', { params: { path: { id: order.id } } }), 'GET /orders/{id}')
  console.log(`order ${read.id}: ${read.status}, total ${read.total}`)
  return { product, order: read }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [baseUrl = 'http://localhost:3000', email = 'ana@example.com', password = 'a-long-password-1'] = process.argv.slice(2)
  await purchase(baseUrl, { name: 'Ana', email, password })
}
