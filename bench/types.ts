// Shapes shared by the orchestrator (bench/run.ts) and its child processes.

export type DbKind = 'sqlite' | 'postgres'

/** One HTTP request the load generator may send. */
export interface RequestSpec {
  method: string
  path: string
  headers?: Record<string, string>
  body?: string | Buffer
}

/** What one load-generator process should do. */
export interface LoadSpec {
  /** Origin of the server under load, e.g. http://127.0.0.1:4100 */
  url: string
  connections: number
  durationSeconds?: number
  /** Stop after this many responses instead of after a duration. */
  amount?: number
  /** Each request picks one of these at random. */
  requests: RequestSpec[]
  /**
   * Each connection sends its own share of `requests` (request i goes to connection i mod connections), in
   * order, instead of a shuffled copy of all of them: with `amount` equal to their number, each is sent once
   * (the webhook's events, each delivered once).
   */
  partitioned?: boolean
  /** A file whose bytes become the body of the (single) request: the 5 MB upload. */
  bodyFile?: string
  /**
   * Checkout loops: one connection per token, add-to-cart then POST /orders. `orderBodies[i]`, when given, is the
   * JSON body of token i's POST /orders (checkout-shipping, checkout-eu); with `discountCode`, each loop applies it
   * to the cart (`POST /cart/discount`) between the two (checkout-eu); with `viewCart`, the loop reads `GET /cart` there
   * instead (checkout-eu's plain loop).
   */
  checkout?: { tokens: string[]; productIds: number[]; orderBodies?: string[]; discountCode?: string; viewCart?: boolean }
}

export interface LoadResult {
  requests: number
  seconds: number
  rps: number
  /** Milliseconds. */
  p50: number
  p99: number
  bytesPerResponse: number
  statuses: Record<string, number>
  non2xx: number
  errors: number
  timeouts: number
  orders?: number
  ordersPerSecond?: number
}

/** One measured window of one server (service, baseline or the direct driver). */
export interface Sample extends LoadResult {
  /** Peak resident memory of the measured server process in this window, MiB. */
  peakRssMiB: number
}

/** The direct (no HTTP) checkout driver's answer. */
export interface DirectCheckoutResult {
  orders: number
  seconds: number
  ordersPerSecond: number
  failures: number
}
