import type { Reader } from './read.js'

/** Payments (src/modules/payments): `manual` by default, `stripe` when STRIPE_SECRET_KEY is set. */
export interface PaymentsConfig {
  readonly provider: 'manual' | 'stripe'
  /** The shop's one currency, ISO 4217 in upper case. */
  readonly currency: string
  /** A pending order still unpaid this long after its creation is cancelled; 0 turns it off. */
  readonly orderPaymentTtlMs: number
  readonly stripe: {
    readonly secretKey: string
    readonly publishableKey: string | null
    readonly webhookSecret: string | null
    /** Where the SDK sends its calls; null is Stripe itself. */
    readonly apiUrl: string | null
  } | null
}

const TTL = /^(\d+)(ms|s|m|h|d)?$/
const TTL_UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

export function readPayments(read: Reader): { payments: PaymentsConfig } {
  const secretKey = read.string('STRIPE_SECRET_KEY')
  if (secretKey !== undefined && !/^(sk|rk)_(test|live)_\S+$/.test(secretKey)) {
    read.problem('STRIPE_SECRET_KEY must be a Stripe secret key (sk_test_…, sk_live_… or a restricted rk_… key)')
  }
  const publishableKey = read.string('STRIPE_PUBLISHABLE_KEY') ?? null
  if (publishableKey !== null && !/^pk_(test|live)_\S+$/.test(publishableKey)) {
    read.problem('STRIPE_PUBLISHABLE_KEY must be a Stripe publishable key (pk_test_… or pk_live_…)')
  }
  const webhookSecret = read.string('STRIPE_WEBHOOK_SECRET') ?? null
  if (webhookSecret !== null && !/^whsec_\S+$/.test(webhookSecret)) read.problem('STRIPE_WEBHOOK_SECRET must be a webhook signing secret (whsec_…)')
  const apiUrl = read.string('STRIPE_API_URL') ?? null
  if (apiUrl !== null && !/^https?:\/\/[^/\s:]+(:\d{1,5})?\/?$/.test(apiUrl)) {
    read.problem(`STRIPE_API_URL must be an http(s) URL with a host and an optional port, no path (got "${apiUrl}")`)
  }
  const currency = read.string('SHOP_CURRENCY') ?? 'EUR'
  if (!/^[A-Z]{3}$/.test(currency)) read.problem(`SHOP_CURRENCY must be a three-letter ISO 4217 code in upper case, such as EUR (got "${currency}")`)

  const provider = secretKey !== undefined ? 'stripe' : 'manual'
  // With Stripe an unpaid order gives its stock back after an hour; with manual payments (bank transfer, cash on
  // delivery) the shop waits for the admin, so it is off unless set.
  let orderPaymentTtlMs = provider === 'stripe' ? 3_600_000 : 0
  const rawTtl = read.string('ORDER_PAYMENT_TTL')
  if (rawTtl !== undefined) {
    const match = TTL.exec(rawTtl)
    if (!match) read.problem(`ORDER_PAYMENT_TTL must be a duration such as 90s, 30m or 1h, or 0 to turn it off (got "${rawTtl}")`)
    // A bare number is seconds, as JWT_EXPIRES_IN.
    else orderPaymentTtlMs = Number(match[1]) * TTL_UNIT_MS[match[2] ?? 's']!
  }
  return {
    payments: Object.freeze({
      provider,
      currency,
      orderPaymentTtlMs,
      stripe: secretKey === undefined ? null : Object.freeze({ secretKey, publishableKey, webhookSecret, apiUrl }),
    }),
  }
}
