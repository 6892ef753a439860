import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import Stripe from 'stripe'

/**
 * A stand-in for the Stripe API on 127.0.0.1, for the real `stripe` SDK (through STRIPE_API_URL): the few
 * endpoints the shop calls (create, retrieve and cancel a PaymentIntent; create a refund), with Stripe's
 * `Idempotency-Key` rule (the same key replays the first answer, errors included, as Stripe does for 24 h).
 * Knobs let a test make the next calls fail or hang. It stands in for the network, not for our code.
 */

export interface FakeIntent {
  id: string
  object: 'payment_intent'
  amount: number
  amount_received: number
  currency: string
  status: 'requires_payment_method' | 'processing' | 'succeeded' | 'canceled'
  client_secret: string
  metadata: Record<string, string>
  created: number
  livemode: false
}

export interface FakeRefund {
  id: string
  object: 'refund'
  amount: number
  currency: string
  payment_intent: string
  status: 'succeeded'
  idempotencyKey: string | undefined
}

type Route = 'create-intent' | 'retrieve-intent' | 'cancel-intent' | 'create-refund'

interface Failure {
  route: Route | '*'
  /** An HTTP error answer, or 'hang' (no answer at all: the SDK's timeout ends it). */
  kind: { status: number; type: string; message: string } | 'hang'
  times: number
}

export interface StripeFake {
  url: string
  intents: Map<string, FakeIntent>
  refunds: FakeRefund[]
  /** Every request, in order: route, and the idempotency key it carried. */
  calls: Array<{ route: Route | 'unknown'; idempotencyKey: string | undefined }>
  /** The next `times` calls of `route` answer this error (or hang). */
  fail(route: Route | '*', kind: Failure['kind'], times?: number): void
  /** Stops every injected failure. */
  heal(): void
  /** The customer pays: the intent becomes `succeeded` (with `amountReceived`, the intent's amount by default). */
  succeed(intentId: string, amountReceived?: number): FakeIntent
  setStatus(intentId: string, status: FakeIntent['status']): FakeIntent
  close(): Promise<void>
}

const WEBHOOK_TEST_SECRET = 'whsec_test_fake_secret'

/** Starts the fake on a free port of 127.0.0.1. */
export async function startStripeFake(): Promise<StripeFake> {
  const intents = new Map<string, FakeIntent>()
  const refunds: FakeRefund[] = []
  const calls: StripeFake['calls'] = []
  const replays = new Map<string, { status: number; body: unknown }>()
  let failures: Failure[] = []
  const hanging = new Set<ServerResponse>()

  const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`
  const error = (status: number, type: string, message: string) => ({ status, body: { error: { type, message } } })

  function handle(route: Route | 'unknown', params: URLSearchParams, path: string): { status: number; body: unknown } {
    if (route === 'create-intent') {
      const amount = Number(params.get('amount'))
      const currency = params.get('currency') ?? ''
      if (!Number.isInteger(amount) || amount < 1 || currency === '') return error(400, 'invalid_request_error', 'Missing amount or currency')
      const metadata: Record<string, string> = {}
      for (const [key, value] of params) {
        const m = /^metadata\[(.+)\]$/.exec(key)
        if (m) metadata[m[1]!] = value
      }
      const intentId = id('pi')
      const intent: FakeIntent = {
        id: intentId,
        object: 'payment_intent',
        amount,
        amount_received: 0,
        currency,
        status: 'requires_payment_method',
        client_secret: `${intentId}_secret_${randomBytes(8).toString('hex')}`,
        metadata,
        created: Math.floor(Date.now() / 1000),
        livemode: false,
      }
      intents.set(intentId, intent)
      return { status: 200, body: intent }
    }
    const intentMatch = /^\/v1\/payment_intents\/([^/]+)(\/cancel)?$/.exec(path)
    if (route === 'retrieve-intent' || route === 'cancel-intent') {
      const intent = intentMatch ? intents.get(intentMatch[1]!) : undefined
      if (!intent) return error(404, 'invalid_request_error', 'No such payment_intent')
      if (route === 'cancel-intent') {
        if (intent.status === 'succeeded' || intent.status === 'canceled') {
          return error(400, 'invalid_request_error', `You cannot cancel this PaymentIntent because it has a status of ${intent.status}.`)
        }
        intent.status = 'canceled'
      }
      return { status: 200, body: intent }
    }
    if (route === 'create-refund') {
      const intent = intents.get(params.get('payment_intent') ?? '')
      if (!intent) return error(404, 'invalid_request_error', 'No such payment_intent')
      if (intent.status !== 'succeeded') return error(400, 'invalid_request_error', 'This PaymentIntent has no successful charge to refund.')
      const already = refunds.filter((r) => r.payment_intent === intent.id).reduce((sum, r) => sum + r.amount, 0)
      const amount = params.has('amount') ? Number(params.get('amount')) : intent.amount_received - already
      if (amount <= 0 || already + amount > intent.amount_received) return error(400, 'invalid_request_error', 'Charge has already been refunded.')
      const refund: FakeRefund = {
        id: id('re'),
        object: 'refund',
        amount,
        currency: intent.currency,
        payment_intent: intent.id,
        status: 'succeeded',
        idempotencyKey: undefined,
      }
      refunds.push(refund)
      return { status: 200, body: refund }
    }
    return error(404, 'invalid_request_error', `Unrecognized request URL (${path})`)
  }

  function routeOf(method: string, path: string): Route | 'unknown' {
    if (method === 'POST' && path === '/v1/payment_intents') return 'create-intent'
    if (method === 'GET' && /^\/v1\/payment_intents\/[^/]+$/.test(path)) return 'retrieve-intent'
    if (method === 'POST' && /^\/v1\/payment_intents\/[^/]+\/cancel$/.test(path)) return 'cancel-intent'
    if (method === 'POST' && path === '/v1/refunds') return 'create-refund'
    return 'unknown'
  }

  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://fake')
      const route = routeOf(request.method ?? 'GET', url.pathname)
      const key = request.headers['idempotency-key'] as string | undefined
      calls.push({ route, idempotencyKey: key })
      const send = (answer: { status: number; body: unknown }) => {
        response.writeHead(answer.status, { 'content-type': 'application/json', 'request-id': id('req') })
        response.end(JSON.stringify(answer.body))
      }
      if (request.headers.authorization !== undefined && !/^Bearer sk_test_/.test(request.headers.authorization)) {
        send(error(401, 'invalid_request_error', 'Invalid API Key provided'))
        return
      }
      const failure = failures.find((f) => f.times > 0 && (f.route === '*' || f.route === route))
      if (failure) {
        failure.times -= 1
        if (failure.kind === 'hang') {
          hanging.add(response)
          return
        }
        const answer = error(failure.kind.status, failure.kind.type, failure.kind.message)
        // Stripe saves an error answer under its key too (a 4xx), and replays it for 24 hours.
        if (key !== undefined && request.method === 'POST' && failure.kind.status < 500) replays.set(`${route}:${key}`, answer)
        send(answer)
        return
      }
      if (key !== undefined && request.method === 'POST') {
        const replay = replays.get(`${route}:${key}`)
        if (replay) {
          response.setHeader('idempotent-replayed', 'true')
          send(replay)
          return
        }
      }
      const params = new URLSearchParams(route === 'retrieve-intent' ? url.search : Buffer.concat(chunks).toString('utf8'))
      const answer = handle(route, params, url.pathname)
      if (route === 'create-refund' && answer.status === 200) (answer.body as FakeRefund).idempotencyKey = key
      if (key !== undefined && request.method === 'POST' && answer.status < 500)
        replays.set(`${route}:${key}`, { status: answer.status, body: structuredClone(answer.body) })
      send(answer)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  const intentOf = (intentId: string) => {
    const intent = intents.get(intentId)
    if (!intent) throw new Error(`fake: no intent ${intentId}`)
    return intent
  }

  return {
    url: `http://127.0.0.1:${port}`,
    intents,
    refunds,
    calls,
    fail(route, kind, times = 1) {
      failures.push({ route, kind, times })
    },
    heal() {
      failures = []
      for (const response of hanging) response.destroy()
      hanging.clear()
    },
    succeed(intentId, amountReceived) {
      const intent = intentOf(intentId)
      intent.status = 'succeeded'
      intent.amount_received = amountReceived ?? intent.amount
      return structuredClone(intent)
    },
    setStatus(intentId, status) {
      const intent = intentOf(intentId)
      intent.status = status
      return structuredClone(intent)
    },
    async close() {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** The webhook signing secret the tests configure (STRIPE_WEBHOOK_SECRET). */
export const webhookSecret = WEBHOOK_TEST_SECRET

let eventSequence = 0

/** A Stripe event about an intent, as Stripe would post it. */
export function intentEvent(type: string, intent: object, eventId?: string) {
  eventSequence += 1
  return {
    id: eventId ?? `evt_${process.pid}_${eventSequence}_${randomBytes(4).toString('hex')}`,
    object: 'event',
    type,
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    api_version: '2026-10-28.endive',
    data: { object: intent },
  }
}

/** Signs a payload with the SDK's own test helper, as Stripe signs a delivery (`timestamp` in seconds). */
export function signedHeaders(payload: string, options: { secret?: string; timestamp?: number } = {}) {
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? WEBHOOK_TEST_SECRET,
    ...(options.timestamp !== undefined ? { timestamp: options.timestamp } : {}),
  })
  return { 'content-type': 'application/json', 'stripe-signature': signature }
}
