import type { Worker } from 'node:worker_threads'
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  Kysely,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely'
import { DatabaseUnavailableError } from './availability.js'
import type { Database } from './database.js'
import { startWorker } from '../shared/worker-thread.js'

/**
 * Reader threads for SQLite: each its own read-only connection to the same file, in a worker thread, so a long read
 * (the catalog's facets: five queries of 2–15 ms each at 100,000 products) runs on the other cores instead of holding
 * the one connection, and the event loop, for all of them in a row. SQLite in WAL mode lets readers run beside the
 * writer, and each statement reads the last commit, as on the main connection.
 *
 * Threads start at the first query (a CLI command or a test that never asks starts none); one that stops (a crash)
 * is started again at the next query. A query that has no answer within `timeoutMs` is given up with a 503 ("the
 * database does not answer", as PostgreSQL's statement timeout) and its thread ended, so a runaway read cannot hold
 * a thread for good.
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
}

interface Slot {
  worker: Worker | undefined
  job: Job | undefined
  timer: NodeJS.Timeout | undefined
}

/** A query sent to a reader thread, and its answer. */
export type ToReader = { id: number; sql: string; parameters: readonly unknown[] }
export type FromReader = { id: number; rows: unknown[] } | { id: number; error: { message: string; code?: string | undefined } }

export class SqliteReaderPool {
  private readonly slots: Slot[]
  private readonly queue: Job[] = []
  private nextId = 0
  private closed = false
  /** Queries answered with rows since the pool opened (for tests and metrics). */
  answered = 0

  constructor(
    private readonly file: string,
    private readonly options: SqliteReadersOptions,
  ) {
    this.slots = Array.from({ length: options.threads }, () => ({ worker: undefined, job: undefined, timer: undefined }))
  }

  /** Runs a query that returns rows on the first free thread. */
  run<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.closed) return Promise.reject(new Error('The SQLite readers are closed'))
    return new Promise<QueryResult<R>>((resolve, reject) => {
      this.queue.push({ id: (this.nextId += 1), query, resolve: resolve as Job['resolve'], reject })
      this.dispatch()
    })
  }

  /** Ends every thread; queries not yet answered fail. */
  async close(): Promise<void> {
    this.closed = true
    const gone = new Error('The SQLite readers are closed')
    for (const job of this.queue.splice(0)) job.reject(gone)
    await Promise.all(this.slots.map((slot) => this.stop(slot, gone)))
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.job !== undefined) continue
      const job = this.queue.shift()
      if (job === undefined) return
      this.start(slot, job)
    }
  }

  private start(slot: Slot, job: Job): void {
    const worker = (slot.worker ??= this.spawn(slot))
    slot.job = job
    worker.ref()
    slot.timer = setTimeout(() => {
      const error = new DatabaseUnavailableError(new Error(`SQLite read gave no answer within ${this.options.timeoutMs} ms`))
      void this.stop(slot, error).then(() => this.dispatch())
    }, this.options.timeoutMs)
    worker.postMessage({ id: job.id, sql: job.query.sql, parameters: job.query.parameters } satisfies ToReader)
  }

  private spawn(slot: Slot): Worker {
    const worker = startWorker(import.meta.url, 'sqlite-reader.worker', { file: this.file })
    worker.on('message', (answer: FromReader) => {
      const job = slot.job
      if (job === undefined || job.id !== answer.id) return
      this.finish(slot)
      worker.unref()
      if ('rows' in answer) {
        this.answered += 1
        job.resolve({ rows: answer.rows })
      } else job.reject(Object.assign(new Error(answer.error.message), { code: answer.error.code }))
      this.dispatch()
    })
    // A thread that failed or ended on its own: its query fails, the next query starts another.
    const lost = (reason: unknown) => {
      if (slot.worker !== worker) return
      slot.worker = undefined
      const job = slot.job
      this.finish(slot)
      job?.reject(new DatabaseUnavailableError(reason))
      if (!this.closed) this.dispatch()
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`SQLite reader thread exited (code ${code})`)))
    return worker
  }

  private finish(slot: Slot): void {
    clearTimeout(slot.timer)
    slot.timer = undefined
    slot.job = undefined
  }

  /** Ends the slot's thread, failing its query with `error`. */
  private async stop(slot: Slot, error: unknown): Promise<void> {
    const { worker, job } = slot
    slot.worker = undefined
    this.finish(slot)
    job?.reject(error)
    await worker?.terminate()
  }
}

/** A Kysely over the reader threads: queries only (no transactions, no writes), compiled as SQLite's. */
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
    destroy: () => pool.close(),
  }
  const dialect: Dialect = {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => driver,
    createQueryCompiler: () => new SqliteQueryCompiler(),
    createIntrospector: (db) => new SqliteIntrospector(db),
  }
  return new Kysely<Database>({ dialect })
}
