import type { Reader } from './read.js'

/** Guest checkout (carts without an account, and the links that open a guest's order). */
export interface GuestsConfig {
  /** GUEST_CHECKOUT: false refuses new guest carts (POST /carts). */
  readonly checkout: boolean
  /** GUEST_CART_TTL: a guest cart lives this long after its last change. */
  readonly cartTtlMs: number
  /** GUEST_ORDER_LINK_TTL: an order token (the link to a guest's order) is valid this long from its signing. */
  readonly orderLinkTtlMs: number
}

export function readGuests(read: Reader): { guests: GuestsConfig } {
  return {
    guests: Object.freeze({
      checkout: read.boolean('GUEST_CHECKOUT', true),
      cartTtlMs: read.duration('GUEST_CART_TTL', '30d'),
      orderLinkTtlMs: read.duration('GUEST_ORDER_LINK_TTL', '30d'),
    }),
  }
}
