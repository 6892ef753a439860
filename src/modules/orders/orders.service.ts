import { type Kysely, sql, type Transaction } from 'kysely'
import type { AddressRow, Database, ShippingMethodRow } from '../../db/database.js'
import type { AuthUser } from '../../plugins/auth.js'
import { isUniqueViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import { type EventSink, noEvents } from '../../shared/event-sink.js'
import { centsToAmount } from '../../shared/money.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { addressInputToSnapshot, addressRowToSnapshot, findOwnAddressSnapshot } from '../addresses/addresses.service.js'
import type { AddressSnapshot } from '../addresses/addresses.schemas.js'
import { createInventory, type Inventory, type ReservedLine } from '../inventory/inventory.service.js'
import { enqueueEmail } from '../outbox/outbox.js'
import { findActiveShippingMethod, shipsTo, shopShips } from '../shipping/shipping.service.js'
import { type MoveRequest, OrderLifecycle } from './order-lifecycle.js'
import { fulfillmentsHook } from './fulfillments.service.js'
import { appendOrderEvent, orderActorOf, userIdOf } from './order-timeline.js'
import { loadOrder, type OrderRecord, type PaymentDefaults, rowsToOrders, toOrder, withFulfillments, withRefunds } from './order-view.js'
import { type AuditSource } from '../staff/audit-log.js'
import * as repo from './orders.repository.js'
import { orderLinkUrl, type OrderTokens } from './order-token.js'
import type { ListOrdersQuery, Order, OrderLookupInput, OrderStatus, PlaceOrderInput } from './orders.schemas.js'
import { cartAddress, cartMethod, discountLines, type PricingSettings, priceCart, taxLinesView } from '../cart/cart-view.js'
import { type CartRef, clearCartAfterOrder, linesForPricing, takeCart, variantOptions } from '../cart/cart.service.js'
import { type CheckedCode, checkCode, codeGoneOnWrite, redeem, redemptionColumns } from '../discounts/discounts.service.js'
import { assertPermissions } from '../staff/staff-access.js'
import { isPostgres } from '../../db/dialect.js'
import { retryAborted } from '../../db/transaction.js'

type Db = Kysely<Database>

const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000

/** What the orders module needs, handed to it by app.ts (nothing is looked up by `db`). */
export interface OrdersDeps {
  db: Db
  lifecycle: OrderLifecycle
  inventory: Inventory
  events: EventSink
  payments: PaymentDefaults
  /** The currency, whether prices include tax, and the tax country without an address. */
  pricing: PricingSettings
}

/**
 * The orders module's dependencies on one database: its inventory and lifecycle, with `events` going where the
 * caller says (app.ts: the outbox; a bench or a script: nowhere). app.ts then adds the payments' hook.
 */
export function createOrdersDeps(
  db: Db,
  payments: PaymentDefaults = { provider: 'manual', currency: 'EUR' },
  events: EventSink = noEvents,
  pricing: PricingSettings = { currency: payments.currency, pricesIncludeTax: true, shopCountry: 'ES' },
): OrdersDeps {
  const inventory = createInventory({ events })
  const lifecycle = new OrderLifecycle({ db, inventory, events, payments })
  // Moves made without a shipment record one (to shipped) or deliver them all (to delivered).
  lifecycle.use(fulfillmentsHook({ db, lifecycle, events, payments }))
  return { db, lifecycle, inventory, events, payments, pricing }
}

/** Steps of order creation, in order; named for the test-only failure seam. */
export type PlaceOrderStep = 'key-claimed' | 'cart-taken' | 'stock-reserved' | 'order-written' | 'items-written'

export interface PlaceOrderOptions {
  idempotencyKey?: string | undefined
  /**
   * Test-only seam: awaited after each step inside the transaction, so a test can make it throw and check that
   * nothing was kept. Routes never pass it, so it cannot be reached over HTTP.
   */
  afterStep?: (step: PlaceOrderStep) => void | Promise<void>
}

// PostgreSQL only: an admin deleting a product locks the product, then (by cascade) the cart lines holding it, while
// an order locks its cart lines, then the products. If the two meet, PostgreSQL aborts one of them with a deadlock
// error; the order's transaction has then rolled back completely and is simply run again (retryAborted).

/** Whether a key's first order is still the answer: keys older than this name a new order. */
function idempotencyCutoff(): string {
  return new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString()
}

/** The checkout body, as validated by the route's schema (every field optional). */
export type CheckoutInput = PlaceOrderInput

/**
 * Turns the user's cart into a `pending` order in one transaction: the cart is emptied, the stock taken (the
 * inventory, in product id order), the totals computed (the totals function) and the order written. Any failure
 * rolls all of it back. With an idempotency key, a key already used by this user in the last 24 hours returns that
 * order instead (`created: false`), also when requests race. `checkout` carries the address, shipping method and
 * note (see createOrderFromCart for the order of its checks).
 */
export async function placeOrder(
  deps: OrdersDeps,
  buyer: number | GuestBuyer,
  options: PlaceOrderOptions = {},
  checkout: CheckoutInput = {},
): Promise<{ order: Order; created: boolean }> {
  const { db } = deps
  // Body fields come first (422), before a repeated key is answered or anything is read.
  if (checkout.shippingAddressId !== undefined && checkout.shippingAddress !== undefined)
    throw new ValidationError(messages.addressIdAndInline, 'shippingAddressId')
  const ref: CartRef = typeof buyer === 'number' ? { userId: buyer } : { cartId: buyer.cartId }
  // A guest's key is scoped to their cart (its token's hash, which outlives the cart row an order deletes).
  const scope: repo.IdempotencyScope = typeof buyer === 'number' ? { userId: buyer } : { cartTokenHash: buyer.cartTokenHash }
  const key = options.idempotencyKey
  if (key !== undefined) {
    const existing = await repo.findOrderIdByIdempotencyKey(db, scope, key, idempotencyCutoff())
    if (existing !== undefined) return { order: await loadOrder(db, deps.payments, existing), created: false }
  }
  try {
    const order = await retryAborted(() =>
      db.transaction().execute((trx) => createOrderFromCart(deps, trx, ref, scope, key, checkout, options.afterStep ?? (() => undefined))),
    )
    return { order, created: true }
  } catch (error) {
    // Lost a race for the same key: the winner's order is the answer.
    if (key !== undefined && isUniqueViolation(error)) {
      const winner = await repo.findOrderIdByIdempotencyKey(db, scope, key, idempotencyCutoff())
      if (winner !== undefined) return { order: await loadOrder(db, deps.payments, winner), created: false }
    }
    throw error
  }
}

/** A guest checking out: their cart (the `X-Cart-Token` it was opened with, as its stored hash). */
export interface GuestBuyer {
  cartId: number
  cartTokenHash: string
}

/**
 * The address and method a checkout's body names (404 when unknown, someone else's or inactive, the address's
 * first). `read`: both as read with a customer's cart row, each its row or null when missing (undefined for a
 * guest's cart, or a customer without a cart row: each is read here then).
 */
async function resolveCheckoutReferences(
  trx: Transaction<Database>,
  userId: number | undefined,
  checkout: CheckoutInput,
  read: { addressRow: AddressRow | null; methodRow: ShippingMethodRow | null } | undefined,
) {
  const { shippingAddressId: addressId, shippingMethodId: methodId } = checkout
  let address: AddressSnapshot | undefined
  if (addressId !== undefined) {
    if (read !== undefined) address = read.addressRow ? addressRowToSnapshot(read.addressRow) : undefined
    else address = userId === undefined ? undefined : await findOwnAddressSnapshot(trx, userId, addressId)
    if (!address) throw new AppError(404, 'addressNotFound')
  } else if (checkout.shippingAddress !== undefined) {
    // Used for this order only, not saved to the address book.
    address = addressInputToSnapshot(checkout.shippingAddress)
  }
  let method: ShippingMethodRow | undefined
  if (methodId !== undefined) {
    method = read !== undefined ? (read.methodRow ?? undefined) : await findActiveShippingMethod(trx, methodId)
    if (!method) throw new AppError(404, 'shippingMethodNotFound')
  }
  return { address, method }
}

/**
 * Checks in the documented order: the referenced address and method (404), the empty cart (400), address and method
 * required while the shop ships and compatible (422), then stock (409). The body's choices win over those kept on
 * the cart (PATCH /cart). Everything runs in the transaction, so a failure at any step leaves the cart, the stock
 * and the orders as they were.
 */
async function createOrderFromCart(
  deps: OrdersDeps,
  trx: Transaction<Database>,
  ref: CartRef,
  scope: repo.IdempotencyScope,
  key: string | undefined,
  checkout: CheckoutInput,
  step: NonNullable<PlaceOrderOptions['afterStep']>,
): Promise<Order> {
  const now = nowIso()
  const userId = ref.userId ?? null
  const guest = userId === null
  const noCheckout: repo.CheckoutColumns = { subtotal_cents: null, shipping_cents: null, shipping_address: null, shipping_method: null, note: null }
  let orderId: number | undefined
  if (key !== undefined) {
    // The key is claimed first: a racing request with the same key waits here, then fails on the primary key
    // and answers the winner's order, instead of finding the cart already emptied.
    await repo.deleteExpiredIdempotencyKey(trx, scope, key, idempotencyCutoff())
    // A guest's e-mail is known further on: the row holds a stand-in until then (the table wants one on a guest order).
    const claim = { user_id: userId, guest, email: guest ? '-' : null, total_cents: 0, status: 'pending' as const, created_at: now, updated_at: now }
    orderId = (await repo.insertOrder(trx, { ...claim, ...noCheckout, ...repo.noBreakdown })).id
    await repo.insertIdempotencyKey(trx, { scope, key, order_id: orderId, created_at: now })
    await step('key-claimed')
  }

  // The cart taken first: a customer's comes with the body's address and method (a statement less).
  // Their 404s still come before the empty cart's 400; the transaction gives back whatever a refusal took.
  const taken = await takeCart(trx, ref, { addressId: checkout.shippingAddressId ?? null, methodId: checkout.shippingMethodId ?? null })
  const chosen = await resolveCheckoutReferences(trx, userId ?? undefined, checkout, taken.chosen)
  const { cart, lines } = taken
  if (lines.length === 0) throw new AppError(400, 'cartEmpty')
  await step('cart-taken')

  // The order's e-mail: a guest's from the body or the cart (required), an account's its user's (read with their
  // name, which the order's e-mail then needs not read again; with the cart row).
  const account = guest ? undefined : (taken.account ?? (await repo.findAccount(trx, userId)))
  const email = guest ? (checkout.email?.toLowerCase() ?? cart?.email ?? null) : (account?.email ?? null)
  if (guest && email === null) throw new AppError(422, 'guestEmailRequired')

  // What the body leaves out, the cart's kept choices give (an address or method gone since counts as none).
  const address =
    chosen.address ?? (checkout.shippingAddressId === undefined && checkout.shippingAddress === undefined ? await cartAddress(trx, ref, cart) : undefined)
  const method = chosen.method ?? (checkout.shippingMethodId === undefined ? await cartMethod(trx, cart) : undefined)
  const note = checkout.note ?? cart?.note ?? undefined

  // A named method is active, so the shop ships; otherwise whether it does was read with a customer's cart row
  // (a guest's cart probes it here).
  const ships = method !== undefined || (taken.ships ?? (await shopShips(trx)))
  if (ships) {
    if (!address) throw new AppError(422, 'shippingAddressRequired')
    if (!method) throw new AppError(422, 'shippingMethodRequired')
    if (!shipsTo(method, address.country)) throw new AppError(422, 'shippingUnavailable', address.country)
  }

  // A product taken off sale (a draft again, or archived) since it was added is not sold: the inventory refuses it.
  const discountCode = cart?.discount_code ?? undefined
  const checkCodeOn = (text: string, rows: Parameters<typeof discountLines>[0]) =>
    checkCode(trx, {
      code: text,
      row: taken.codeRow,
      now: new Date(),
      customer: { userId, email },
      lines: discountLines(rows),
      currency: deps.pricing.currency,
    })
  let reserved: ReservedLine[]
  try {
    reserved = await deps.inventory.reserve(
      trx,
      lines.map((line) => ({ productId: line.product_id, variantId: line.variant_id, quantity: line.quantity })),
    )
  } catch (refusal) {
    // The cart's code is checked after the products on sale and before stock: when the inventory refuses, those
    // two come first (the transaction rolls back whichever answers).
    if (discountCode !== undefined && refusal instanceof AppError) {
      const rows = await linesForPricing(trx, lines)
      const offSale = rows.find((row) => row.status !== 'active')
      if (offSale) throw new AppError(409, 'productUnavailable', offSale.name)
      await checkCodeOn(discountCode, rows)
    }
    throw refusal
  }
  await step('stock-reserved')

  // The lines in the cart's order (the inventory takes them by id), at the prices the stock was taken at.
  const byVariant = new Map(reserved.map((line) => [line.variant.id, line]))
  const bought = lines.map((line) => byVariant.get(line.variant_id)!)
  // The cart's code, checked again now on the lines as taken (every product on sale, at the prices they were taken
  // at): a statement less than reading them for it. Its use is counted last, once the order row exists.
  const code: CheckedCode | undefined =
    discountCode === undefined
      ? undefined
      : await checkCodeOn(
          discountCode,
          bought.map(({ product, variant, quantity }) => ({
            product_id: product.id,
            category_id: product.category_id,
            price_cents: variant.price_cents,
            quantity,
          })),
        )
  const priced = bought.map(({ product, variant, quantity }) => ({
    product_id: product.id,
    category_id: product.category_id,
    tax_class: variant.tax_class ?? product.tax_class,
    price_cents: variant.price_cents,
    quantity,
  }))
  const { totals, taxCountry } = await priceCart(trx, deps.pricing, { lines: priced, method, address, code })
  // Prices may have risen since the lines were added; past the maximum the sums would stop being exact.
  if (!totals.withinLimits) throw new AppError(409, 'amountTooLarge')
  // A checkout order: a body with something in it, a shop that ships, a code or a tax. A plain order keeps the
  // checkout columns null.
  const isCheckout =
    ships ||
    Object.keys(checkout).length > 0 ||
    address !== undefined ||
    method !== undefined ||
    note !== undefined ||
    code !== undefined ||
    totals.taxTotalCents > 0
  const columns: repo.CheckoutColumns = isCheckout
    ? {
        subtotal_cents: totals.subtotalCents,
        shipping_cents: totals.shippingTotalCents,
        shipping_address: address ? JSON.stringify(address) : null,
        // The method as it was (its list price); what was charged is shippingTotal.
        shipping_method: method ? JSON.stringify({ id: method.id, name: method.name, price: centsToAmount(method.price_cents) }) : null,
        note: note ?? null,
      }
    : noCheckout
  const breakdown: repo.BreakdownColumns = {
    currency: deps.pricing.currency,
    prices_include_tax: deps.pricing.pricesIncludeTax ? 1 : 0,
    tax_country: taxCountry,
    discount_total_cents: totals.discountTotalCents,
    shipping_discount_cents: totals.shippingDiscountCents,
    tax_total_cents: totals.taxTotalCents,
    discount: code ? JSON.stringify({ code: code.code.code, type: code.type, value: code.code.value }) : null,
    tax_lines: JSON.stringify(taxLinesView(totals)),
    // The order is the code's redemption: `redeem` below counts the use.
    ...(code ? redemptionColumns(code.code.id, email ?? '') : { discount_code_id: null, discount_email: null }),
  }

  const totalCents = totals.totalCents
  // The order names its code (on PostgreSQL by a key): a code deleted since it was read is the code's 404.
  const written = code ? (error: unknown) => Promise.reject(codeGoneOnWrite(error)) : undefined
  const created = orderId === undefined
  if (orderId === undefined) {
    orderId = (
      await repo
        .insertOrder(trx, {
          user_id: userId,
          guest,
          email: guest ? email : null,
          total_cents: totalCents,
          status: 'pending',
          created_at: now,
          updated_at: now,
          ...columns,
          ...breakdown,
        })
        .catch(written)
    ).id
  } else {
    await repo.setOrderTotals(trx, orderId, { total_cents: totalCents, ...(guest ? { email } : {}), ...columns, ...breakdown }).catch(written)
  }
  await step('order-written')

  const id = orderId
  const options = bought.some(({ variant }) => variant.values_key !== '')
    ? await variantOptions(
        trx,
        bought.map(({ variant }) => variant.id),
      )
    : undefined
  const items = await repo.insertOrderItems(
    trx,
    bought.map(({ product, variant, quantity }, i) => {
      const line = totals.lines[i]!
      return {
        order_id: id,
        product_id: product.id,
        variant_id: variant.id,
        sku: variant.sku,
        variant_title: variant.title,
        quantity,
        price_cents: variant.price_cents,
        name: product.name,
        options: JSON.stringify(options?.get(variant.id) ?? []),
        tax_class: priced[i]!.tax_class,
        tax_rate: line.taxRate,
        discount_cents: line.discountCents,
        tax_cents: line.taxCents,
        total_cents: line.totalCents,
      }
    }),
  )
  await step('items-written')

  // The answer is built from what the transaction already holds: no read-back query.
  const products = new Map(reserved.map(({ product }) => [product.id, product]))
  const record: OrderRecord = {
    id,
    user_id: userId,
    guest: guest ? 1 : 0,
    email,
    total_cents: totalCents,
    status: 'pending',
    created_at: now,
    updated_at: now,
    ...columns,
    ...breakdown,
  }
  const orderLines = items.sort((a, b) => a.id - b.id).map((item) => ({ ...item, product: products.get(item.product_id) }))
  const order = toOrder(record, orderLines, null, deps.payments)
  // The timeline's first entry, in the order's own transaction (the customer placed it: an account, or a guest).
  await appendOrderEvent(trx, {
    orderId: id,
    type: 'order.created',
    at: now,
    actor: userId === null ? { type: 'guest', email: email ?? '' } : { type: 'user', id: userId },
    data: { total: order.total, currency: order.currency, items: order.items.length },
  })
  // Events: order.created, and stock.low for each product this order took to the threshold or below.
  await deps.events.emit(trx, { type: 'order.created', data: order, ...(account ? { customer: account } : {}) })
  await deps.inventory.announceLowStock(trx, reserved)
  await clearCartAfterOrder(trx, ref, taken)
  // The code's use, counted last. For a code with a usage limit it is a conditional update on the code's row (409
  // when used up meanwhile), whose lock every order with that code waits for until this one commits: last, it is held
  // for this statement and the commit. A code without one is not written (see `redeem`).
  if (code) {
    const counted = code.code.usageLimit !== null
    // A new order's insert took the code's shared lock; an order written again (setOrderTotals) did not. The code
    // was read in this transaction (its limits with it).
    const { perCustomerLimit } = code.code
    await redeem(trx, { codeId: code.code.id, orderId: id, userId, email: email ?? '', counted, perCustomerLimit, held: created })
  }
  return order
}

/** One order: any order for an admin (with its customer and next statuses), only their own for a customer (someone else's is "not found"). */
export async function getOrder(deps: OrdersDeps, caller: AuthUser, id: number): Promise<Order> {
  const admin = caller.role === 'admin'
  return loadOrder(deps.db, deps.payments, id, admin ? { admin: deps.lifecycle } : { ownerId: caller.id })
}

/**
 * Newest first: the caller's own orders, or everyone's (with their customer) for an admin, or one customer's with
 * `userId`; `total` counts before paging. A customer may name only themselves: another id is the admin routes' 403.
 */
export async function listOrders(deps: OrdersDeps, caller: AuthUser, query: ListOrdersQuery): Promise<{ orders: Order[]; total: number }> {
  const { db } = deps
  const admin = caller.role === 'admin'
  if (!admin && query.userId !== undefined && query.userId !== caller.id) throw new AppError(403, 'requiresRoles', ['admin'])
  const userId = admin ? query.userId : caller.id
  const filter: repo.OrderFilter = {
    ...(userId !== undefined ? { userId } : {}),
    ...(query.status ? { status: query.status } : {}),
    ...(query.guest !== undefined ? { guest: query.guest } : {}),
    ...(query.email !== undefined ? { email: query.email.trim().toLowerCase() } : {}),
    ...(query.fulfillmentStatus ? { fulfillmentStatus: query.fulfillmentStatus } : {}),
    ...(query.paymentStatus !== undefined ? { paymentStatus: query.paymentStatus } : {}),
  }
  const [rows, total] = await Promise.all([repo.listOrdersWithItems(db, { ...filter, limit: query.limit, offset: query.offset }), repo.countOrders(db, filter)])
  const orders = rowsToOrders(rows, deps.payments, admin ? deps.lifecycle : undefined)
  return { orders: await withRefunds(db, await withFulfillments(db, orders)), total }
}

/**
 * An admin moves an order along the lifecycle's transitions (the lifecycle does the rest: stock, payment, events).
 * The answer is the order as its owner reads it (an admin's GET adds `customer` and `nextStatuses`).
 */
export async function changeOrderStatus(
  deps: OrdersDeps,
  caller: AuthUser,
  id: number,
  to: OrderStatus,
  log: MoveRequest['log'],
  audit: AuditSource,
): Promise<Order> {
  // Cancelling a paid order refunds it: `refunds:write` besides the route's `orders:write`.
  const vet = (from: OrderStatus) => {
    if (to === 'cancelled' && from === 'paid') assertPermissions(caller.staffRole, ['orders:write', 'refunds:write'])
  }
  await deps.lifecycle.move({ orderId: id, to, cause: 'admin', actorId: userIdOf(caller), actor: orderActorOf(caller), audit, log, vet })
  return loadOrder(deps.db, deps.payments, id)
}

/** The owner cancels their own `pending` order; the stock comes back. Someone else's order is "not found". */
export async function cancelOwnOrder(deps: OrdersDeps, userId: number, id: number, log: MoveRequest['log']): Promise<Order> {
  await deps.lifecycle.move({ orderId: id, to: 'cancelled', cause: 'customer', actorId: userId, ownerId: userId, audit: null, log })
  return loadOrder(deps.db, deps.payments, id, { ownerId: userId })
}

/** A guest's order as its order token opens it: the order as its owner reads it (no `customer`, no `nextStatuses`). */
export async function getOrderByToken(deps: OrdersDeps, id: number): Promise<Order> {
  return loadOrder(deps.db, deps.payments, id)
}

/** The guest cancels their `pending` order through its link (the token named it); the stock comes back. */
export async function cancelOrderByToken(deps: OrdersDeps, id: number, log: MoveRequest['log']): Promise<Order> {
  await deps.lifecycle.move({ orderId: id, to: 'cancelled', cause: 'customer', actorId: null, audit: null, log })
  return loadOrder(deps.db, deps.payments, id)
}

// ---- links to a guest's order ----

/** What a link to a guest's order needs: the tokens (app.orderTokens) and the storefront's address (SHOP_URL). */
export interface OrderLinkSettings {
  tokens: OrderTokens
  /** Without a trailing slash. */
  shopUrl: string
}

/**
 * An order token for `orderId`, valid GUEST_ORDER_LINK_TTL from `issuedAt` (ms; now by default), and the link that
 * carries it. Guest checkout signs as of the order's `createdAt`: its 201, a replay of it and the order-received
 * e-mail then carry the very same token.
 */
export function orderLink(settings: OrderLinkSettings, orderId: number, issuedAt?: number): { orderToken: string; link: string } {
  const orderToken = settings.tokens.sign(orderId, issuedAt)
  return { orderToken, link: orderLinkUrl(settings.shopUrl, orderId, orderToken) }
}

/**
 * POST /orders/lookup: e-mails a fresh link to a guest order whose e-mail is `email` (ignoring case). Account
 * orders and anything that does not match get nothing, and the caller answers the same 202 either way. Both ways do
 * the same work short of the e-mail's row (the order read by id, a token signed, one transaction), so the answer
 * takes about as long whether or not the data matched.
 */
export async function requestOrderLink(deps: OrdersDeps, input: OrderLookupInput, settings: OrderLinkSettings): Promise<void> {
  const { db } = deps
  const email = input.email.trim().toLowerCase()
  const { link } = orderLink(settings, input.orderId)
  await db.transaction().execute(async (trx) => {
    // As the password-reset request: a commit that wrote a row waits for its WAL flush on PostgreSQL, one that
    // wrote none does not, which would tell a match from a miss. The e-mail does not need that wait.
    if (isPostgres(db)) await sql`set local synchronous_commit = off`.execute(trx)
    const order = await repo.findOrderContact(trx, input.orderId)
    if (order?.guest !== 1 || order.email === null || order.email.toLowerCase() !== email) return
    await enqueueEmail(trx, { template: 'guest-order-link', to: order.email, data: { order: { id: order.id }, link } })
  })
}
