/** What the shop asks of a payment provider. `manual` asks nothing of anyone: the admin marks orders paid. */
export type PaymentProvider = ManualProvider | RemoteProvider

export interface ManualProvider {
  readonly name: 'manual'
}

/** An intent as the shop reads it; `currency` in upper case, amounts in cents. */
export interface RemoteIntent {
  id: string
  // Stripe's own statuses (requires_payment_method, processing, succeeded, canceled, …); new ones may come.
  status: string
  amountCents: number
  amountReceivedCents: number
  currency: string
  clientSecret: string | null
}

/** A provider that takes the money itself (Stripe). */
export interface RemoteProvider {
  readonly name: 'stripe'
  readonly publishableKey: string | null
  createIntent(input: { orderId: number; amountCents: number; currency: string; idempotencyKey: string }): Promise<RemoteIntent>
  retrieveIntent(intentId: string): Promise<RemoteIntent>
  /** Cancels an intent so it can no longer be paid; an intent already canceled or succeeded is left as it is. */
  cancelIntent(intentId: string): Promise<void>
  /** Refunds `amountCents` of the payment (all that is left without it); throws a RefundError. */
  refund(input: { intentId: string; idempotencyKey: string; amountCents?: number | undefined }): Promise<void>
}

/**
 * A refund that did not happen. `definite`: the provider answered no (the same key would replay that answer,
 * so the next attempt takes a new key); otherwise it may not have been reached (a timeout): the retry reuses the key.
 */
export class RefundError extends Error {
  constructor(
    readonly definite: boolean,
    options: { cause: unknown },
  ) {
    super(definite ? 'the provider refused the refund' : 'the provider did not answer the refund', options)
    this.name = 'RefundError'
  }
}
