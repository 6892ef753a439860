import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Order tokens: the links that open a guest's order without an account (docs/api.md, "Guest orders").
 *
 * A token is `<orderId>.<expiry, Unix seconds>.<base64url HMAC-SHA256 of "<orderId>.<expiry>">`. The HMAC key is
 * derived from JWT_SECRET (HMAC-SHA256(JWT_SECRET, "order-token")), so an order token can never pass for an access
 * token or the other way round, and changing JWT_SECRET ends every link. Nothing is stored: a token holds until its
 * expiry, and a new one (a lookup, a later e-mail) leaves the older ones valid.
 */
export interface OrderTokens {
  /** A token for `orderId`, valid the configured time from `now` (ms). */
  sign(orderId: number, now?: number): string
  /** Whether `token` is a valid, unexpired token of `orderId` (compared in constant time). */
  verify(token: string, orderId: number, now?: number): boolean
  /** The order a valid, unexpired token opens; undefined for any other string. */
  orderOf(token: string, now?: number): number | undefined
}

/** `<id>.<expiry>.<43 base64url characters>`: ids and expiries are plain positive decimal numbers. */
const TOKEN = /^([1-9]\d{0,15})\.([1-9]\d{0,15})\.([A-Za-z0-9_-]{43})$/

/** The key order tokens are signed with, derived from the JWT secret. */
export function orderTokenKey(jwtSecret: string): Buffer {
  return createHmac('sha256', jwtSecret).update('order-token').digest()
}

function macOf(key: Buffer, orderId: string, expiry: string): Buffer {
  return createHmac('sha256', key).update(`${orderId}.${expiry}`).digest()
}

function signWith(key: Buffer, orderId: number, expiry: number): string {
  return `${orderId}.${expiry}.${macOf(key, String(orderId), String(expiry)).toString('base64url')}`
}

export function createOrderTokens(jwtSecret: string, ttlMs: number): OrderTokens {
  const key = orderTokenKey(jwtSecret)
  const mac = (orderId: string, expiry: string) => macOf(key, orderId, expiry)

  const orderOf = (token: string, now = Date.now()): number | undefined => {
    const match = TOKEN.exec(token)
    if (!match) return undefined
    const [, id = '', expiry = '', signature = ''] = match
    // The signature first, in constant time; only then what it vouches for. Compared as text: base64url has several
    // spellings of the last character's unused bits, and only the one the service writes is a token.
    const given = Buffer.from(signature)
    const expected = Buffer.from(mac(id, expiry).toString('base64url'))
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
    if (Number(expiry) * 1000 <= now) return undefined
    const orderId = Number(id)
    return Number.isSafeInteger(orderId) ? orderId : undefined
  }

  return {
    sign: (orderId, now = Date.now()) => signWith(key, orderId, Math.ceil((now + ttlMs) / 1000)),
    verify: (token, orderId, now) => orderOf(token, now) === orderId,
    orderOf,
  }
}

/** A token of `orderId` expiring at `expiry` (Unix seconds), whatever the clock says: for tests and tools. */
export function signOrderTokenUntil(jwtSecret: string, orderId: number, expiry: number): string {
  return signWith(orderTokenKey(jwtSecret), orderId, expiry)
}

/** The storefront's page of an order, opened by its token: `SHOP_URL/orders/<id>?token=<token>`. */
export function orderLinkUrl(shopUrl: string, orderId: number, token: string): string {
  return `${shopUrl}/orders/${orderId}?token=${encodeURIComponent(token)}`
}
