import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RefundError } from '../../src/modules/payments/providers/provider.js'
import { createStripeProvider, stripeClientOptions } from '../../src/modules/payments/providers/stripe.js'
import { type StripeFake, startStripeFake } from '../fakes/stripe-fake.js'

// The real `stripe` SDK against the fake on 127.0.0.1: no network, but the SDK's own requests, retries and
// idempotency keys.

let fake: StripeFake
beforeAll(async () => {
  fake = await startStripeFake()
})
afterAll(async () => {
  await fake.close()
})

const settings = () => ({ secretKey: 'sk_test_fake', publishableKey: 'pk_test_fake', webhookSecret: null, apiUrl: fake.url })

describe('the Stripe provider, through the SDK', () => {
  it('STRIPE_API_URL becomes the SDK host, port and protocol; unset leaves Stripe itself', () => {
    expect(stripeClientOptions({ ...settings(), apiUrl: 'http://127.0.0.1:12111' })).toMatchObject({ host: '127.0.0.1', port: 12111, protocol: 'http' })
    const own = stripeClientOptions({ ...settings(), apiUrl: null })
    expect(own.host).toBeUndefined()
    expect(own).toMatchObject({ timeout: 10_000, maxNetworkRetries: 1 })
  })

  it('creates an intent with metadata.orderId; the same idempotency key replays the same intent', async () => {
    const stripe = createStripeProvider(settings())
    const first = await stripe.createIntent({ orderId: 7, amountCents: 1999, currency: 'EUR', idempotencyKey: 'order-7-intent-1' })
    const again = await stripe.createIntent({ orderId: 7, amountCents: 1999, currency: 'EUR', idempotencyKey: 'order-7-intent-1' })
    expect(again.id).toBe(first.id)
    expect(first).toMatchObject({ amountCents: 1999, currency: 'EUR', status: 'requires_payment_method' })
    expect(first.clientSecret).toMatch(/^pi_.+_secret_/)
    expect(fake.intents.get(first.id)).toMatchObject({ currency: 'eur', metadata: { orderId: '7' } })
    const other = await stripe.createIntent({ orderId: 7, amountCents: 1999, currency: 'EUR', idempotencyKey: 'order-7-intent-2' })
    expect(other.id).not.toBe(first.id)
  })

  it('retrieves and cancels an intent; cancelling a succeeded one is no error', async () => {
    const stripe = createStripeProvider(settings())
    const intent = await stripe.createIntent({ orderId: 8, amountCents: 500, currency: 'EUR', idempotencyKey: 'order-8-intent-1' })
    await stripe.cancelIntent(intent.id)
    expect((await stripe.retrieveIntent(intent.id)).status).toBe('canceled')
    const paid = await stripe.createIntent({ orderId: 9, amountCents: 500, currency: 'EUR', idempotencyKey: 'order-9-intent-1' })
    fake.succeed(paid.id)
    await stripe.cancelIntent(paid.id)
    expect((await stripe.retrieveIntent(paid.id)).status).toBe('succeeded')
  })

  it('refunds once per key; a refusal is definite, and the same key replays it', async () => {
    const stripe = createStripeProvider(settings())
    const intent = await stripe.createIntent({ orderId: 10, amountCents: 700, currency: 'EUR', idempotencyKey: 'order-10-intent-1' })
    fake.fail('create-refund', { status: 402, type: 'card_error', message: 'refused' })
    await expect(stripe.refund({ intentId: intent.id, idempotencyKey: 'refund-order-10-1' })).rejects.toMatchObject({ definite: true })
    fake.succeed(intent.id)
    // Stripe replays the saved error for the same key.
    await expect(stripe.refund({ intentId: intent.id, idempotencyKey: 'refund-order-10-1' })).rejects.toBeInstanceOf(RefundError)
    await stripe.refund({ intentId: intent.id, idempotencyKey: 'refund-order-10-2' })
    await stripe.refund({ intentId: intent.id, idempotencyKey: 'refund-order-10-2' })
    expect(fake.refunds.filter((r) => r.payment_intent === intent.id)).toEqual([expect.objectContaining({ amount: 700, idempotencyKey: 'refund-order-10-2' })])
  })

  it('a Stripe that does not answer is given up after the timeout and one retry: not definite', async () => {
    const stripe = createStripeProvider(settings(), 200)
    const intent = await stripe.createIntent({ orderId: 11, amountCents: 700, currency: 'EUR', idempotencyKey: 'order-11-intent-1' })
    fake.succeed(intent.id)
    fake.fail('create-refund', 'hang', 2)
    const started = Date.now()
    const error = await stripe.refund({ intentId: intent.id, idempotencyKey: 'refund-order-11-1' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RefundError)
    expect((error as RefundError).definite).toBe(false)
    // Two attempts of 200 ms and the SDK's back-off (at most 2 s).
    expect(Date.now() - started).toBeLessThan(3000)
    const refundCalls = fake.calls.filter((c) => c.route === 'create-refund' && c.idempotencyKey === 'refund-order-11-1')
    expect(refundCalls).toHaveLength(2)
    fake.heal()
    await stripe.refund({ intentId: intent.id, idempotencyKey: 'refund-order-11-1' })
    expect(fake.refunds.filter((r) => r.payment_intent === intent.id)).toHaveLength(1)
  })
})
