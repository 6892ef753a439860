import type { Worker } from 'node:worker_threads'
import { type CompiledQuery, type DatabaseConnection, type Dialect, type Driver, Kysely, type QueryResult, SqliteAdapter, SqliteIntrospector } from 'kysely'
import { DatabaseUnavailableError } from './availability.js'
import { SqliteStatementCompiler } from './sqlite-compiler.js'
import type { Database } from './database.js'
import { startWorker } from '../shared/worker-thread.js'

/**
 * Reader threads for SQLite: each its own read-only connection to the same file, in a worker thread, so a long read
 * (the catalog's facets: five queries of 2–15 ms each at 100,000 products) runs on the other cores instead of holding
 * the one connection, and the event loop, for all of them in a row. SQLite in WAL mode lets readers run beside the
 * writer, and each statement reads the last commit, as on the main connection.
 *
 * Threads start at the first query (a CLI command or a test that never asks starts none); one that dies (a crash, a
 * database it cannot open) fails its query and is started again at the next. Each query has `timeoutMs` from the moment
 * it is asked, waiting for a thread included; past it, it fails with a 503 ("the database does not answer", as a
 * PostgreSQL statement past its timeout). A thread whose query ran past it is retired: asked to end, and not used again
 * meanwhile. better-sqlite3 cannot interrupt a statement, so that thread ends only when its statement does: the bound
 * frees the request, not the core. A retired thread does not keep the process alive, nor does an idle one.
 */
export interface SqliteReadersOptions {
  /** Threads; each runs one query at a time. */
  readonly threads: number
  readonly timeoutMs: number
}

interface Job {
  readonly id: number
  readonly query: CompiledQuery
  readonly resolve: (result: QueryResult<unknown>) => void
  readonly reject: (error: unknown) => void
  readonly timer: NodeJS.Timeout
}

interface Slot {
  worker: Worker | undefined
  job: Job | undefined
  /** A thread asked to end is still running its last statement: the slot waits for it to exit. */
  retiring: boolean
}

/** A query sent to a reader thread, and its answer. */
export type ToReader = { id: number; sql: string; parameters: readonly unknown[] }
export type FromReader = { id: number; rows: unknown[] } | { id: number; error: { message: string; code?: string | undefined } }

const closedError = () => new Error('The SQLite readers are closed')

export class SqliteReaderPool {
  private readonly slots: Slot[]
  private readonly queue: Job[] = []
  private nextId = 0
  private closed = false
  /** Queries answered with rows since the pool opened (the tests see through it that a read ran on a thread). */
  answered = 0

  constructor(
    private readonly file: string,
    private readonly options: SqliteReadersOptions,
  ) {
    this.slots = Array.from({ length: options.threads }, () => ({ worker: undefined, job: undefined, retiring: false }))
  }

  /** Runs a query that returns rows on the first free thread. */
  run<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.closed) return Promise.reject(closedError())
    return new Promise<QueryResult<R>>((resolve, reject) => {
      const job: Job = {
        id: (this.nextId += 1),
        query,
        resolve: resolve as Job['resolve'],
        reject,
        timer: setTimeout(() => this.overrun(job), this.options.timeoutMs),
      }
      this.queue.push(job)
      this.dispatch()
    })
  }

  /** Ends every thread (those running a statement end with it); queries not yet answered fail. */
  async close(): Promise<void> {
    this.closed = true
    for (const job of this.queue.splice(0)) this.settle(job, closedError())
    for (const slot of this.slots) {
      if (slot.job) this.settle(slot.job, closedError())
      this.retire(slot)
    }
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.closed || this.queue.length === 0) return
      if (slot.job !== undefined || slot.retiring) continue
      this.start(slot, this.queue.shift()!)
    }
  }

  private start(slot: Slot, job: Job): void {
    let worker: Worker
    try {
      worker = slot.worker ??= this.spawn(slot)
    } catch (error) {
      this.settle(job, new DatabaseUnavailableError(error))
      return
    }
    slot.job = job
    worker.ref()
    worker.postMessage({ id: job.id, sql: job.query.sql, parameters: job.query.parameters } satisfies ToReader)
  }

  /** The query's time is up: it fails; if a thread runs it, that thread is retired. */
  private overrun(job: Job): void {
    const slot = this.slots.find((each) => each.job === job)
    const index = this.queue.indexOf(job)
    if (index >= 0) this.queue.splice(index, 1)
    this.settle(job, new DatabaseUnavailableError(new Error(`SQLite read gave no answer within ${this.options.timeoutMs} ms`)))
    if (slot) this.retire(slot)
  }

  /** Answers the job once; frees its slot. */
  private settle(job: Job, error: unknown, rows?: unknown[]): void {
    clearTimeout(job.timer)
    for (const slot of this.slots) if (slot.job === job) slot.job = undefined
    if (error === undefined) job.resolve({ rows: rows ?? [] })
    else job.reject(error)
  }

  /** Asks the slot's thread to end; the slot takes no query until the thread has exited. */
  private retire(slot: Slot): void {
    const worker = slot.worker
    if (!worker) return
    slot.retiring = true
    worker.unref()
    void worker.terminate()
  }

  private spawn(slot: Slot): Worker {
    const worker = startWorker(import.meta.url, 'sqlite-reader.worker', { file: this.file })
    worker.on('message', (answer: FromReader) => {
      const job = slot.job
      if (slot.worker !== worker || slot.retiring || job === undefined || job.id !== answer.id) return
      worker.unref()
      if ('rows' in answer) {
        this.answered += 1
        this.settle(job, undefined, answer.rows)
      } else {
        this.settle(job, Object.assign(new Error(answer.error.message), { code: answer.error.code }))
      }
      this.dispatch()
    })
    // A thread that failed or ended: its query (if any) fails, and the slot is free for a new thread.
    let gone = false
    const lost = (reason: unknown) => {
      if (gone) return
      gone = true
      if (slot.worker !== worker) return
      slot.worker = undefined
      slot.retiring = false
      if (slot.job) this.settle(slot.job, new DatabaseUnavailableError(reason))
      this.dispatch()
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`SQLite reader thread exited (code ${code})`)))
    return worker
  }
}

/**
 * A Kysely over the reader threads: queries only (no transactions, no writes), compiled as SQLite's. Rows cross from
 * the thread by structured clone: a BLOB arrives as a Uint8Array, not a Buffer. The threads close with the main
 * connection (connect.ts); Kysely closes a connection only once it has been used, which the service always does.
 */
export function readerKysely(pool: SqliteReaderPool): Kysely<Database> {
  const connection: DatabaseConnection = {
    executeQuery: <R>(query: CompiledQuery) => pool.run<R>(query),
    // eslint-disable-next-line require-yield -- the interface asks for a generator; readers do not stream
    streamQuery: async function* () {
      throw new Error('The SQLite readers do not stream')
    },
  }
  const noTransactions = async () => {
    throw new Error('The SQLite readers run no transactions: write through the main connection')
  }
  const driver: Driver = {
    init: async () => {},
    acquireConnection: async () => connection,
    beginTransaction: noTransactions,
    commitTransaction: noTransactions,
    rollbackTransaction: noTransactions,
    releaseConnection: async () => {},
    // Closed with the database (the main connection's destroy): a second close would have nothing to do.
    destroy: async () => {},
  }
  const dialect: Dialect = {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => driver,
    createQueryCompiler: () => new SqliteStatementCompiler(),
    createIntrospector: (db) => new SqliteIntrospector(db),
  }
  return new Kysely<Database>({ dialect })
}
