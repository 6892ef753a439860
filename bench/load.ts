// The load generator: one autocannon measurement in its own process, so the load never shares an
// event loop (or a CPU time slice) with the orchestrator. Started by bench/processes.ts with fork();
// receives LoadSpecs over IPC, one run at a time, and answers each with a LoadResult.
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import type { LoadResult, LoadSpec, RequestSpec } from './types.js'

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T

/** Latencies of every response, in milliseconds with sub-millisecond precision. */
class LatencyLog {
  private values = new Float64Array(1 << 16)
  private length = 0
  statuses: Record<string, number> = {}
  bytes = 0

  record(status: number, bytes: number, ms: number): void {
    if (this.length === this.values.length) {
      const grown = new Float64Array(this.values.length * 2)
      grown.set(this.values)
      this.values = grown
    }
    this.values[this.length++] = ms
    this.bytes += bytes
    this.statuses[status] = (this.statuses[status] ?? 0) + 1
  }

  get count(): number {
    return this.length
  }

  percentile(p: number): number {
    if (this.length === 0) return Number.NaN
    const sorted = this.values.slice(0, this.length).sort()
    return sorted[Math.min(this.length - 1, Math.ceil((p / 100) * this.length) - 1)] as number
  }
}

function toRequest(spec: RequestSpec): autocannon.Request {
  return {
    method: spec.method as autocannon.Request['method'],
    path: spec.path,
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(spec.body !== undefined ? { body: spec.body } : {}),
  }
}

function runInstance(options: autocannon.Options, log: LatencyLog): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(options, (error, result) => (error ? reject(error) : resolve(result)))
    instance.on('response', (_client, status, bytes, ms) => log.record(status, bytes, ms))
  })
}

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[copy[i], copy[j]] = [copy[j] as T, copy[i] as T]
  }
  return copy
}

/**
 * The requests of `spec.requests` (ids, customers, categories…) in random order: each connection
 * cycles through its own shuffled copy. The copies are encoded once, up front: a request built
 * afresh each time (autocannon's setupRequest) costs the load generator more than the baseline
 * costs the server, and the baseline would measure the generator.
 */
function randomRequests(spec: LoadSpec, log: LatencyLog): Promise<autocannon.Result[]> {
  const requests = spec.requests.map(toRequest)
  if (spec.partitioned) {
    const shares = Array.from({ length: spec.connections }, (_, k) => requests.filter((_request, i) => i % spec.connections === k))
    let nextClient = 0
    return Promise.all([
      runInstance(
        {
          url: spec.url,
          connections: spec.connections,
          ...(spec.amount ? { amount: spec.amount } : { duration: spec.durationSeconds }),
          timeout: 60,
          requests: requests.slice(0, 1),
          setupClient: (client: autocannon.Client) => client.setRequests(shares[nextClient++ % shares.length] ?? []),
        },
        log,
      ),
    ])
  }
  return Promise.all([
    runInstance(
      {
        url: spec.url,
        connections: spec.connections,
        ...(spec.amount ? { amount: spec.amount } : { duration: spec.durationSeconds }),
        timeout: 60,
        requests: requests.slice(0, 1),
        ...(requests.length > 1 ? { setupClient: (client: autocannon.Client) => client.setRequests(shuffled(requests)) } : {}),
      },
      log,
    ),
  ])
}

/**
 * Checkout: one autocannon instance per customer, each with one connection that loops
 * add-to-cart (a random product) then POST /orders, so no two connections share a cart. With a discount
 * code, `POST /cart/discount {code}` comes between the two: an order clears the cart's code; with `viewCart`,
 * `GET /cart` does.
 */
function checkoutLoops(spec: LoadSpec, log: LatencyLog, counter: { orders: number }): Promise<autocannon.Result[]> {
  const checkout = spec.checkout
  if (!checkout) throw new Error('checkout spec missing')
  return Promise.all(
    checkout.tokens.map((token, i) =>
      runInstance(
        {
          url: spec.url,
          connections: 1,
          duration: spec.durationSeconds,
          timeout: 60,
          requests: [
            {
              method: 'POST',
              path: '/cart/add',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              setupRequest: (request) => ({
                ...request,
                body: JSON.stringify({ productId: pick(checkout.productIds), quantity: 1 }),
              }),
            },
            // The plain loop of checkout-eu looks at its cart once before ordering, as the EU loop does through the
            // code's answer (POST /cart/discount answers the cart view).
            ...(checkout.viewCart === true ? [{ method: 'GET' as const, path: '/cart', headers: { authorization: `Bearer ${token}` } }] : []),
            ...(checkout.discountCode !== undefined
              ? [
                  {
                    method: 'POST' as const,
                    path: '/cart/discount',
                    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
                    body: JSON.stringify({ code: checkout.discountCode }),
                  },
                ]
              : []),
            {
              method: 'POST',
              path: '/orders',
              ...(checkout.orderBodies
                ? { headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: checkout.orderBodies[i] }
                : { headers: { authorization: `Bearer ${token}` } }),
              onResponse: (status) => {
                if (status === 201) counter.orders += 1
              },
            },
          ],
        },
        log,
      ),
    ),
  )
}

async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const log = new LatencyLog()
  const counter = { orders: 0 }
  let body: Buffer | undefined
  if (spec.bodyFile) body = readFileSync(spec.bodyFile)
  if (body && spec.requests[0]) spec.requests = [{ ...spec.requests[0], body }]

  const started = process.hrtime.bigint()
  const results = spec.checkout ? await checkoutLoops(spec, log, counter) : await randomRequests(spec, log)
  const seconds = Number(process.hrtime.bigint() - started) / 1e9

  const errors = results.reduce((sum, r) => sum + r.errors, 0)
  const timeouts = results.reduce((sum, r) => sum + r.timeouts, 0)
  const non2xx = Object.entries(log.statuses).reduce((sum, [s, n]) => (s.startsWith('2') ? sum : sum + n), 0)
  return {
    requests: log.count,
    seconds,
    rps: log.count / seconds,
    p50: log.percentile(50),
    p99: log.percentile(99),
    bytesPerResponse: log.count === 0 ? 0 : log.bytes / log.count,
    statuses: log.statuses,
    non2xx,
    errors,
    timeouts,
    ...(spec.checkout ? { orders: counter.orders, ordersPerSecond: counter.orders / seconds } : {}),
  }
}

// One run per message; the process then waits for the next one until the benchmark ends it.
process.on('message', (spec: LoadSpec) => {
  runLoad(spec).then(
    (result) => process.send?.({ ok: true, result }),
    (error: unknown) => process.send?.({ ok: false, error: String((error as Error)?.stack ?? error) }, () => process.exit(1)),
  )
})
