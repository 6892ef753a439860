import type { IncomingMessage, ServerResponse } from 'node:http'
import type SQLite from 'better-sqlite3'
import { type Kysely, sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { isPostgres } from '../../db/dialect.js'
import { prepared } from '../../db/prepared.js'

type Db = Kysely<Database>

/**
 * A signed-in customer's GET /cart answered from memory, before Fastify, when nothing it shows has changed.
 *
 * Why: the cart view is read far more often than a cart changes (every page of a shop's front end shows the cart's
 * count or total), and its answer costs two reads, the pricing and Fastify's per-request work; the bytes of the last
 * answer cost one Map lookup and one small read.
 *
 * Correctness first: an entry is used only while its cart is exactly as it was when the answer was made. Each entry
 * keeps the cart's **fingerprint**: the cart row's choices (e-mail, address, method, note, code), the address and
 * the shipping method it points to (every column the view shows or prices with), and every line's id, variant and
 * quantity. Every request reads the fingerprint again (one indexed read: the cart row by its user, its lines by
 * their cart) and answers from memory only when it is the same string; whoever changed the cart, on whichever
 * instance, through the service or not. What the fingerprint does not cover empties every entry:
 * - the catalog (names, prices, status, variants, images) and the tax rates, through the change feed's `catalog`
 *   and `taxes` topics, on every instance; while the feed cannot hear other instances, nothing is answered here;
 * - a cart with a discount code is never kept: whether a code applies depends on the time and on other customers'
 *   orders, so it is priced afresh every time.
 * The fingerprint is read **before** the view: a change made in between makes the stored fingerprint older than the
 * answer, so the next request misses; an entry can be needlessly dropped, never wrongly used. A catalog or tax
 * change while an answer is made (the generation moved) stores nothing. Entries expire as the product cache's do
 * (a write made outside the service, psql or a script, to the catalog).
 *
 * Only the bearer's cart is answered here (a token the auth caches already vouch for, without a query); guest carts,
 * requests with `X-Cart-Token` or a query string, CORS requests, and every miss go to Fastify unchanged.
 */
export class CartViewCache {
  private readonly entries = new Map<number, CartViewEntry>()
  private bytes = 0
  /** Moves on every emptying: an answer begun before it is not stored. */
  generation = 0
  /** Answers given from memory (for the tests and operators). */
  hits = 0
  /** Whether entries may be used and stored now (the change feed hears every instance); set by the app. */
  usable: () => boolean = () => false
  /** The user a bearer header belongs to, when the auth caches vouch for it without a query; set by the auth plugin. */
  bearerUser: (header: string) => number | undefined = () => undefined

  private readonly readSync: ((userId: number) => string | undefined) | undefined
  private readonly lifetimeMs: number

  constructor(
    private readonly db: Db,
    options: { sqlite?: SQLite.Database | undefined; maxBytes?: number; lifetimeMs?: number } = {},
  ) {
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES
    const postgres = isPostgres(db)
    this.lifetimeMs = options.lifetimeMs ?? (postgres ? 5_000 : 60_000)
    const sqlite = options.sqlite
    if (sqlite) {
      // The same statement Kysely compiles for the answer's own read, run synchronously on the connection: a
      // front-door check that costs a few microseconds. Outside Kysely's queue it may see another request's
      // transaction in progress: a fingerprint read that way can only differ from a stored one (a miss).
      // Rows as arrays (no object per row): the values in the columns' order, as Object.values gives them below.
      const statement = sqlite.prepare(fingerprintQuery(db, 0).compile().sql).raw(true)
      this.readSync = (userId) => {
        const values = statement.get(userId) as unknown[] | undefined
        return values === undefined ? undefined : fingerprintOf(values)
      }
    }
  }

  private readonly maxBytes: number

  /** The cart's fingerprint now, or undefined when the user has no cart row or the cart has a code (never kept). */
  async fingerprint(userId: number): Promise<string | undefined> {
    const row = (await fingerprintStatement(this.db, { userId })).rows[0] as Record<string, unknown> | undefined
    return row === undefined ? undefined : fingerprintOf(Object.values(row))
  }

  /**
   * Before an answer is made: what it will be stored under, or undefined when it will not be stored. The
   * fingerprint is read first, so the answer is at least as new as it.
   */
  async begin(userId: number): Promise<CartViewTicket | undefined> {
    if (!this.usable()) return undefined
    const generation = this.generation
    const fingerprint = await this.fingerprint(userId)
    return fingerprint === undefined ? undefined : { userId, fingerprint, generation }
  }

  /** After the answer is serialized: kept, unless the catalog or the taxes changed meanwhile. */
  store(ticket: CartViewTicket, payload: string, headers: string[], now = Date.now()): void {
    if (ticket.generation !== this.generation || !this.usable()) return
    const body = Buffer.from(payload)
    headers = [...headers, 'content-length', String(body.length)]
    const size = body.length + ticket.fingerprint.length * 2 + headers.reduce((sum, h) => sum + h.length * 2, 0) + ENTRY_OVERHEAD
    if (size > this.maxBytes / 16) return
    this.delete(ticket.userId)
    while (this.bytes + size > this.maxBytes && this.entries.size > 0) this.delete(this.entries.keys().next().value as number)
    this.entries.set(ticket.userId, { fingerprint: ticket.fingerprint, body, headers, size, expiresAt: now + this.lifetimeMs * (0.5 + Math.random() / 2) })
    this.bytes += size
  }

  /** Every entry goes (a catalog or tax change). */
  clear(): void {
    this.generation += 1
    this.entries.clear()
    this.bytes = 0
  }

  get size(): number {
    return this.entries.size
  }

  private delete(userId: number): void {
    const entry = this.entries.get(userId)
    if (entry === undefined) return
    this.entries.delete(userId)
    this.bytes -= entry.size
  }

  /**
   * The front door's part: answers `GET /cart` from memory when it can (true, or a promise of true on PostgreSQL,
   * whose read is a round trip); false when the request must go to Fastify. Never throws: a failed read is a miss.
   */
  answer(request: IncomingMessage, response: ServerResponse, requestId: () => string): boolean | Promise<boolean> {
    const header = request.headers.authorization
    if (header === undefined || request.headers['x-cart-token'] !== undefined || !this.usable()) return false
    const userId = this.bearerUser(header)
    if (userId === undefined) return false
    const entry = this.entries.get(userId)
    if (entry === undefined) return false
    if (entry.expiresAt <= Date.now()) {
      this.delete(userId)
      return false
    }
    const respond = (fingerprint: string | undefined): boolean => {
      // Emptied, replaced or changed while the fingerprint was read: Fastify answers.
      if (fingerprint !== entry.fingerprint || this.entries.get(userId) !== entry) {
        if (this.entries.get(userId) === entry) this.delete(userId)
        return false
      }
      this.hits += 1
      const headers = entry.headers.slice()
      headers.push('x-request-id', requestId())
      response.writeHead(200, headers)
      response.end(entry.body)
      return true
    }
    if (this.readSync !== undefined) {
      try {
        return respond(this.readSync(userId))
      } catch {
        return false
      }
    }
    return this.fingerprint(userId).then(respond, () => false)
  }
}

export interface CartViewTicket {
  userId: number
  fingerprint: string
  generation: number
}

interface CartViewEntry {
  fingerprint: string
  body: Buffer
  /** Header names and values, as writeHead takes them (content type and length; the request id is added per answer). */
  headers: string[]
  size: number
  expiresAt: number
}

/** 16 MiB: some 8,000 carts of five lines. */
const DEFAULT_MAX_BYTES = 16 * 1024 * 1024
/** The entry object, its Map slot and the Buffer's own bookkeeping (rounded up). */
const ENTRY_OVERHEAD = 256

/** A row of the fingerprint query (its values, in column order) as one string; a cart with a code has none (never kept). */
function fingerprintOf(values: readonly unknown[]): string | undefined {
  return values[DISCOUNT_CODE_COLUMN] === null ? JSON.stringify(values) : undefined
}

/** Where `c.discount_code` is among the fingerprint query's columns (the second). */
const DISCOUNT_CODE_COLUMN = 1

/**
 * Everything of a user's cart the view shows or prices with, beyond the catalog and the taxes: the cart row's
 * choices, the address it points to (only the user's own: the view shows no other), the method, and the lines.
 *
 * Written for the front door's cost, which is most of a hit's (`npm run bench`'s cart-view on SQLite, full runs on
 * 2026-11-29: 0.28–0.29× of the bare server with two LEFT JOINs and the lines sorted, 0.37–0.40× with this form;
 * docs/performance.md): the address and the method are correlated subqueries, one JSON array each, so a cart pointing
 * to neither opens no cursor on their tables (two LEFT JOINs did, and returned 13 columns more); the lines are
 * concatenated in the index's order, not sorted. The order does not matter: each line is its own `id:variant:quantity`
 * and ids are unique, so two carts give the same string only with the same lines, in the same order or not; a
 * different order can only make a miss.
 */
function fingerprintQuery(db: Db, userId: number) {
  const postgres = isPostgres(db)
  const line = sql`i.id || ':' || i.variant_id || ':' || i.quantity`
  const lines = postgres ? sql<string>`string_agg(${line}, ',')` : sql<string>`group_concat(${line}, ',')`
  const array = postgres ? sql.raw('json_build_array') : sql.raw('json_array')
  return db
    .selectFrom('carts as c')
    .select([
      'c.id',
      'c.discount_code',
      'c.email',
      'c.shipping_address_id',
      'c.shipping_address',
      'c.shipping_method_id',
      'c.note',
      sql<unknown>`(select ${array}(a.full_name, a.line1, a.line2, a.city, a.region, a.postal_code, a.country, a.phone) from addresses a where a.id = c.shipping_address_id and a.user_id = c.user_id)`.as(
        'address',
      ),
      sql<unknown>`(select ${array}(m.name, m.price_cents, m.free_over_cents, m.tax_class, m.active) from shipping_methods m where m.id = c.shipping_method_id)`.as(
        'method',
      ),
      sql<string | null>`(select ${lines} from cart_items i where i.cart_id = c.id)`.as('lines'),
    ])
    .where('c.user_id', '=', userId)
}

/** Compiled once per dialect; on PostgreSQL a named statement, planned once per connection (every hit runs it). */
const fingerprintStatement = prepared((db, v: { userId: number }) => fingerprintQuery(db, v.userId))
