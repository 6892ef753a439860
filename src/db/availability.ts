import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely'
import type pg from 'pg'
import { isStalePlan } from '../shared/db-errors.js'
import { AppError } from '../shared/errors.js'
import { preparedStatementNames } from './prepared.js'

/**
 * The database could not be reached, or did not answer in time. A 503 with the documented body
 * (`{"error": "La base de datos no responde"}`): the request may be retried, unlike a 500.
 */
export class DatabaseUnavailableError extends AppError {
  constructor(cause?: unknown) {
    super(503, 'notReady', { cause })
    this.name = 'DatabaseUnavailableError'
  }
}

// Errors of the socket itself, not of a statement.
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])
// admin_shutdown (a restart, pg_terminate_backend), crash_shutdown, cannot_connect_now (starting or stopping).
const SERVER_GONE = new Set(['57P01', '57P02', '57P03'])
// What pg and pg-pool say when a connection was lost, could not be made in time, or went silent.
const CONNECTION_MESSAGES = /Connection terminated|timeout expired|timeout exceeded when trying to connect|Query read timeout|not queryable/

/** A connection was lost or could not be made: the database may be down (worth checking). */
export function isConnectionFailure(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || SERVER_GONE.has(code) || code.startsWith('08'))) return true
  return typeof message === 'string' && CONNECTION_MESSAGES.test(message)
}

/** Any failure that means "the database did not answer", as opposed to a problem with the statement. */
function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  // query_canceled (statement_timeout) and too_many_connections.
  return code === '57014' || code === '53300' || isConnectionFailure(error)
}

type Listener<T extends unknown[]> = (...args: T) => void

/**
 * Whether the database can be reached, as a circuit breaker: while it is `available`, every query
 * goes to it; a lost connection makes it check at once, on a connection of its own, and only if
 * that check fails too is the database lost. Then queries fail at once (no connection attempt, no
 * wait) and the check runs every `recheckMs` until it passes. So a restart or a silent server is
 * noticed once, answered fast, and left behind within `recheckMs` of its return; one terminated
 * connection is not an outage.
 */
export class DatabaseStatus {
  available = true
  /** Why the database was lost (for the log and the start-up line). */
  lastError: unknown
  private checking = false
  private closed = false
  private timer: NodeJS.Timeout | undefined
  private lostListeners: Listener<[unknown]>[] = []
  private backListeners: Listener<[]>[] = []

  constructor(
    private readonly probe: () => Promise<void>,
    private readonly recheckMs = 500,
  ) {}

  onLost(listener: (error: unknown) => void): void {
    this.lostListeners.push(listener)
  }

  onBack(listener: () => void): void {
    this.backListeners.push(listener)
  }

  /** A connection failed: check whether the database is still there. */
  suspect(error: unknown): void {
    if (this.closed || this.checking || !this.available) return
    this.checking = true
    this.probe().then(
      () => {
        this.checking = false
      },
      (probeError: unknown) => {
        this.checking = false
        if (this.closed || !this.available) return
        this.available = false
        this.lastError = probeError ?? error
        for (const listener of this.lostListeners) listener(this.lastError)
        this.scheduleRecheck()
      },
    )
  }

  close(): void {
    this.closed = true
    clearTimeout(this.timer)
  }

  private scheduleRecheck(): void {
    if (this.closed) return
    this.timer = setTimeout(() => {
      this.probe().then(
        () => {
          if (this.closed) return
          this.available = true
          for (const listener of this.backListeners) listener()
        },
        (error: unknown) => {
          this.lastError = error
          this.scheduleRecheck()
        },
      )
    }, this.recheckMs)
    this.timer.unref()
  }
}

/** SQLite is a file in the process: it is never "away". */
export function alwaysAvailable(): DatabaseStatus {
  return new DatabaseStatus(async () => {})
}

/**
 * The pool Kysely gets: refuses at once while the database is lost, turns "the database did not
 * answer" into a 503 (DatabaseUnavailableError), and throws away a connection that failed instead
 * of handing it to the next request.
 */
export function guardPool(pool: pg.Pool, status: DatabaseStatus, options: { named?: boolean } = {}): PostgresPool {
  const named = options.named ?? true
  const translate = (error: unknown): unknown => {
    if (isConnectionFailure(error)) status.suspect(error)
    return isUnavailable(error) ? new DatabaseUnavailableError(error) : error
  }
  return {
    async connect(): Promise<PostgresPoolClient> {
      if (!status.available) throw new DatabaseUnavailableError(status.lastError)
      let client: pg.PoolClient
      try {
        client = await pool.connect()
      } catch (error) {
        throw translate(error)
      }
      let broken = false
      let inTransaction = false
      const run = async (text: string, values: readonly unknown[], name: string | undefined): Promise<PostgresQueryResult<unknown>> => {
        try {
          const result = await (name === undefined ? client.query(text, values as unknown[]) : client.query({ name, text, values: values as unknown[] }))
          inTransaction = TRANSACTION_START.test(text) || (inTransaction && !TRANSACTION_END.test(text))
          return result as PostgresQueryResult<unknown>
        } catch (error) {
          if (isConnectionFailure(error)) broken = true
          if (name !== undefined && isStalePlan(error)) {
            // A table the statement returns every column of changed under it (another instance's migration, in a
            // rolling deploy): this connection's prepared copy cannot be used again, so the connection goes with it.
            // Outside a transaction the statement runs once more, unnamed; inside, the transaction has failed (the
            // caller's retry, if any, runs on another connection).
            broken = true
            if (!inTransaction) return run(text, values, undefined)
          }
          throw translate(error)
        }
      }
      const guarded = {
        query: (text: string, values: readonly unknown[]) => run(text, values, named ? preparedStatementNames.get(text) : undefined),
        release: () => client.release(broken || undefined),
      }
      // Kysely streams through query(cursor) only when given a cursor class; it is not.
      return guarded as PostgresPoolClient
    },
    end: () => pool.end(),
  }
}

// What Kysely sends to open and close a transaction (`begin`, `start transaction …`; `commit`, `rollback`).
const TRANSACTION_START = /^\s*(begin|start transaction)\b/i
const TRANSACTION_END = /^\s*(commit|rollback|end)\s*;?\s*$/i
